#!/usr/bin/env bash
# Runs a test binary inside the DMA-heap VM: run_in_vm.sh RUNNER [runner options] -- PROGRAM.
# Exits 77 (CTest: skipped) with the reason when the runner is not there.
set -uo pipefail
runner=$1
shift
if [ ! -x "$runner" ]; then
  echo "SKIPPED: $runner not found; the DmaBuf tests need it to boot a kernel with DMA heaps" >&2
  exit 77
fi
exec "$runner" --timeout 800 "$@"
