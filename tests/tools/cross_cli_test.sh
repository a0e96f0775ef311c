#!/usr/bin/env bash
# A cross-built memhal command (run through binfmt and qemu-user) against this machine's own
# build: the same `memhal info` tables, the README's `memhal convert` examples giving the same
# images (byte-equal for 8-bit outputs, float outputs within the reference tolerance of
# 1/255/std), and `memhal demo --frames 30` the same summary counts and recording.
# Usage: cross_cli_test.sh TARGET_MEMHAL HOST_MEMHAL CARD.png
set -u
target=$1 host=$2 card=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() { # description, condition...
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAIL: $what"
    failures=$((failures + 1))
    return 1
  fi
}
run_both() { # name, memhal arguments... (each side in its own directory, $work/{target,host})
  local name=$1
  shift
  for side in target host; do
    local memhal=$target
    [ $side = host ] && memhal=$host
    mkdir -p "$work/$side"
    (cd "$work/$side" && "$memhal" "$@") >"$work/$side/$name.out" 2>"$work/$side/$name.err"
    check "$side: memhal $* exits 0" test $? -eq 0 || cat "$work/$side/$name.err"
  done
}

# memhal info: the memory kinds, the dma-buf sources and the cpu backend's line are the same;
# GL is there on both or on neither (its renderer names the host's vector width).
run_both info info
section() { sed -n "/^$1/,/^\$/p" "$2"; }
for part in "memory kinds" "dma-buf sources" "image backends"; do
  section "$part" "$work/target/info.out" | grep -v '^       \|^  gl ' >"$work/target/$part"
  section "$part" "$work/host/info.out" | grep -v '^       \|^  gl ' >"$work/host/$part"
  check "info: '$part' the same" cmp -s "$work/target/$part" "$work/host/$part" ||
    diff "$work/target/$part" "$work/host/$part"
done
gl_target=$(grep -oE '^  gl +(yes|no)' "$work/target/info.out")
gl_host=$(grep -oE '^  gl +(yes|no)' "$work/host/info.out")
check "info: gl available on both or neither ('$gl_target' / '$gl_host')" test "$gl_target" = "$gl_host"

# The README's convert examples (README.md, Preprocessing), on its 320x240 test card.
cp "$card" "$work/target/card.png"
cp "$card" "$work/host/card.png"
run_both nv12 convert card.png card.nv12 --to nv12
run_both boxed convert card.nv12 boxed.png --size 320x240 --format nv12 --out-size 256x256 --letterbox \
  --rotate 90 --pad 30,30,30
run_both npy convert card.nv12 input.npy --size 320x240 --format nv12 --to planar_rgb --dtype f32 \
  --out-size 640x640 --letterbox --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225
run_both back convert card.nv12 back.rgb --size 320x240 --format nv12
same_bytes() { # file: byte-equal on both sides, or how many bytes differ and by how much
  cmp -s "$work/target/$1" "$work/host/$1" && return 0
  /usr/bin/python3 -c '
import sys
a, b = (open(f, "rb").read() for f in sys.argv[1:])
d = [abs(x - y) for x, y in zip(a, b) if x != y]
print(f"{sys.argv[1]}: {len(a)} vs {len(b)} bytes, {len(d)} differ, by at most {max(d, default=0)}")
' "$work/target/$1" "$work/host/$1"
  return 1
}
check "convert: the NV12 frame is byte-equal" same_bytes card.nv12
check "convert: the letterboxed, rotated PNG is byte-equal" same_bytes boxed.png
check "convert: NV12 back to RGB is byte-equal" same_bytes back.rgb
check "convert: the f32 model input agrees within 1/255/std" /usr/bin/python3 - "$work/target/input.npy" \
  "$work/host/input.npy" <<'PY'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == b.shape == (3, 640, 640) and a.dtype == b.dtype == np.float32, (a.shape, b.shape)
tolerance = (1 / 255 / np.array([0.229, 0.224, 0.225], dtype=np.float64)).reshape(3, 1, 1)
diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
print(f"npy: {np.count_nonzero(diff)} of {diff.size} values differ, at most {diff.max():.3g}"
      f" (tolerance {tolerance.min():.3g} to {tolerance.max():.3g})")
sys.exit(0 if (diff <= tolerance + 1e-6).all() else 1)
PY

# memhal demo: the same counts (timings aside) and the same recorded frames.
run_both demo demo --frames 30 --size 320x240 --record demo.mhrec
counts() { tail -1 "$1" | sed -E 's/ (p50_latency_us|p99_latency_us|preprocess_p50_us)=[0-9]+//g'; }
echo "target: $(tail -1 "$work/target/demo.out")"
echo "host:   $(tail -1 "$work/host/demo.out")"
check "demo: the summary counts are the same" test "$(counts "$work/target/demo.out")" = "$(counts "$work/host/demo.out")"
check "demo: nothing copied, lost, dropped or corrupted" grep -qE \
  '^summary: frames=30 .*bytes_copied=0 .*checksum_errors=0 lost_frames=0 .*dropped_frames=0$' "$work/target/demo.out"
run_both inspect inspect demo.mhrec
records() { awk '{ $2 = ""; print }' "$1"; }  # the second column is the capture time
check "demo: the recordings list the same frames" test "$(records "$work/target/inspect.out")" = \
  "$(records "$work/host/inspect.out")"

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "the $(file -b "$target" | cut -d, -f2 | xargs) memhal gives the host's tables, images and demo counts"
