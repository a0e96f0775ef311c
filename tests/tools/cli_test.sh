#!/usr/bin/env bash
# The memhal command as a user runs it: memhal info, its --json form, and usage errors.
set -u
memhal=$1
failures=0
check() { # description, condition...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}

table=$("$memhal" info)
check "info exits 0" test $? -eq 0
for kind in mem shm dmabuf iosurface pbo cuda; do
  check "info lists $kind" grep -qE "^  $kind +[0-9]+ +(yes|no) " <<<"$table"
done
check "mem is available" grep -qE "^  mem +0 +yes " <<<"$table"

json=$("$memhal" info --json)
check "info --json exits 0" test $? -eq 0
check "info --json is the documented object" /usr/bin/python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
kinds = doc["memory_kinds"]
assert [k["name"] for k in kinds] == ["mem", "shm", "dmabuf", "iosurface", "pbo", "cuda"], kinds
assert [k["code"] for k in kinds] == [0, 1, 2, 3, 4, 5], kinds
assert all(isinstance(k["available"], bool) and isinstance(k["reason"], str) and k["reason"] for k in kinds)
assert kinds[0]["available"] is True
backends = doc["image_backends"]
assert [b["name"] for b in backends] == ["cpu", "gl"], backends
gl = backends[1]
assert isinstance(gl["available"], bool)
if gl["available"]:
    assert gl["renderer"] and gl["version"].startswith("OpenGL ES 3"), gl
    assert isinstance(gl["extensions"], list) and isinstance(gl["dma_buf_import"], bool), gl
    # Probed for real: works, or says why not.
    for what in ("dma_buf_import", "dma_buf_render"):
        assert isinstance(gl[what], bool) and gl[what] == (gl[what + "_why"] == ""), gl
else:
    assert gl["reason"], gl
' "$json"

# With the EGL vendor hidden there is no GL driver, and info says why instead of failing.
nogl=$(__EGL_VENDOR_LIBRARY_FILENAMES=/nonexistent/memhal-no-egl-vendor.json "$memhal" info)
check "info without a GL driver exits 0" test $? -eq 0
check "info without a GL driver says why" grep -qE "^  gl +no +[A-Za-z]" <<<"$nogl"

MEMHAL_FORCE_MEM=1 "$memhal" info | grep -q "MEMHAL_FORCE_MEM: set"
check "info reports MEMHAL_FORCE_MEM" test $? -eq 0

"$memhal" info --bogus >/dev/null 2>/tmp/memhal_cli_err.$$
check "unknown flag exits 2" test $? -eq 2
check "unknown flag prints usage" grep -q "usage: memhal info" /tmp/memhal_cli_err.$$
rm -f /tmp/memhal_cli_err.$$
"$memhal" frobnicate >/dev/null 2>&1
check "unknown command exits 2" test $? -eq 2
"$memhal" >/dev/null 2>&1
check "no command exits 2" test $? -eq 2
for command in info demo inspect convert; do
  "$memhal" help $command 2>&1 | grep -q "^usage: memhal $command"
  check "memhal help $command prints $command's usage" test $? -eq 0
done
"$memhal" help frobnicate >/dev/null 2>&1
check "help for an unknown command exits 2" test $? -eq 2
"$memhal" info --json=yes >/dev/null 2>&1
check "a value given to a flag exits 2" test $? -eq 2

echo "cli: $failures failed"
exit $((failures > 0))
