#!/usr/bin/env bash
# The memhal command with a real V4L2 camera (vivid) in the DMA-heap VM: `memhal info` lists it,
# `memhal capture` writes its frame (the colour bars) as .npy and PNG, and `memhal demo --camera`
# runs the main job on it with nothing copied. Exit 77 (skipped) where the runner is missing.
# The guest has no shell: each step is one boot, and OUT is a link to the program's stdout.
set -u
runner=$1 memhal=$2 python=${3:-python3}
if [ ! -x "$runner" ]; then
  echo "skipped: $runner not found"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
library=$(ldd "$memhal" | awk '/libmemhal\.so/ { print $3 }')
add=()
if [ -n "$library" ]; then
  add=(--add "$(readlink -f "$library"):/dut/${library##*/}"
       --env "LD_LIBRARY_PATH=/dut:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu")
fi
ln -s /proc/self/fd/1 "$work/out.npy"
ln -s /proc/self/fd/1 "$work/out.png"
vm() { bash "$(dirname "$0")/../support/run_in_vm.sh" "$runner" --modules vivid "${add[@]}" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

vm -- "$memhal" info --json >"$work/info.json" 2>"$work/info.err" || fail "memhal info: $(cat "$work/info.err")"
"$python" - "$work/info.json" <<'PY' || fail "memhal info --json does not list vivid's capture node"
import json, sys
cameras = json.load(open(sys.argv[1]))["cameras"]
vivid = [c for c in cameras if c["driver"] == "vivid"]
assert len(vivid) == 1 and vivid[0]["path"] == "/dev/video0", cameras  # its output and metadata nodes are no cameras
nv12 = [f for f in vivid[0]["formats"] if f["fourcc"] == "NV12"][0]
assert nv12["format"] == "nv12" and {"width": 640, "height": 480} in [{k: s[k] for k in ("width", "height")} for s in nv12["sizes"]]
assert any(f["format"] is None for f in vivid[0]["formats"]), "FourCCs memhal has no name for are listed too"
PY
echo "memhal info --json lists /dev/video0 (vivid) with its formats"

vm --add "$work/out.npy:/dut/out.npy" -- "$memhal" capture /dev/video0 /dut/out.npy --format yuyv --size 640x480 \
  --frames 3 >"$work/frame.npy" 2>"$work/capture.err" || fail "memhal capture .npy: $(cat "$work/capture.err")"
grep -q "memhal capture: 3 frame(s) from /dev/video0: YUYV 640x480" "$work/capture.err" || fail "capture report: $(cat "$work/capture.err")"
"$python" - "$work/frame.npy" <<'PY' || fail "the captured frame is not vivid's colour bars"
import numpy, sys
frame = numpy.load(sys.argv[1])
assert frame.shape == (480, 640, 2) and frame.dtype == numpy.uint8, frame.shape
luma = [int(frame[300, (2 * bar + 1) * 40, 0]) for bar in range(8)]  # below the on-screen text
expected = [179, 160, 130, 111, 83, 64, 34, 16]
assert all(abs(a - b) <= 2 for a, b in zip(luma, expected)), luma
PY
echo "memhal capture wrote a YUYV 640x480 frame as .npy with the 75% colour bars"

vm --add "$work/out.png:/dut/out.png" -- "$memhal" capture /dev/video0 /dut/out.png --size 320x180 \
  >"$work/frame.png" 2>"$work/png.err" || fail "memhal capture .png: $(cat "$work/png.err")"
"$python" - "$work/frame.png" <<'PY' || fail "not a 320x180 RGB PNG"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", data[:16]
width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
assert (width, height, depth, colour) == (320, 180, 8, 2), (width, height, depth, colour)
PY
echo "memhal capture wrote a 320x180 RGB PNG"

vm -- "$memhal" demo --camera /dev/video0 --frames 60 --fps 30 --size 640x480 >"$work/demo.out" 2>"$work/demo.err" ||
  fail "memhal demo --camera exited $?: $(tail -3 "$work/demo.err")"
tail -3 "$work/demo.out"
grep -q "memhal demo: camera /dev/video0 640x480 NV12 at 30 fps" "$work/demo.out" || fail "demo header"
grep -qE '^summary: frames=60 bytes_shared=[0-9]+ bytes_copied=0 p50_latency_us=-?[0-9]+ p99_latency_us=-?[0-9]+ checksum_errors=0 lost_frames=0 preprocess_p50_us=[1-9][0-9]* dropped_frames=[0-9]+$' \
  "$work/demo.out" || fail "demo summary"
echo "memhal demo --camera: vivid's frames to a second process and a model input, nothing copied"
