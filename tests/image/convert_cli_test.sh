#!/usr/bin/env bash
# memhal convert end to end: PNG and JPEG in, PNG / raw NV12 / .npy out, raw NV12 and planar
# RGB(A) back in, and clear failures (exit 1 with a message, or 2 for a usage error naming the
# argument) on bad input: directories, devices, damaged or lying JPEGs, numbers out of range.
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

# expect RC PATTERN command...: the command exits RC and its stderr matches PATTERN.
expect() {
  local want=$1 pattern=$2; shift 2
  "$@" >"$dir/out" 2>"$dir/err"; local rc=$?
  [ $rc -eq "$want" ] && grep -qE -- "$pattern" "$dir/err" || fail "$*: rc $rc (want $want), stderr: $(head -c 400 "$dir/err")"
}

# Inputs are read with a bound and every failure is a message with exit 1, never an abort.
expect 1 "is a directory" "$memhal" convert "$dir" "$dir/x.png"
expect 1 "neither a PNG nor a JPEG" timeout 10 "$memhal" convert /dev/zero "$dir/x.png"
expect 1 "more than a raw nv12 64x48 frame \(4608 bytes\)" \
  timeout 10 "$memhal" convert /dev/zero "$dir/x.png" --size 64x48 --format nv12
cat "$dir/card.nv12" "$dir/card.nv12" >"$dir/two.nv12"
expect 1 "has 9216 bytes, more than a raw nv12 64x48 frame" "$memhal" convert "$dir/two.nv12" "$dir/x.png" --size 64x48 --format nv12
expect 1 "cannot open" "$memhal" convert "$dir/missing.png" "$dir/x.png"

