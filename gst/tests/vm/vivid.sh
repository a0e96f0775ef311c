# Inside the VM (bash only, no coreutils): v4l2src io-mode=dmabuf on vivid into memhalsink.
#   vivid.sh dmabuf W H FRAMES        memhalsink → a memhal C++ consumer (frame_checksums)
#   vivid.sh bench W H FRAMES         streaming-thread CPU per frame (median) of the source alone,
#                                     memhalsink → memhalsrc and shmsink → shmsrc
# Prints key=value lines and the programs' output between "--- name" markers.
set -u
mode=$1 w=$2 h=$3
caps="video/x-raw,format=NV12,width=$w,height=$h"  # at the rate vivid gives the size (4K: below 30)
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

# bench: one size, three ways: the producer's streaming thread CPU per frame (median), and the
# consumer's.
bench() {
  local src="v4l2src device=/dev/video0 io-mode=dmabuf num-buffers=$1 ! $caps" producer consumer
  /dut/gst_run --thread-cpu sink --timeout 300 "$src ! fakesink name=sink sync=false" >/tmp/a.out 2>&1
  echo "alone.rc=$?"
  show alone /tmp/a.out
  /dut/gst_run --thread-cpu sink --timeout 300 "$src ! memhalsink name=sink socket=/tmp/m.sock wait-consumers=1" \
    sink.copies >/tmp/mp.out 2>&1 &
  producer=$!
  /dut/gst_run --thread-cpu sink --timeout 300 --wait-for /tmp/m.sock \
    "memhalsrc socket=/tmp/m.sock ! fakesink name=sink sync=false enable-last-sample=false" >/tmp/mc.out 2>&1
  echo "memhal.consumer.rc=$?"
  wait "$producer"
  echo "memhal.producer.rc=$?"
  show memhal.producer /tmp/mp.out
  show memhal.consumer /tmp/mc.out
  /dut/gst_run --thread-cpu sink --timeout 300 "$src ! shmsink name=sink socket-path=/tmp/s.sock \
    shm-size=$((w * h * 3 * 12 / 2)) wait-for-connection=true sync=false" >/tmp/sp.out 2>&1 &
  producer=$!
  /dut/gst_run --thread-cpu sink --timeout 300 --wait-for /tmp/s.sock \
    "shmsrc socket-path=/tmp/s.sock ! $caps,framerate=0/1 ! fakesink name=sink sync=false enable-last-sample=false" \
    >/tmp/sc.out 2>&1 &
  consumer=$!
  wait "$producer"
  echo "shm.producer.rc=$?"
  kill -TERM "$consumer"
  wait "$consumer"
  show shm.producer /tmp/sp.out
  show shm.consumer /tmp/sc.out
}
# The first GStreamer process builds the registry: not part of any measurement.
/dut/gst_run "fakesrc num-buffers=1 ! fakesink" >/dev/null 2>&1
bench "$4"
