#!/usr/bin/env python3
"""The memhal GStreamer plugin across processes (CTest label `gst`).

Usage: gst_tests.py CASE GST_RUN FRAME_CHECKSUMS FRAME_SERVER WORKDIR [MEMHAL_CLI]
Cases: roundtrip, no_server, consumer_drop, unsupported_caps, from_program, copied, rtp_loopback,
demo_serve (needs MEMHAL_CLI, the `memhal` command). GST_PLUGIN_PATH and GST_REGISTRY
come from the environment (CTest sets them to the build's plugin).
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
    second consumer that leaves after 5 frames is dropped; the demo's own checks still pass."""
    sock = socket_path("demo.sock")
    demo = subprocess.Popen([MEMHAL_CLI, "demo", "--frames", "60", "--fps", "20", "--size", "320x240",
                             "--serve", sock],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(sock)
    quitter = subprocess.Popen([CHECKSUMS, sock, "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    r = run([GST_RUN, "--timeout", "60", f"memhalsrc name=src socket={sock} ! checksumsink", "src.frames"],
            timeout=90)
    d_out, d_err = demo.communicate(timeout=60)
    q_out, q_err = quitter.communicate(timeout=30)
    if quitter.returncode != 0 or len(hashes(q_out)) != 5:
        fail(f"the consumer that leaves read {len(hashes(q_out))} frames, rc={quitter.returncode}: {q_err}")
    if demo.returncode != 0 or "checksum_errors=0 " not in d_out.splitlines()[-1]:
        fail(f"demo rc={demo.returncode}: {d_out[-2000:]} {d_err[-2000:]}")
    if "dropping a consumer" not in d_err:
        fail("the demo did not drop the consumer that left: " + d_err[-2000:])
    if r.returncode != 0:
        fail(f"memhalsrc pipeline rc={r.returncode}: {r.stderr[-2000:]}")
    got = hashes(r.stdout)
    frames = [l for l in r.stdout.splitlines() if l.startswith("src.frames=")]
    if len(got) < 10 or frames != [f"src.frames={len(got)}"]:
        fail(f"memhalsrc received {len(got)} frames ({frames}): {r.stderr[-2000:]}")
    served = [l for l in d_out.splitlines() if l.startswith("memhal demo: served ")]
    print(f"demo_serve: memhalsrc received {len(got)} of 60 frames;", served, d_out.splitlines()[-1])


{"roundtrip": roundtrip, "no_server": no_server, "consumer_drop": consumer_drop,
 "unsupported_caps": unsupported_caps, "from_program": from_program, "copied": copied,
 "rtp_loopback": rtp_loopback, "demo_serve": demo_serve}[CASE]()
