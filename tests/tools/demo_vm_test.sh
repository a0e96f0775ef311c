#!/usr/bin/env bash
# memhal demo inside a real kernel with DMA heaps: the pool is DmaBuf, frames reach the second
# process as DMA-BUF fds, and nothing is copied. Exit 77 (skipped) where the runner is missing.
set -u
runner=$1 memhal=$2
if [ ! -x "$runner" ]; then
  echo "skipped: $runner not found"
  exit 77
fi
out=$("$runner" --timeout 600 -- "$memhal" demo --frames 12 --fps 10 --size 320x240 2>&1)
status=$?
echo "$out" | tail -5
[ $status -eq 0 ] || { echo "FAIL: demo in the VM exited $status"; exit 1; }
grep -q "nv12 at 10 fps, 8 dmabuf buffers" <<<"$out" || { echo "FAIL: the pool is not dmabuf"; exit 1; }
grep -qE '^summary: frames=12 bytes_shared=[0-9]+ bytes_copied=0 p50_latency_us=[0-9]+ p99_latency_us=[0-9]+ checksum_errors=0$' \
  <<<"$out" || { echo "FAIL: summary"; exit 1; }
echo "demo in the VM: dmabuf frames shared with a second process, nothing copied"
