#!/usr/bin/env bash
# The GL import tests on real DMA-BUFs: gl_vm_test.sh FETCH MESA25_DIR RUN_IN_VM RUNNER TEST
# [NAME=VALUE...]. Fetches Mesa 25's closure for the VM (FETCH --vm MESA25_DIR, cached) and runs
# the DmaBuf tests of the GL test binary TEST inside the DMA-heap VM on Mesa 25's llvmpipe (the
# plain swrast driver: no vgem, see ../shared/reference/probes/gl-dmabuf-import.md), with the
# extra environment given. Exits 77 (skipped) with the reason when Mesa 25 or the runner is
# missing.
set -uo pipefail
fetch=$1 dir=$2 run_in_vm=$3 runner=$4 test=$5
shift 5
if [ ! -x "$runner" ]; then
  echo "SKIPPED: $runner not found; the GL DmaBuf tests need it to boot a kernel with DMA heaps" >&2
  exit 77
fi
"$fetch" --vm "$dir" || exit 1
if [ -e "$dir/unavailable" ]; then
  echo "SKIPPED: $(cat "$dir/unavailable")" >&2
  exit 77
fi
envs=()
for e in "$@"; do envs+=(--env "$e"); done
exec "$run_in_vm" "$runner" --mem 2048 --add "$dir/vm/lib:/mesa25/lib" --add "$dir/vm/50_mesa.json:/mesa25/50_mesa.json" \
  --add "$dir/env:/mesa25/env" --env LD_LIBRARY_PATH=/mesa25/lib \
  --env __EGL_VENDOR_LIBRARY_FILENAMES=/mesa25/50_mesa.json --env LIBGL_ALWAYS_SOFTWARE=1 \
  --env MEMHAL_TEST_MESA25=/mesa25 --env MEMHAL_TEST_REQUIRE_DMABUF=1 "${envs[@]}" -- "$test"
