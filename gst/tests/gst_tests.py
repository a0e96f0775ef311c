#!/usr/bin/env python3
"""The memhal GStreamer plugin across processes (CTest label `gst`).

Usage: gst_tests.py CASE GST_RUN FRAME_CHECKSUMS FRAME_SERVER WORKDIR [MEMHAL_CLI]
Cases: roundtrip, no_server, consumer_drop, unsupported_caps, from_program, copied, rtp_loopback,
convert_videoconvert, convert_to_sink, convert_errors; demo_serve and convert_cli (both need
MEMHAL_CLI, the `memhal` command); vivid_dmabuf (in the DMA-heap VM: MEMHAL_DMAHEAP_VM and
MEMHAL_GST_PLUGIN from the environment; exit 77 when the runner is missing). GST_PLUGIN_PATH and
GST_REGISTRY come from the environment (CTest sets them to the build's plugin).
"""
import os
import subprocess
import sys
import time

CASE, GST_RUN, CHECKSUMS, SERVER, WORK = sys.argv[1:6]
MEMHAL_CLI = sys.argv[6] if len(sys.argv) > 6 else None
CAPS = "video/x-raw,format=NV12,width=1280,height=720"
FRAMES = 300
os.makedirs(WORK, exist_ok=True)


def fail(why):
    print("FAIL:", why)
    sys.exit(1)


def socket_path(name):
    path = os.path.join(WORK, name)
    if os.path.exists(path):
        os.unlink(path)
    return path


