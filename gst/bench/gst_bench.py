#!/usr/bin/env python3
"""memhalsink → memhalsrc vs shmsink → shmsrc across two processes, NV12.

Usage: GST_PLUGIN_PATH=<build>/gst gst_bench.py GST_RUN [FRAMES]
       gst_bench.py --vivid RUNNER PLUGIN GST_RUN FRAME_CHECKSUMS [FRAMES]
videotestsrc (system memory, both zero-copy): for each size the source alone (videotestsrc !
fakesink, one process), then each pair (the producer waits for its consumer); µs per frame from
the consumer's launch to the producer's last frame handed over, and the transport's share: that
minus the source alone. One run each.
--vivid: in the DMA-heap VM (run-in-dmaheap-vm, emulated), v4l2src io-mode=dmabuf on vivid
(DMA-BUFs: shmsink copies each into its ring, memhalsink passes the fd). vivid paces frames, so
this half counts CPU, not wall time: the median CPU per frame of the producer's streaming
thread (v4l2src and the sink's render) and of the consumer's (gst_run --thread-cpu).
memhalsink's Channel reader thread (it takes the consumers' releases) is not counted.
"""
import os
import subprocess
import sys
import tempfile
import time

SIZES = [("720p", 1280, 720), ("1080p", 1920, 1080), ("4K", 3840, 2160)]


def vivid(runner, plugin, gst_run, checksums, frames):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "vm")
    print(f"vivid in the DMA-heap VM (emulated), v4l2src io-mode=dmabuf NV12, {frames} frames: streaming-thread CPU "
          "µs per frame (median) of the producer (v4l2src and the sink) and of the consumer; transport = producer "
          "- source alone + consumer; one run.")
    print("| size | source alone | memhalsink → memhalsrc | shmsink → shmsrc | memhal transport | shm transport "
          "| shm / memhal |")
    print("|---|---|---|---|---|---|---|")
    for name, w, h in SIZES:
        r = subprocess.run(["bash", f"{script}/run_gst_vm.sh", runner, plugin, gst_run, checksums,
                            f"{script}/vivid.sh", "bench", str(w), str(h), str(frames)],
                           capture_output=True, text=True, timeout=1800)
        # (shmsrc ends with an error when shmsink closes its socket: its exit status says nothing)
        failed = [l for l in r.stdout.splitlines() if ".rc=" in l and not l.endswith(".rc=0")]
        cpu, current = {}, None
        for line in r.stdout.splitlines():
            if line.startswith("--- "):
                current = line[4:]
            elif current and line.startswith("sink.thread_cpu_us="):
                cpu[current] = float(line.split("=")[1].split()[0])
        wanted = ("alone", "memhal.producer", "memhal.consumer", "shm.producer", "shm.consumer")
        if failed or any(k not in cpu for k in wanted):
            print(f"| {name} | VM run failed (rc={r.returncode}): {' '.join(failed)} {r.stdout[-600:]} "
                  f"{r.stderr[-600:]}")
            continue
        m = cpu["memhal.producer"] - cpu["alone"] + cpu["memhal.consumer"]
        s_ = cpu["shm.producer"] - cpu["alone"] + cpu["shm.consumer"]
        ratio = f"{s_ / m:.1f}×" if m > 0 else "—"
        print(f"| {name} | {cpu['alone']:.0f} | {cpu['memhal.producer']:.0f} + {cpu['memhal.consumer']:.0f} | "
              f"{cpu['shm.producer']:.0f} + {cpu['shm.consumer']:.0f} | {m:.0f} | {s_:.0f} | {ratio} |", flush=True)


if len(sys.argv) > 1 and sys.argv[1] == "--vivid":
    vivid(*sys.argv[2:6], int(sys.argv[6]) if len(sys.argv) > 6 else 120)
    sys.exit(0)

GST_RUN = sys.argv[1]
FRAMES = int(sys.argv[2]) if len(sys.argv) > 2 else 300


def timed(args):
    start = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return time.monotonic() - start, r


def pair(producer, consumer, sock):
    """Seconds from the consumer's launch to the producer's end (shmsrc never sees an end of
    stream, so the consumer is then stopped), and the consumer's rendered count."""
    prod = subprocess.Popen([GST_RUN, "--timeout", "200", producer], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.02)
    start = time.monotonic()
    cons = subprocess.Popen([GST_RUN, "--timeout", "200", consumer, "sink.stats"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    prod.communicate(timeout=200)
    took = time.monotonic() - start
    try:
        out, _ = cons.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        cons.terminate()
        out, _ = cons.communicate(timeout=30)
    rendered = [w.rstrip(";") for w in out.replace(",", " ").split() if w.startswith("rendered=")]
    return took, rendered[0].replace("(guint64)", "") if rendered else "rendered=?"


work = tempfile.mkdtemp(prefix="memhal-gst-bench-")


def per_frame(run_with):
    """µs per frame in the steady state: runs of FRAMES and FRAMES/6 frames, the difference
    divided by the frames between them (start-up, pool creation and first faults cancel)."""
    short = max(FRAMES // 6, 10)
    (t_long, count), (t_short, _) = run_with(FRAMES), run_with(short)
    return (t_long - t_short) / (FRAMES - short) * 1e6, count


print(f"Steady-state µs per frame, {FRAMES} frames (difference against {max(FRAMES // 6, 10)}); one run each.")
print("| size | source alone | memhal pair | shm pair | memhal transport | shm transport |")
print("|---|---|---|---|---|---|")
for name, w, h in SIZES:
    caps = f"video/x-raw,format=NV12,width={w},height={h},framerate=30/1"
    src = lambda n: f"videotestsrc num-buffers={n} pattern=black ! {caps}"
    size = w * h * 3 // 2

    def alone(n):
        return timed([GST_RUN, f"{src(n)} ! fakesink sync=false"])[0], ""

    def memhal(n):
        sock = os.path.join(work, f"m-{name}-{n}")
        return pair(f"{src(n)} ! memhalsink socket={sock} wait-consumers=1",
                    f"memhalsrc socket={sock} ! fakesink name=sink sync=false enable-last-sample=false", sock)

    def shm(n):
        sock = os.path.join(work, f"s-{name}-{n}")
        return pair(f"{src(n)} ! shmsink socket-path={sock} shm-size={size * 12} wait-for-connection=true sync=false",
                    f"shmsrc socket-path={sock} ! {caps} ! fakesink name=sink sync=false enable-last-sample=false",
                    sock)

    base, _ = per_frame(alone)
    m, m_count = per_frame(memhal)
    s_, s_count = per_frame(shm)
    print(f"| {name} | {base:.0f} | {m:.0f} ({m_count}) | {s_:.0f} ({s_count}) | {m - base:.0f} | {s_ - base:.0f} |")
