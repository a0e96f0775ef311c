#!/usr/bin/env bash
# Where the time of image_bench's cold jobs goes, for the README: the share of each stage
# (sampled by `perf record -e cpu-clock`, which works without a PMU, on the CPU's own Highway
# target) and instructions per output pixel (`valgrind --tool=cachegrind`, on the AVX2 target:
# valgrind decodes no AVX-512).
# Usage: bench/where-the-time-goes.sh [BUILD_DIR [JOB...]] (default build/f, a Release build
# with -DMEMHAL_BUILD_BENCH=ON, and every job of the bench's cold table; a JOB is a key of that
# table's first column, as --profile takes it). Needs perf (linux-perf) and valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/f}
bench=$build/bench/image_bench
[[ -x $bench ]] || { echo "no $bench: cmake --build $build --target image_bench first" >&2; exit 2; }
missing=()
command -v perf >/dev/null || missing+=(linux-perf)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v cc >/dev/null || missing+=(gcc)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]]; then apt-get install -y --no-install-recommends "${missing[@]}"; else
    echo "needs: apt-get install ${missing[*]}" >&2; exit 2; fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -shared -fPIC -O2 bench/support/no_rdtscp.c -o "$tmp/no_rdtscp.so"

jobs=("${@:2}")
if ((${#jobs[@]} == 0)); then
  jobs=(nv12_1080p/rgb_u8 nv12_1080p/f32_planar nv12_1080p/f16_planar nv12_1080p/i8_planar yuyv_1080p/rgb_u8
        yuyv_1080p/f32_planar nv12_720p/rgb_u8 nv12_720p/f32_planar yuyv_720p/rgb_u8 yuyv_720p/f32_planar
        nv12_4k/rgb_u8 nv12_4k/f32_planar yuyv_4k/rgb_u8 yuyv_4k/f32_planar nv12_4k/rgb_u8_area yuyv_4k/rgb_u8_area
        nv12_4k/f32_planar_area)
fi
pixels=$((640 * 640)) content=$((640 * 360))  # every source is 16:9: 640x360 of content

# Stage of a sampled symbol ("[.] name" in user space, "[k] name" in the kernel); "-" for what is
# left out of the shares: the harness making the frames, and the kernel (timer interrupts of
# the VM, the harness's page faults). "picks" takes the source bytes each output needs (or, for
# whole lines, splits them per pixel); decode comes before resample in the patterns, so that a
# decode that also sums its line (an area's) or blends its pixels (a 2:1 downscale's
# SemiPlanarPairs and Packed422Pairs, or YuvPairs from picked bytes) counts as decode, and so
# does AVX2's one pass from the shuffle pairs to the destination (PairedPixels, PairedPlanes,
# PairedNormalised, ShuffledYuvToPlanar, ShuffledYuvNormalised, and the lane kernels
# LaneNormalised, LaneYuv..., LaneHalves: its picks, and the prefetch of the next row's lines,
# are inside it). PairedYuvTo is both: an instance whose symbol names ShuffledYuvBytesInRegisters
# writes picked bytes out (picks), the others are inside those one-pass kernels.
stage_of() {
  case $1 in
    "[k] "*) echo - ;;
    *ShuffledYuvBytesInRegisters*) echo picks ;;  # PairedYuvTo<...> that writes the picked bytes out
    *PairedPixels*|*PairedPlanes*|*PairedNormalised*|*PairedYuv*|*ShuffledYuvToPlanar*|*ShuffledYuvTo8Bit*) echo "decode+store" ;;
    *ShuffledYuvNormalised*|*LaneNormalised*|*LaneYuv*|*LaneHalves*) echo "decode+store" ;;
    *WordPicked*|*ShuffledYuvBytes*|*read_row_yuv_bytes*|*read_row_planned*|*gather*) echo picks ;;
    *SplitChromaPairs*|*SplitPacked422*|*split_chroma_pairs*|*split_packed_422*) echo picks ;;
    *q6_chroma_pairs_row*|*pick_units*) echo picks ;;  # whole pairs (Y word, chroma pair, macropixel) picked
    *YuvTo8BitPixels*|*PlanarYuvToRgb*|*PlanarYuvToHalf*|*YuvToRgb*|*Q6To8Bit*|*q6_to_8bit*|*Interleave8Bit*|*interleave_8bit*)
      echo "decode+store" ;;
    *SemiPlanarToRgb*|*Packed422ToRgb*|*SampledSemiPlanarToRgb*|*SampledPacked422ToRgb*|*SemiPlanarPairs*|*YuvPairs*|*Packed422Pairs*)
      echo "decode+store" ;;
    *Resample*|*resample*|*Blend*|*blend*|*Accumulate*|*accumulate*) echo resample ;;
    *StoreF16*|*StoreF32*|*store_f16*|*store_f32*|*Store8Bit*|*write_channel*|*write_rows*) echo "decode+store" ;;
    *prefetch_row*) echo "memory wait" ;;
    *memmove*|*memcpy*|*copy_row*|*StreamCopy*|*stream_copy*|*fill_repeated*|*FillRepeated*|*fill_rows_like*)
      echo "padding rows" ;;
    *ring*|*frame\(*|*Layout::nbytes*|*element_count*|*_start*|*__libc_start*) echo - ;;
    *) echo other ;;
  esac
}

printf '%-24s %8s %13s %9s %13s %8s %8s  %s\n' job picks decode+store resample "memory wait" padding other \
  "instructions / output pixel (AVX2; / content pixel)"
for job in "${jobs[@]}"; do
  perf record -q -e cpu-clock -F 4000 -o "$tmp/perf.data" "$bench" --profile="$job" --frames=3000 >/dev/null 2>&1
  declare -A share=([picks]=0 ["decode+store"]=0 [resample]=0 ["memory wait"]=0 ["padding rows"]=0 [other]=0)
  total=0
  while IFS=$'\t' read -r pct sym; do
    stage=$(stage_of "$sym")
    [[ $stage == - ]] && continue
    share[$stage]=$(awk -v a="${share[$stage]}" -v b="$pct" 'BEGIN { print a + b }')
    total=$(awk -v a="$total" -v b="$pct" 'BEGIN { print a + b }')
  done < <(perf report -i "$tmp/perf.data" --no-children --stdio -g none --sort symbol 2>/dev/null |
           awk '/^ +[0-9.]+%/ { pct = $1; sub(/%/, "", pct); $1 = ""; sub(/^ +/, ""); print pct "\t" $0 }')
  refs() {
    LD_PRELOAD=$tmp/no_rdtscp.so valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
      "$bench" --profile="$job" --frames="$1" --target=AVX2 2>&1 | awk '/I +refs:/ { gsub(/,/, "", $4); print $4 }'
  }
  one=$(refs 1) five=$(refs 5)
  pct() { awk -v a="${share[$1]}" -v t="$total" 'BEGIN { printf "%.0f %%", (t > 0 ? 100 * a / t : 0) }'; }
  printf '%-24s %8s %13s %9s %13s %8s %8s  %s\n' "$job" "$(pct picks)" "$(pct decode+store)" "$(pct resample)" \
    "$(pct 'memory wait')" "$(pct 'padding rows')" "$(pct other)" \
    "$(awk -v a="$one" -v b="$five" -v p=$pixels -v c=$content 'BEGIN { d = (b - a) / 4; printf "%.1f (%.1f)", d / p, d / c }')"
  unset share
done
