"""memhal.V4l2Camera and memhal.list_cameras: errors everywhere; frames from a real camera
(vivid, or any V4L2 capture device) where one exists, skipped with the reason elsewhere."""
from __future__ import annotations

import os

import numpy as np
import pytest

import memhal


def test_a_missing_device_is_unavailable_and_names_it() -> None:
    with pytest.raises(memhal.UnavailableError, match="/dev/video-memhal-none"):
        memhal.V4l2Camera("/dev/video-memhal-none")


def test_something_that_is_not_a_camera_is_refused() -> None:
    with pytest.raises(memhal.InvalidArgumentError, match="not a V4L2 device"):
        memhal.V4l2Camera("/dev/null")


@pytest.mark.parametrize(
    "kwargs, message",
    [({"io": "fast"}, "io: expected 'auto', 'mmap' or 'dmabuf-import'"),
     ({"fourcc": "NV1"}, "fourcc: expected four characters"),
     ({"format": "nv13"}, "format: unknown PixelFormat 'nv13'")],
)
def test_bad_options_are_refused_before_the_device_is_touched(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(memhal.InvalidArgumentError, match=message):
        memhal.V4l2Camera("/dev/null", **kwargs)  # type: ignore[arg-type]


def test_list_cameras_describes_every_capture_device() -> None:
    cameras = memhal.list_cameras()
    assert isinstance(cameras, list)
    for camera in cameras:
        assert camera["path"].startswith("/dev/video")
        assert {"driver", "card", "bus", "multi_planar", "formats"} <= camera.keys()
        for fmt in camera["formats"]:
            assert len(fmt["fourcc"]) >= 4
            for width, height, rates in fmt["sizes"]:
                assert width > 0 and height > 0 and all(r > 0 for r in rates)


def a_camera() -> str:
    cameras = [c for c in memhal.list_cameras() if any(f["format"] is not None for f in c["formats"])]
    if not cameras:
        if os.environ.get("MEMHAL_TEST_REQUIRE_CAMERA"):
            pytest.fail("no V4L2 capture device memhal can read")
        pytest.skip("no V4L2 capture device here (the C++ and C camera tests run in the DMA-heap VM with vivid)")
    path: str = cameras[0]["path"]
    return path


def test_frames_are_the_drivers_buffers_and_export_to_numpy() -> None:
    camera = memhal.V4l2Camera(a_camera(), buffers=4, io="mmap")
    assert camera.io == "mmap" and camera.buffers >= 2
    frames = []
    for frame in camera:
        frames.append(frame)
        if len(frames) == 2:
            break
    assert frames[1].sequence > frames[0].sequence
    assert frames[0].domain == memhal.MemoryDomainKind.DMABUF
    tensor = frames[0].to_tensor()
    assert tensor.pixel_format == camera.format
    with tensor.map("read") as m:
        assert np.asarray(m).size > 0
    assert camera.stats()["held"] == 2
    del frames, frame, tensor, m
    assert camera.stats()["held"] == 0