def run(args, timeout=120, env=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def hashes(text):
    return [line.split()[1] for line in text.splitlines() if len(line.split()) == 2]


def perf_env():
    env = dict(os.environ)
    env["GST_DEBUG"] = "GST_PERFORMANCE:5"
    env["GST_DEBUG_NO_COLOR"] = "1"
    return env


def copy_lines(log):
    """GST_PERFORMANCE lines that report a copy of frame bytes (GStreamer's and memhalsink's say
    memcpy; a GstBuffer/GstMemory copy is one too; caps copies are not frames)."""
    return [l for l in log.splitlines() if "GST_PERFORMANCE" in l and
            ("memcpy" in l or ("copy" in l and ("GstBuffer" in l or "GstMemory" in l)))]


def reference():
    """checksumsink's SHA-1s of the frames videotestsrc makes, in one process."""
    r = run([GST_RUN, f"videotestsrc num-buffers={FRAMES} ! {CAPS} ! checksumsink"])
    if r.returncode != 0:
        fail("reference pipeline: " + r.stderr)
    return hashes(r.stdout)


def producer(sock, consumers):
    desc = (f"videotestsrc num-buffers={FRAMES} ! {CAPS} ! "
            f"memhalsink name=sink socket={sock} wait-consumers={consumers}")
    return subprocess.Popen([GST_RUN, "--timeout", "120", desc, "sink.copies", "sink.frames"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=perf_env())


def wait_for(path):
    for _ in range(200):
        if os.path.exists(path):
            return
        time.sleep(0.05)
    fail(f"nobody listens on {path}")


def roundtrip():
    ref = reference()
    if len(ref) != FRAMES:
        fail(f"reference has {len(ref)} frames")
    sock = socket_path("roundtrip.sock")
    prod = producer(sock, 2)
    wait_for(sock)
    src = subprocess.Popen([GST_RUN, "--timeout", "120", f"memhalsrc name=src socket={sock} ! checksumsink",
                            "src.frames", "src.memories"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=perf_env())
    cpp = subprocess.Popen([CHECKSUMS, sock], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p_out, p_err = prod.communicate(timeout=120)
    s_out, s_err = src.communicate(timeout=120)
    c_out, c_err = cpp.communicate(timeout=120)
    print("producer:", p_out.strip().replace("\n", " "), "| memhalsrc:",
          " ".join(l for l in s_out.splitlines() if "=" in l))
    for name, proc, err in (("producer", prod, p_err), ("memhalsrc", src, s_err), ("C++ consumer", cpp, c_err)):
        if proc.returncode != 0:
            fail(f"{name} exited {proc.returncode}: {err[-2000:]}")
    if hashes(s_out) != ref:
        fail(f"memhalsrc checksums differ from the source's ({len(hashes(s_out))} frames)")
    if hashes(c_out) != ref:
        fail(f"C++ consumer checksums differ from the source's ({len(hashes(c_out))} frames)")
    # Timestamps cross too: checksumsink prints each buffer's PTS.
    if [l.split()[0] for l in s_out.splitlines() if len(l.split()) == 2] != \
       [l.split()[0] for l in c_out.splitlines()]:
        fail("PTS differ between memhalsrc and the C++ consumer")
    if "sink.copies=0" not in p_out or f"sink.frames={FRAMES}" not in p_out:
        fail("memhalsink copied or lost frames: " + p_out)
    for name, log in (("producer", p_err), ("memhalsrc", s_err)):
        if copy_lines(log):
            fail(f"{name} GST_PERFORMANCE log has copies: " + "\n".join(copy_lines(log)[:5]))
    memories = [l for l in s_out.splitlines() if l.startswith("src.memories=")]
    if not memories or int(memories[0].split("=")[1]) > 16:
        fail("memhalsrc did not reuse its memories: " + str(memories))
    print(f"roundtrip: {FRAMES} frames equal on both consumers, 0 copies")


def copied():
    """Buffers that are neither memhal's nor fd-backed are copied, counted and logged."""
    sock = socket_path("copied.sock")
    desc = (f"videotestsrc num-buffers=30 ! video/x-raw,format=NV12,width=640,height=480 ! "
            f"identity drop-allocation=true ! memhalsink name=sink socket={sock} wait-consumers=1")
    prod = subprocess.Popen([GST_RUN, "--timeout", "60", desc, "sink.copies", "sink.frames"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=perf_env())
    wait_for(sock)
    cons = run([CHECKSUMS, sock])
    p_out, p_err = prod.communicate(timeout=60)
    ref = run([GST_RUN, "videotestsrc num-buffers=30 ! video/x-raw,format=NV12,width=640,height=480 ! checksumsink"])
    if prod.returncode != 0 or cons.returncode != 0:
        fail(f"producer rc={prod.returncode} {p_err[-2000:]} / consumer rc={cons.returncode} {cons.stderr}")
    if "sink.copies=30" not in p_out:
        fail("expected 30 copies: " + p_out)
    logged = [l for l in copy_lines(p_err) if "memhalsink" in l]
    if len(logged) != 30:
        fail(f"expected 30 GST_PERFORMANCE copy lines from memhalsink, got {len(logged)}")
    if hashes(cons.stdout) != hashes(ref.stdout):
        fail("the copies differ from the source's frames")
    print("copied:", logged[0].split("GST_PERFORMANCE")[1].strip()[:200])


def rtp_loopback():
    """Across hosts through GStreamer's own network elements: a memhal program on A, memhalsrc
    A ! rtpvrawpay ! udpsink to loopback, udpsrc ! rtpvrawdepay ! memhalsink B, a memhal program on
    B. The 100 frames arrive intact."""
    a, b = socket_path("a.sock"), socket_path("b.sock")
    port = 20000 + os.getpid() % 20000
    caps = ("application/x-rtp,media=video,clock-rate=90000,encoding-name=RAW,sampling=YCbCr-4:2:0,"
            "depth=(string)8,width=(string)320,height=(string)240,payload=96")
    rx = subprocess.Popen([GST_RUN, "--timeout", "120",
                           f'udpsrc port={port} caps="{caps}" buffer-size=16000000 ! rtpvrawdepay ! '
                           f"memhalsink name=sink socket={b} wait-consumers=1", "sink.copies", "sink.frames"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(b)
    receiver = subprocess.Popen([CHECKSUMS, b, "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    server = subprocess.Popen([SERVER, a, "i420", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(a)
    tx = run([GST_RUN, "--timeout", "60", f"memhalsrc socket={a} ! rtpvrawpay ! udpsink host=127.0.0.1 port={port}"])
    s_out, _ = server.communicate(timeout=60)
    try:
        r_out, r_err = receiver.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        receiver.kill()
        r_out, r_err = receiver.communicate()
    rx.terminate()
    rx_out, rx_err = rx.communicate(timeout=30)
    if tx.returncode != 0:
        fail(f"sending pipeline rc={tx.returncode}: {tx.stderr[-2000:]}")
    sent, got = hashes(s_out), hashes(r_out)
    if len(sent) != 100 or got != sent:
        fail(f"B received {len(got)} of {len(sent)} frames, {sum(x != y for x, y in zip(got, sent))} differ: "
             f"{r_err} {rx_err[-1000:]}")
    print("rtp_loopback: 100 frames intact through rtpvrawpay/udpsink/udpsrc/rtpvrawdepay;",
          " ".join(rx_out.split()))


def no_server():
    sock = os.path.join(WORK, "nobody.sock")
    start = time.monotonic()
    r = run([GST_RUN, "--timeout", "20", f"memhalsrc socket={sock} ! fakesink"], timeout=30)
    took = time.monotonic() - start
    if r.returncode != 1 or "cannot connect to" not in r.stderr or sock not in r.stderr:
        fail(f"expected an ERROR naming {sock}, got rc={r.returncode}: {r.stderr}")
    if took > 10:
        fail(f"took {took:.1f} s")
    print("no_server:", r.stderr.splitlines()[0])


def consumer_drop():
    ref = reference()
    sock = socket_path("drop.sock")
    prod = producer(sock, 2)
    wait_for(sock)
    quitter = subprocess.Popen([CHECKSUMS, sock, "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stayer = subprocess.Popen([CHECKSUMS, sock], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p_out, p_err = prod.communicate(timeout=120)
    q_out, _ = quitter.communicate(timeout=120)
    s_out, s_err = stayer.communicate(timeout=120)
    if prod.returncode != 0:
        fail(f"producer exited {prod.returncode}: {p_err[-2000:]}")
    if len(hashes(q_out)) != 20:
        fail(f"the quitter read {len(hashes(q_out))} frames")
    if hashes(s_out) != ref:
        fail(f"the consumer that stayed got {len(hashes(s_out))} frames, not the source's {FRAMES}: {s_err}")
    print(f"consumer_drop: one consumer left after 20 frames, the other got all {FRAMES}")


def unsupported_caps():
    sock = socket_path("caps.sock")
    r = run([GST_RUN, "--timeout", "20",
             f"videotestsrc num-buffers=5 ! video/x-raw,format=Y444,width=64,height=48 ! memhalsink socket={sock}"])
    if r.returncode == 0 or "Y444" not in r.stderr:
        fail(f"expected a failure naming Y444, got rc={r.returncode}: {r.stderr}")
    print("unsupported_caps (memhalsink):", r.stderr.splitlines()[0])
    # Caps the pad template admits but memhal cannot lay out: not-negotiated, naming them.
    r = run([GST_RUN, "--timeout", "20",
             f"videotestsrc num-buffers=5 ! video/x-raw,format=NV12,width=641,height=480 ! memhalsink socket={sock}"])
    if r.returncode != 1 or "not-negotiated: memhalsink does not support caps" not in r.stderr or \
            "width=(int)641" not in r.stderr:
        fail(f"expected not-negotiated naming 641-wide NV12, got rc={r.returncode}: {r.stderr}")
    print("unsupported_caps (memhalsink, odd size):", " ".join(r.stderr.split())[:300])
    # A memhal program sending a format GStreamer has no name for: memhalsrc says which.
    sock = socket_path("planar.sock")
    server = subprocess.Popen([SERVER, sock, "planar_rgba", "5"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    wait_for(sock)
    r = run([GST_RUN, "--timeout", "20", f"memhalsrc socket={sock} ! fakesink"], timeout=30)
    server.communicate(timeout=60)
    if r.returncode != 1 or "planar_rgba" not in r.stderr or "not-negotiated" not in r.stderr:
        fail(f"expected not-negotiated naming planar_rgba, got rc={r.returncode}: {r.stderr}")
    print("unsupported_caps (memhalsrc):", " ".join(r.stderr.split())[:300])


def from_program():
    """A memhal C++ program serves NV12 frames; memhalsrc reads them, bytes and PTS intact."""
    sock = socket_path("program.sock")
    server = subprocess.Popen([SERVER, sock, "nv12", "100"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    wait_for(sock)
    r = run([GST_RUN, "--timeout", "60", "memhalsrc name=src socket=" + sock +
             " ! video/x-raw,format=NV12,width=320,height=240,framerate=25/1 ! checksumsink", "src.memories"],
            env=perf_env())
    s_out, s_err = server.communicate(timeout=60)
    if server.returncode != 0 or r.returncode != 0:
        fail(f"server rc={server.returncode} {s_err} / pipeline rc={r.returncode} {r.stderr[-2000:]}")
    sent = [l for l in s_out.splitlines() if len(l.split()) == 2]
    got = [l for l in r.stdout.splitlines() if len(l.split()) == 2]
    if len(sent) != 100 or got != sent:
        fail(f"memhalsrc got {len(got)} frames, {sum(a != b for a, b in zip(got, sent))} differ from the {len(sent)} sent")
    if copy_lines(r.stderr):
        fail("copies: " + "\n".join(copy_lines(r.stderr)[:5]))
    print("from_program: 100 frames, checksums and PTS equal;", r.stdout.splitlines()[-1])


def demo_serve():
    """`memhal demo --serve S`: memhalsrc connects while the demo runs and receives its frames; a
    second consumer that leaves after 5 frames is dropped; a third that keeps every frame (never
    releases) is dropped once the camera has waited for a buffer, and the demo goes on; the demo's
    own checks still pass."""
    sock = socket_path("demo.sock")
    demo = subprocess.Popen([MEMHAL_CLI, "demo", "--frames", "60", "--fps", "20", "--size", "320x240",
                             "--serve", sock],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(sock)
    quitter = subprocess.Popen([CHECKSUMS, sock, "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hoarder = subprocess.Popen([CHECKSUMS, sock, "-1", "hold"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    r = run([GST_RUN, "--timeout", "60", f"memhalsrc name=src socket={sock} ! checksumsink", "src.frames"],
            timeout=90)
    d_out, d_err = demo.communicate(timeout=60)
    q_out, q_err = quitter.communicate(timeout=30)
    h_out, h_err = hoarder.communicate(timeout=30)
    if quitter.returncode != 0 or len(hashes(q_out)) != 5:
        fail(f"the consumer that leaves read {len(hashes(q_out))} frames, rc={quitter.returncode}: {q_err}")
    if demo.returncode != 0 or "checksum_errors=0 " not in d_out.splitlines()[-1]:
        fail(f"demo rc={demo.returncode}: {d_out[-2000:]} {d_err[-2000:]}")
    if "dropping a consumer" not in d_err:
        fail("the demo did not drop the consumer that left: " + d_err[-2000:])
    if "for a free buffer; dropping it" not in d_err or hoarder.returncode != 0 or len(hashes(h_out)) >= 60:
        fail(f"the demo did not drop the consumer that keeps frames (it read {len(hashes(h_out))}): {d_err[-2000:]}")
    if r.returncode != 0:
        fail(f"memhalsrc pipeline rc={r.returncode}: {r.stderr[-2000:]}")
    got = hashes(r.stdout)
    frames = [l for l in r.stdout.splitlines() if l.startswith("src.frames=")]
    if len(got) < 10 or frames != [f"src.frames={len(got)}"]:
        fail(f"memhalsrc received {len(got)} frames ({frames}): {r.stderr[-2000:]}")
    served = [l for l in d_out.splitlines() if l.startswith("memhal demo: served ")]
    print(f"demo_serve: memhalsrc received {len(got)} of 60 frames; the hoarder was dropped after "
          f"{len(hashes(h_out))};", served, d_out.splitlines()[-1])


# memhalconvert properties and caps, and the `memhal convert` options that do the same, on 320x240
# input frames; the output is the element's raw buffers (multifilesink: no GstVideoMeta, so
# memhalconvert writes GStreamer's default layout, packed for these widths) and the CLI's .raw.
CONVERT_CASES = [
    ("nv12", "resize=letterbox pad=0,0,0", "video/x-raw,format=RGB,width=640,height=640",
     "--to rgb --out-size 640x640 --letterbox --pad 0,0,0"),
    ("nv12", "crop=10,20,200,100 flip=horizontal interpolation=nearest", "video/x-raw,format=BGR,width=160,height=120",
     "--to bgr --out-size 160x120 --crop 10,20,200,100 --flip horizontal --interp nearest"),
    ("nv12", "rotation=cw90", "video/x-raw,format=RGBA", "--to rgba --out-size 240x320 --rotate cw90"),
    ("nv12", "flip=vertical matrix=bt709 range=full", "video/x-raw,format=I420",
     "--to i420 --out-size 320x240 --flip vertical --matrix bt709 --range full"),
    ("nv12", "interpolation=area", "video/x-raw,format=YUY2,width=160,height=120",
     "--to yuyv --out-size 160x120 --interp area"),
    ("nv12", "", "video/x-raw,format=GRAY8", "--to grey --out-size 320x240"),
    ("nv12", "swap-rb=true", "video/x-raw,format=RGBP,width=224,height=224", "--to planar_rgb --out-size 224x224 --swap-rb"),
    ("yuy2", "rotation=cw180", "video/x-raw,format=BGRA", "--to bgra --out-size 320x240 --rotate cw180"),
    ("i420", "crop=0,0,64,64", "video/x-raw,format=NV12,width=128,height=128", "--to nv12 --out-size 128x128 --crop 0,0,64,64"),
    ("rgb", "", "video/x-raw,format=NV12", "--to nv12 --out-size 320x240"),
    ("nv12", "resize=letterbox mean=0.485,0.456,0.406 std=0.229,0.224,0.225",
     "other/tensors,types=float32,dimensions=640:640:3:1",
     "--to planar_rgb --dtype f32 --out-size 640x640 --letterbox --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225"),
    ("nv12", "", "other/tensors,types=uint8,dimensions=3:300:200:1", "--to rgb --dtype u8 --out-size 300x200"),
    ("nv12", "", "other/tensors,types=int8,dimensions=320:240:3:1", "--to planar_rgb --dtype i8 --out-size 320x240"),
    ("nv12", "resize=letterbox", "other/tensors,types=float16,dimensions=256:256:3",
     "--to planar_rgb --dtype f16 --out-size 256x256 --letterbox"),
]
GST_NAMES = {"nv12": "NV12", "yuy2": "YUY2", "i420": "I420", "rgb": "RGB"}
MEMHAL_NAMES = {"nv12": "nv12", "yuy2": "yuyv", "i420": "i420", "rgb": "rgb"}


def convert_cli():
    """memhalconvert's output equals `memhal convert`'s on the same frames, byte for byte."""
    frames = 3
    for n, (fmt, props, caps, cli) in enumerate(CONVERT_CASES):
        d = os.path.join(WORK, f"case{n}")
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        r = run([GST_RUN, "--timeout", "60",
                 f"videotestsrc num-buffers={frames} pattern=ball ! video/x-raw,format={GST_NAMES[fmt]},width=320,height=240"
                 f" ! tee name=t t. ! queue ! multifilesink location={d}/in_%d t. ! queue ! "
                 f"memhalconvert name=c {props} ! {caps} ! multifilesink location={d}/out_%d", "c.conversions"])
        if r.returncode != 0 or f"c.conversions={frames}" not in r.stdout:
            fail(f"case {n} ({props} ! {caps}): rc={r.returncode} {r.stdout} {r.stderr[-2000:]}")
        for i in range(frames):
            ref = os.path.join(d, f"cli_{i}.raw")
            c = run([MEMHAL_CLI, "convert", os.path.join(d, f"in_{i}"), ref, "--size", "320x240", "--format",
                     MEMHAL_NAMES[fmt], "--backend", "cpu"] + cli.split())
            if c.returncode != 0:
                fail(f"case {n}: memhal convert {cli}: {c.stderr}")
            with open(ref, "rb") as a, open(os.path.join(d, f"out_{i}"), "rb") as b:
                want, got = a.read(), b.read()
            if want != got:
                diff = sum(x != y for x, y in zip(want, got))
                fail(f"case {n} frame {i} ({props} ! {caps}): {len(got)} bytes from memhalconvert, {len(want)} from "
                     f"`memhal convert {cli}`, {diff} differ")
        print(f"convert_cli: {GST_NAMES[fmt]} {props or '(defaults)'} ! {caps}: {frames} frames equal")


def convert_videoconvert():
    """memhalconvert vs videoconvert, NV12 → RGB at the same size. videoconvert with dither=none
    chroma-mode=none reads each pixel's own chroma cell as memhal does; what is left is its 8-bit
    integer matrix (Y=235 white comes out 253, memhal's 255): every channel within 5, mean within 2.
    (With chroma-mode on, videoconvert interpolates chroma for its siting and differs at colour edges.)"""
    for pattern, (w, h) in (("smpte", (640, 480)), ("ball", (1280, 720))):
        r = run([GST_RUN, "--timeout", "60",
                 f"videotestsrc num-buffers=2 pattern={pattern} ! video/x-raw,format=NV12,width={w},height={h} ! "
                 f"tee name=t t. ! queue ! videoconvert dither=none chroma-mode=none ! video/x-raw,format=RGB ! "
                 f"multifilesink location={WORK}/vc_%d t. ! queue ! memhalconvert ! video/x-raw,format=RGB ! "
                 f"multifilesink location={WORK}/mc_%d"])
        if r.returncode != 0:
            fail(f"pipeline rc={r.returncode}: {r.stderr[-2000:]}")
        for i in range(2):
            with open(f"{WORK}/vc_{i}", "rb") as a, open(f"{WORK}/mc_{i}", "rb") as b:
                vc, mc = a.read(), b.read()
            if len(vc) != w * h * 3 or len(mc) != len(vc):
                fail(f"sizes {len(vc)} and {len(mc)}, not {w * h * 3}")
            diffs = [abs(x - y) for x, y in zip(vc, mc)]
            worst, mean = max(diffs), sum(diffs) / len(diffs)
            if worst > 5 or mean > 2:
                fail(f"{pattern} {w}x{h} frame {i}: max |diff| {worst}, mean {mean:.3f} (tolerance 5, 2)")
        print(f"convert_videoconvert: {pattern} {w}x{h}: max |diff| {worst}, mean {mean:.3f}")


def vivid_dmabuf():
    """In the DMA-heap VM with vivid: v4l2src io-mode=dmabuf ! memhalsink passes each DMA-BUF by fd
    to a memhal C++ consumer — no copy (memhalsink's counter and the GST_PERFORMANCE log), the
    consumer's frames are DmaBuf, and each V4L2 buffer is registered on the Channel once."""
    runner, plugin = os.environ["MEMHAL_DMAHEAP_VM"], os.environ["MEMHAL_GST_PLUGIN"]
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vm")
    frames = 100
    r = run(["bash", f"{script}/run_gst_vm.sh", runner, plugin, GST_RUN, CHECKSUMS, f"{script}/vivid.sh",
             "dmabuf", "640", "480", str(frames)], timeout=840)
    if r.returncode == 77:
        print(r.stderr.strip())
        sys.exit(77)
    out = r.stdout
    log = out.split("--- producer.log")[1].split("--- consumer.log")[0] if "--- producer.log" in out else ""
    summary = [l for l in out.splitlines() if l.startswith("frame_checksums: ")]
    if r.returncode != 0 or "consumer.rc=0" not in out or "producer.rc=0" not in out:
        fail(f"VM run rc={r.returncode}: {out[-3000:]} {r.stderr[-3000:]}")
    if "sink.copies=0" not in out or f"sink.frames={frames}" not in out:
        fail("memhalsink copied or lost frames: " + out[:2000])
    if copy_lines(log):
        fail("GST_PERFORMANCE log has copies: " + "\n".join(copy_lines(log)[:5]))
    if not summary or f"frames={frames} memory=dmabuf " not in summary[0]:
        fail(f"the consumer did not get {frames} DmaBuf frames: {summary} {out[-2000:]}")
    # A V4L2 queue has at most 32 buffers (VIDEO_MAX_FRAME); v4l2src adds some (CREATE_BUFS) while
    # consumers hold frames, so the count varies from run to run, but each crosses once.
    buffers = int(summary[0].split("buffers=")[1])
    if buffers > 32:
        fail(f"{buffers} buffers registered for {frames} frames: v4l2src's DMA-BUFs were sent anew each frame")
    print(f"vivid_dmabuf: {frames} frames of v4l2src io-mode=dmabuf by fd, 0 copies;", summary[0])


def convert_to_sink():
    """memhalconvert writes into the pool memhalsink proposes: a memhal consumer gets every
    converted frame, and memhalsink copies none."""
    sock = socket_path("convert.sock")
    prod = subprocess.Popen([GST_RUN, "--timeout", "60",
                             "videotestsrc num-buffers=30 ! video/x-raw,format=NV12,width=640,height=480 ! "
                             "memhalconvert name=c resize=letterbox ! video/x-raw,format=RGB,width=320,height=320 ! "
                             f"memhalsink name=sink socket={sock} wait-consumers=1", "sink.copies", "c.conversions"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(sock)
    cons = run([CHECKSUMS, sock])
    p_out, p_err = prod.communicate(timeout=60)
    if prod.returncode != 0 or cons.returncode != 0 or len(hashes(cons.stdout)) != 30:
        fail(f"producer rc={prod.returncode} {p_err[-2000:]} / consumer rc={cons.returncode} "
             f"{len(hashes(cons.stdout))} frames {cons.stderr}")
    if "sink.copies=0" not in p_out or "c.conversions=30" not in p_out:
        fail("memhalconvert did not write into memhalsink's pool: " + p_out)
    print("convert_to_sink: 30 frames converted into memhalsink's pool,", " ".join(p_out.split()))


def convert_errors():
    """Bad properties and caps memhalconvert cannot produce: an ERROR that says which, no hang."""
    src = "videotestsrc num-buffers=3 ! video/x-raw,format=NV12,width=320,height=240"
    cases = [
        (f"{src} ! memhalconvert flip=diagonal ! fakesink", ["flip='diagonal'", "none|horizontal|vertical|both"]),
        (f"{src} ! memhalconvert pad=1,2 ! fakesink", ["pad='1,2'", "3 to 4"]),
        (f"{src} ! memhalconvert std=0 ! fakesink", ["std='0'"]),
        (f"{src} ! memhalconvert matrix=bt2020 ! fakesink", ["matrix='bt2020'", "auto"]),
        (f"{src} ! memhalconvert crop=300,0,100,100 ! fakesink", ["not-negotiated", "crop 300,0,100,100", "320x240"]),
        (f"{src} ! memhalconvert ! video/x-raw,format=NV12,width=641,height=480 ! fakesink",
         ["not-negotiated", "width=(int)641", "multiple"]),
        (f"{src} ! memhalconvert ! other/tensors,types=float32,dimensions=640:640:4:1 ! fakesink",
         ["not-negotiated", "dimensions=640:640:4:1"]),
        (f"{src} ! memhalconvert ! video/x-raw,format=Y444 ! fakesink", ["could not link", "memhalconvert"]),
    ]
    for desc, needles in cases:
        r = run([GST_RUN, "--timeout", "20", desc], timeout=30)
        text = r.stderr + r.stdout
        if r.returncode == 0 or any(n not in text for n in needles):
            fail(f"{desc}: expected an error with {needles}, got rc={r.returncode}: {text[-1500:]}")
        print("convert_errors:", " ".join(text.split())[:220])


{"roundtrip": roundtrip, "no_server": no_server, "consumer_drop": consumer_drop,
 "unsupported_caps": unsupported_caps, "from_program": from_program, "copied": copied,
 "rtp_loopback": rtp_loopback, "demo_serve": demo_serve, "convert_cli": convert_cli,
 "convert_videoconvert": convert_videoconvert, "convert_to_sink": convert_to_sink, "vivid_dmabuf": vivid_dmabuf, "convert_errors": convert_errors}[CASE]()
