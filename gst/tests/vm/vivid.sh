# Inside the VM (bash only, no coreutils): v4l2src io-mode=dmabuf on vivid into memhalsink.
#   vivid.sh dmabuf W H FRAMES        memhalsink → a memhal C++ consumer (frame_checksums)
#   vivid.sh bench W H FRAMES...      CPU of the source alone, memhalsink → memhalsrc and
#                                     shmsink → shmsrc (each process's gst_run.cpu_us), per count
# Prints key=value lines and the programs' output between "--- name" markers.
set -u
mode=$1 w=$2 h=$3
caps="video/x-raw,format=NV12,width=$w,height=$h,framerate=30/1"
show() { echo "--- $1"; echo "$(<"$2")"; }

if [ "$mode" = dmabuf ]; then
  src="v4l2src device=/dev/video0 io-mode=dmabuf num-buffers=$4 ! $caps"
  GST_DEBUG=GST_PERFORMANCE:5 GST_DEBUG_NO_COLOR=1 /dut/gst_run --timeout 120 \
    "$src ! memhalsink name=sink socket=/tmp/v.sock wait-consumers=1" sink.copies sink.frames \
    >/tmp/p.out 2>/tmp/p.err &
  producer=$!
  /dut/frame_checksums /tmp/v.sock >/tmp/c.out 2>/tmp/c.err
  echo "consumer.rc=$?"
  wait "$producer"
  echo "producer.rc=$?"
  show producer /tmp/p.out
  show producer.log /tmp/p.err
  show consumer.log /tmp/c.err
  exit 0
fi

# bench: one size, three ways, for each frame count given.
bench() {
  local n=$1 src="v4l2src device=/dev/video0 io-mode=dmabuf num-buffers=$1 ! $caps" producer consumer
  /dut/gst_run --cpu --timeout 300 "$src ! fakesink sync=false" >/tmp/a.out 2>&1
  echo "alone.$n.rc=$?"
  show "alone.$n" /tmp/a.out
  /dut/gst_run --cpu --timeout 300 "$src ! memhalsink name=sink socket=/tmp/m$n.sock wait-consumers=1" sink.copies \
    >/tmp/mp.out 2>&1 &
  producer=$!
  /dut/gst_run --cpu --timeout 300 --wait-for "/tmp/m$n.sock" \
    "memhalsrc socket=/tmp/m$n.sock ! fakesink name=sink sync=false enable-last-sample=false" sink.stats \
    >/tmp/mc.out 2>&1
  echo "memhal.$n.consumer.rc=$?"
  wait "$producer"
  echo "memhal.$n.producer.rc=$?"
  show "memhal.$n.producer" /tmp/mp.out
  show "memhal.$n.consumer" /tmp/mc.out
  /dut/gst_run --cpu --timeout 300 "$src ! shmsink socket-path=/tmp/s$n.sock shm-size=$((w * h * 3 / 2 * 12)) \
    wait-for-connection=true sync=false" >/tmp/sp.out 2>&1 &
  producer=$!
  /dut/gst_run --cpu --timeout 300 --wait-for "/tmp/s$n.sock" \
    "shmsrc socket-path=/tmp/s$n.sock ! $caps ! fakesink name=sink sync=false enable-last-sample=false" sink.stats \
    >/tmp/sc.out 2>&1 &
  consumer=$!
  wait "$producer"
  echo "shm.$n.producer.rc=$?"
  kill -TERM "$consumer"
  wait "$consumer"
  echo "shm.$n.consumer.rc=$?"
  show "shm.$n.producer" /tmp/sp.out
  show "shm.$n.consumer" /tmp/sc.out
}
shift 3
for count in "$@"; do bench "$count"; done
