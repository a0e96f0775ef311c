#!/usr/bin/env bash
# memhal demo (the main job) and memhal inspect, as a user runs them.
set -u
memhal=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}

"$memhal" demo --frames 30 --fps 60 --size 320x240 --record "$work/demo.mhrec" >"$work/out" 2>"$work/err"
check "demo exits 0" test $? -eq 0
summary=$(tail -1 "$work/out")
echo "$summary"
check "summary line has the documented form" grep -qE \
  '^summary: frames=30 bytes_shared=[0-9]+ bytes_copied=0 p50_latency_us=[0-9]+ p99_latency_us=[0-9]+ checksum_errors=0$' \
  <<<"$summary"

"$memhal" inspect "$work/demo.mhrec" >"$work/inspect"
check "inspect exits 0" test $? -eq 0
check "inspect lists 30 records" grep -q "^30 records$" "$work/inspect"
check "inspect names backing, dtype, shape and format" grep -qE '^0 +[0-9.]+ +(shm|dmabuf) +u8 +\[240,320\] +nv12 +115200$' \
  "$work/inspect"

size=$(stat -c %s "$work/demo.mhrec")
head -c $((size - 1000)) "$work/demo.mhrec" >"$work/cut.mhrec"
"$memhal" inspect "$work/cut.mhrec" >"$work/cut" 2>&1
check "inspect of a truncated recording exits 1" test $? -eq 1
check "and still lists the intact records" grep -q "^29 intact records before the damage$" "$work/cut"

"$memhal" demo --memory mem --frames 2 >/dev/null 2>"$work/mem_err"
check "demo over heap memory is refused" test $? -ne 0
check "with advice to allocate shm" grep -q "allocate it as shm" "$work/mem_err"
"$memhal" demo --frames >/dev/null 2>&1
check "bad demo arguments exit 2" test $? -eq 2
"$memhal" inspect >/dev/null 2>&1
check "inspect without a file exits 2" test $? -eq 2

echo "demo: $failures failed"
exit $((failures > 0))
