"""memhal.V4l2Camera against vivid inside the DMA-heap VM (run by python/vm/run_in_vm.sh): frames
that are the capture buffers, numpy and DLPack over them, Busy when every buffer is held, and
each buffer back to the driver when its last holder (frame, tensor, map, numpy array) is gone."""
import numpy as np
import memhal
cams = memhal.list_cameras()
path = [c for c in cams if c["driver"] == "vivid"][0]["path"]
cam = memhal.V4l2Camera(path, width=640, height=480, format="yuyv", fps=30, buffers=4, io="dmabuf-import")
assert cam.io == "dmabuf-import", cam.io_notes
frames = []
for frame in cam:
    frames.append(frame)
    if len(frames) == 4:
        break
try:
    cam.next_frame(timeout=1)
    raise SystemExit("FAIL: next_frame with every buffer held did not answer BusyError")
except memhal.BusyError as e:
    assert "4 held" in str(e), e
t = frames[0].to_tensor()
with t.map("read") as m:
    img = np.asarray(m)
    assert img.shape == (480, 640, 2), img.shape
    luma = [int(img[300, (2 * b + 1) * 40, 0]) for b in range(8)]
assert all(abs(x - y) <= 2 for x, y in zip(luma, [179, 160, 130, 111, 83, 64, 34, 16])), luma
del m, img
a = np.from_dlpack(t)
assert a.shape == (480, 640, 2) and int(a[300, 40, 0]) == luma[0]
print("dlpack:", a.shape)
assert cam.stats()["held"] == 4
del frames, frame
if a is not None:
    assert cam.stats()["held"] == 1  # the dlpack export still holds it
    del a
del t
assert cam.stats()["held"] == 0, cam.stats()
print("python camera OK", luma, cam.stats())