# JPEG: a good one decodes; a truncated one, or one whose header claims more pixels than its
# bytes can hold, is an error (libjpeg would fill grey, or allocate 200 MB, and succeed).
jpeg="$(dirname "$0")/card_96x64.jpg"
"$memhal" convert "$jpeg" "$dir/jpeg.rgb" >/dev/null || fail "the JPEG card does not convert"
/usr/bin/python3 - "$jpeg" "$dir" <<'PY'
import sys
src, d = sys.argv[1], sys.argv[2]
rgb = open(d + "/jpeg.rgb", "rb").read()
assert len(rgb) == 96 * 64 * 3, len(rgb)
for y, x in ((4, 4), (20, 50), (60, 90)):  # inside the 8x8 checks, away from their edges
    if x % 8 in (0, 7) or y % 8 in (0, 7):
        continue
    p = rgb[3 * (96 * y + x):3 * (96 * y + x) + 3]
    b = 200 if (x // 8 + y // 8) & 1 else 60
    assert abs(p[0] - 2 * x) <= 12 and abs(p[1] - 3 * y) <= 12 and abs(p[2] - b) <= 12, (x, y, tuple(p))
data = open(src, "rb").read()
sof = data.index(b"\xff\xc0")
sos = data.index(b"\xff\xda")
open(d + "/cut.jpg", "wb").write(data[: (sos + len(data)) // 2])  # cut inside the scan data
def claim(name, width, height):
    patched = bytearray(data)
    patched[sof + 5:sof + 7] = height.to_bytes(2, "big")
    patched[sof + 7:sof + 9] = width.to_bytes(2, "big")
    open(d + "/" + name, "wb").write(patched)
claim("huge.jpg", 16384, 4096)  # 64 Mpixel from 1.8 KB: refused before allocating
claim("tall.jpg", 512, 512)     # plausible for the size, but the data runs out
PY
expect 1 "JPEG: .*[Pp]remature end" "$memhal" convert "$dir/cut.jpg" "$dir/x.png"
expect 1 "claims 16384x4096, more than [0-9]+ bytes can hold" "$memhal" convert "$dir/huge.jpg" "$dir/x.png"
expect 1 "JPEG: .*premature end" "$memhal" convert "$dir/tall.jpg" "$dir/x.png"
[ ! -e "$dir/x.png" ] || fail "a failed conversion wrote its output"

# Planar RGB and RGBA raw frames: the size comes from the pixel format's planes, in and out.
/usr/bin/python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
w, h = 64, 32
for name, c in (("planar_rgb", 3), ("planar_rgba", 4)):
    open(f"{d}/{name}.raw", "wb").write(bytes((60 * k + x + 2 * y) & 255 for k in range(c) for y in range(h) for x in range(w)))
PY
for format in planar_rgb planar_rgba; do
  "$memhal" convert "$dir/$format.raw" "$dir/$format.npy" --size 64x32 --format $format --to $format >/dev/null
  "$memhal" convert "$dir/$format.raw" "$dir/$format.out" --size 64x32 --format $format --to $format >/dev/null
  cmp -s "$dir/$format.raw" "$dir/$format.out" || fail "$format raw in and out differ"
done
"$memhal" convert "$dir/planar_rgba.raw" "$dir/planar_rgba.png" --size 64x32 --format planar_rgba --to rgba >/dev/null
/usr/bin/python3 - "$dir" <<'PY'
import struct, sys
d = sys.argv[1]
for name, c in (("planar_rgb", 3), ("planar_rgba", 4)):
    npy = open(f"{d}/{name}.npy", "rb").read()
    n = struct.unpack("<H", npy[8:10])[0]
    header = npy[10:10 + n].decode()
    assert f"({c},32,64,)" in header, (name, header)
    assert npy[10 + n:] == open(f"{d}/{name}.raw", "rb").read(), name
png = open(d + "/planar_rgba.png", "rb").read()
assert struct.unpack(">II", png[16:24]) == (64, 32), struct.unpack(">II", png[16:24])
PY

# Numbers are the whole argument, in range; a usage error names the argument and exits 2.
expect 2 "--pad: .*0 to 255.*'300'" "$memhal" convert "$dir/card.png" "$dir/x.png" --pad 300,0,0
expect 2 "--pad: " "$memhal" convert "$dir/card.png" "$dir/x.png" --pad -1
expect 2 "--pad: " "$memhal" convert "$dir/card.png" "$dir/x.png" --pad 1,2,-3
expect 2 "--threads: .*'4294967296'" "$memhal" convert "$dir/card.png" "$dir/x.png" --threads 4294967296
expect 2 "--threads: " "$memhal" convert "$dir/card.png" "$dir/x.png" --threads 2x
expect 2 "--size: " "$memhal" convert "$dir/card.nv12" "$dir/x.png" --size 64x48x2 --format nv12
expect 2 "--out-size: " "$memhal" convert "$dir/card.png" "$dir/x.png" --out-size 0x10
expect 2 "--crop: " "$memhal" convert "$dir/card.png" "$dir/x.png" --crop 0,0,1e1,10
expect 2 "--mean: .*'nan'" "$memhal" convert "$dir/card.png" "$dir/x.npy" --dtype f32 --mean nan
expect 2 "--std: .*'inf'" "$memhal" convert "$dir/card.png" "$dir/x.npy" --dtype f32 --std 1,inf
expect 2 "--letterbox: takes no value" "$memhal" convert "$dir/card.png" "$dir/x.png" --letterbox=yes
expect 2 "--pad: needs a value" "$memhal" convert "$dir/card.png" "$dir/x.png" --pad
expect 2 "--bogus: unknown option" "$memhal" convert "$dir/card.png" "$dir/x.png" --bogus 1
# Option values are the vocabulary tables' wire strings or aliases (any case); anything else is
# a usage error that lists the wire strings.
expect 2 "--flip: unknown Flip 'sideways' \(expects none\|horizontal\|vertical\|both\)" \
  "$memhal" convert "$dir/card.png" "$dir/x.png" --flip sideways
expect 2 "--rotate: unknown Rotation '-90' \(expects none\|cw90\|cw180\|cw270\)" \
  "$memhal" convert "$dir/card.png" "$dir/x.png" --rotate=-90
expect 2 "--backend: unknown ImageBackend 'vulkan' \(expects cpu\|gl\)" \
  "$memhal" convert "$dir/card.png" "$dir/x.png" --backend vulkan
expect 2 "--range: unknown ColorRange" "$memhal" convert "$dir/card.png" "$dir/x.png" --range 1
[ ! -e "$dir/x.png" ] || fail "a usage error wrote its output"
for spellings in "--flip h --rotate 90" "--flip HORIZONTAL --rotate cw90" "--flip=horizontal --rotate=CW90"; do
  # shellcheck disable=SC2086
  "$memhal" convert "$dir/card.png" "$dir/turned.rgb" $spellings --backend cpu >/dev/null || fail "$spellings"
  if [ -e "$dir/turned.first" ]; then
    cmp -s "$dir/turned.first" "$dir/turned.rgb" || fail "$spellings: not the same picture as the first spelling"
  else
    mv "$dir/turned.rgb" "$dir/turned.first"
  fi
done
"$memhal" convert "$dir/card.png" "$dir/box2.png" --out-size 32x32 --resize letterbox --rotate 90 >/dev/null
cmp -s "$dir/box.png" "$dir/box2.png" || fail "--resize letterbox differs from --letterbox"
# --name=value is the same option as --name value.
"$memhal" convert "$dir/card.nv12" "$dir/eq.png" --size=64x48 --format=nv12 --out-size=32x24 --pad=1,2,3 >/dev/null \
  || fail "--name=value options"
/usr/bin/python3 -c '
import struct, sys
assert struct.unpack(">II", open(sys.argv[1], "rb").read()[16:24]) == (32, 24)' "$dir/eq.png" || fail "--out-size=32x24"
"$memhal" help convert | grep -q "usage: memhal convert" || fail "memhal help convert"

echo "memhal convert: all checks passed"
