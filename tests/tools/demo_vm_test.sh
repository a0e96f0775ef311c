#!/usr/bin/env bash
# memhal demo inside a real kernel with DMA heaps: the pool is DmaBuf, frames reach the second
# process as DMA-BUF fds, and nothing is copied. Exit 77 (skipped) where the runner is missing.
set -u
runner=$1 memhal=$2
if [ ! -x "$runner" ]; then
  echo "skipped: $runner not found"
  exit 77
fi
# The guest mounts a tmpfs on /tmp, hiding a build tree there that the runner would copy the
# library into; put libmemhal beside the program and say so (the last LD_LIBRARY_PATH wins).
library=$(ldd "$memhal" | awk '/libmemhal\.so/ { print $3 }')
add=()
if [ -n "$library" ]; then
  # --add copies a link as a link: give it the file the soname points to.
  add=(--add "$(readlink -f "$library"):/dut/${library##*/}"
       --env "LD_LIBRARY_PATH=/dut:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu")
fi
# run_in_vm.sh boots a fresh VM again when the guest kernel itself failed (runner exit 125).
out=$(bash "$(dirname "$0")/../support/run_in_vm.sh" "$runner" "${add[@]}" -- "$memhal" demo --frames 12 --fps 10 --size 320x240 2>&1)
status=$?
echo "$out" | tail -5
[ $status -eq 0 ] || { echo "FAIL: demo in the VM exited $status"; exit 1; }
grep -q "nv12 at 10 fps, 8 dmabuf buffers" <<<"$out" || { echo "FAIL: the pool is not dmabuf"; exit 1; }
grep -qE '^summary: frames=12 bytes_shared=[0-9]+ bytes_copied=0 p50_latency_us=[0-9]+ p99_latency_us=[0-9]+ checksum_errors=0 lost_frames=0 preprocess_p50_us=[1-9][0-9]* dropped_frames=0$' \
  <<<"$out" || { echo "FAIL: summary"; exit 1; }
echo "demo in the VM: dmabuf frames shared with a second process, nothing copied"
