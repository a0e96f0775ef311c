#!/usr/bin/env bash
# memhal convert end to end: PNG in, PNG / raw NV12 / .npy out, raw NV12 back in, and clear
# failures (exit 1 with a message, or 2 for usage) on bad input.
# Usage: convert_cli_test.sh path/to/memhal
set -euo pipefail
memhal="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# A 64x48 RGB test card as PNG, written with the standard library only.
/usr/bin/python3 - "$dir/card.png" <<'PY'
import struct, sys, zlib
w, h = 64, 48
raw = b"".join(b"\x00" + bytes(v for x in range(w) for v in (4 * x, 5 * y, 128)) for y in range(h))
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                              + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
PY

fail() { echo "FAIL: $*" >&2; exit 1; }

"$memhal" convert "$dir/card.png" "$dir/box.png" --out-size 32x32 --letterbox --rotate 90 >/dev/null
"$memhal" convert "$dir/card.png" "$dir/card.nv12" --to nv12 >/dev/null
[ "$(stat -c %s "$dir/card.nv12")" -eq $((64 * 48 * 3 / 2)) ] || fail "nv12 output has the wrong size"
"$memhal" convert "$dir/card.nv12" "$dir/input.npy" --size 64x48 --format nv12 --to planar_rgb --dtype f32 \
  --out-size 40x40 --letterbox --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 >/dev/null
"$memhal" convert "$dir/card.nv12" "$dir/back.png" --size 64x48 --format nv12 >/dev/null
"$memhal" convert "$dir/card.nv12" "$dir/back.rgb" --size 64x48 --format nv12 >/dev/null

/usr/bin/python3 - "$dir" <<'PY'
import array, struct, sys, zlib
d = sys.argv[1]
npy = open(d + "/input.npy", "rb").read()
assert npy[:8] == b"\x93NUMPY\x01\x00", "npy magic"
n = struct.unpack("<H", npy[8:10])[0]
header = npy[10:10 + n].decode()
assert "'descr': '<f4'" in header and "(3,40,40,)" in header, header
values = array.array("f"); values.frombytes(npy[10 + n:])
assert len(values) == 3 * 40 * 40, len(values)
pad = (114 / 255 - 0.485) / 0.229
assert abs(values[0] - pad) < 1e-3, (values[0], pad)  # the letterbox bar above the picture

def png_size(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])
assert png_size(d + "/back.png") == (64, 48)
assert png_size(d + "/box.png") == (32, 32)
# The round trip through NV12 keeps colours close (chroma is subsampled, so not exact).
rgb = open(d + "/back.rgb", "rb").read()
assert len(rgb) == 64 * 48 * 3, len(rgb)
for y, x in ((10, 20), (30, 50)):
    p = rgb[3 * (64 * y + x):3 * (64 * y + x) + 3]
    assert abs(p[0] - 4 * x) <= 6 and abs(p[1] - 5 * y) <= 6 and abs(p[2] - 128) <= 6, (x, y, tuple(p))
PY

set +e
"$memhal" convert "$dir/card.nv12" "$dir/x.png" --size 63x48 --format nv12 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] && grep -q "nv12" "$dir/err" || fail "odd nv12 size: rc $rc, $(cat "$dir/err")"
"$memhal" convert "$dir/card.nv12" "$dir/x.png" --size 64x40 --format nv12 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] && grep -q "bytes" "$dir/err" || fail "short raw frame: rc $rc, $(cat "$dir/err")"
printf 'not an image' >"$dir/junk.png"
"$memhal" convert "$dir/junk.png" "$dir/x.png" 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "junk input: rc $rc"
head -c 100 "$dir/card.png" >"$dir/cut.png"
"$memhal" convert "$dir/cut.png" "$dir/x.png" 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] && grep -q "PNG" "$dir/err" || fail "truncated png: rc $rc, $(cat "$dir/err")"
"$memhal" convert "$dir/card.png" "$dir/x.png" --crop 60,0,10,10 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] && grep -q "crop" "$dir/err" || fail "crop outside: rc $rc"
"$memhal" convert "$dir/card.png" "$dir/x.png" --rotate 45 2>"$dir/err"; rc=$?
[ $rc -eq 2 ] || fail "bad rotation is a usage error: rc $rc"
echo "memhal convert: all checks passed"
