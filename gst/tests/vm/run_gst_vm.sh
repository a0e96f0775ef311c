#!/usr/bin/env bash
# Runs a guest script (bash) with GStreamer, the memhal plugin and the gst test programs inside
# the DMA-heap VM with vivid loaded (the guest has neither GStreamer nor a shell: bash, the
# programs, the GStreamer plugins they need and every library those load are copied in).
#   run_gst_vm.sh RUNNER PLUGIN GST_RUN FRAME_CHECKSUMS GUEST_SCRIPT [SCRIPT ARGS...]
# Extra runner options come from GST_VM_RUNNER_OPTIONS. Exits 77 (skipped) where the runner
# is missing; 125 after three VM failures (tests/support/run_in_vm.sh).
set -euo pipefail
runner=$1 plugin=$2 gst_run=$3 checksums=$4 script=$5
shift 5
if [ ! -x "$runner" ]; then
  echo "SKIPPED: $runner not found; the vivid tests need it to boot a kernel with vivid" >&2
  exit 77
fi
system_plugins=$(pkg-config --variable=pluginsdir gstreamer-1.0)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/lib" "$work/plugins"
cp -L "$plugin" "$work/plugins/"
for p in coreelements video4linux2 shm; do
  cp -L "$system_plugins/libgst$p.so" "$work/plugins/"
done
{ ldd "$gst_run"; ldd "$checksums"; for p in "$work"/plugins/*.so; do ldd "$p"; done; } |
  awk '$3 ~ /^\// { print $3 }' | sort -u | while read -r library; do cp -L "$library" "$work/lib/"; done
# shellcheck disable=SC2086  # GST_VM_RUNNER_OPTIONS is a list of words
exec bash "$(dirname "$0")/../../../tests/support/run_in_vm.sh" "$runner" --modules vivid \
  --modparam vivid.node_types=0x1 --mem 2048 ${GST_VM_RUNNER_OPTIONS:-} \
  --add "$work/lib:/dut/lib" --add "$work/plugins:/dut/plugins" --add "$gst_run:/dut/gst_run" \
  --add "$checksums:/dut/frame_checksums" --add "$script:/dut/script.sh" \
  --env LD_LIBRARY_PATH=/dut/lib --env GST_PLUGIN_SYSTEM_PATH=/dut/plugins --env GST_PLUGIN_PATH= \
  --env GST_REGISTRY=/tmp/registry.bin --env GST_REGISTRY_FORK=no \
  -- /bin/bash /dut/script.sh "$@"
