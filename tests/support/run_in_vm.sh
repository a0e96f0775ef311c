#!/usr/bin/env bash
# Runs a test binary inside the DMA-heap VM: run_in_vm.sh RUNNER [runner options] -- PROGRAM.
# Exits 77 (CTest: skipped) with the reason when the runner is not there.
#
# The runner exits 125 when the VM itself failed: the guest kernel panicked, or no exit status
# came back. Under TCG emulation the 6.12 guest now and then oopses while booting, in a kernel
# worker, before the program has started (seen in CI: an int3 in enqueue_timer). That says
# nothing about the program, so such a run is tried again, at most twice, and says so. A
# failure the program causes comes back every time and still fails the test.
set -uo pipefail
runner=$1
shift
if [ ! -x "$runner" ]; then
  echo "SKIPPED: $runner not found; the DmaBuf tests need it to boot a kernel with DMA heaps" >&2
  exit 77
fi
attempts=3
for attempt in $(seq 1 "$attempts"); do
  "$runner" --timeout 800 "$@"
  status=$?
  if [ "$status" -ne 125 ] || [ "$attempt" -eq "$attempts" ]; then
    exit "$status"
  fi
  echo "run_in_vm: the VM failed (runner exit 125, attempt $attempt of $attempts);" \
       "booting a fresh VM and running the program again" >&2
done
