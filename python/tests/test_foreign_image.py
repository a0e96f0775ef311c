"""Foreign host images in place: Tensor.image_from_buffer and Tensor.from_numpy(format=)."""
from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import memhal

W, H = 64, 32


def nv12_rows(seed: int = 1) -> npt.NDArray[np.uint8]:
    """An NV12 image as OpenCV holds it: one uint8 array of shape (h * 3 / 2, w)."""
    return np.random.default_rng(seed).integers(0, 256, size=(H * 3 // 2, W), dtype=np.uint8)


def rgb_of(src: memhal.Tensor) -> npt.NDArray[Any]:
    dst = memhal.Tensor.image(W, H, "rgb", memory="mem")
    memhal.ImageProcessor(threads=1, backend="cpu").convert(src, dst)
    with dst.map("read") as m:
        return np.asarray(m).copy()


def test_an_nv12_array_is_an_image_in_place_both_ways() -> None:
    rows = nv12_rows()
    t = memhal.Tensor.from_numpy(rows, format="nv12")
    assert t.pixel_format == memhal.PixelFormat.NV12 and t.shape == (H, W)
    assert [(p["offset"], p["pitch"]) for p in t.planes] == [(0, W), (W * H, W)]
    rows[H + 3, 5] = 201  # chroma row 3, through the source
    with t.map("read_write") as m:
        assert np.asarray(m.plane(1))[3, 5] == 201
        np.asarray(m.plane(0))[2, 7] = 99  # luma, through memhal
    assert rows[2, 7] == 99


def test_convert_reads_a_wrapped_nv12_image_like_an_allocated_copy() -> None:
    rows = nv12_rows(7)
    wrapped = memhal.Tensor.from_numpy(rows, format="nv12")
    allocated = memhal.Tensor.image(W, H, "nv12", memory="mem")
    with allocated.map("write") as m:
        np.asarray(m.plane(0))[:] = rows[:H]
        np.asarray(m.plane(1))[:] = rows[H:]
    expected = rgb_of(allocated)
    assert expected.any()
    np.testing.assert_array_equal(rgb_of(wrapped), expected)
    bytes_image = memhal.Tensor.image_from_buffer(rows.tobytes(), W, H, "nv12")
    np.testing.assert_array_equal(rgb_of(bytes_image), expected)


def test_image_shaped_arrays_take_their_numpy_conventions() -> None:
    hwc = np.zeros((H, W, 3), dtype=np.uint8)
    assert memhal.Tensor.from_numpy(hwc, format="bgr").pixel_format == memhal.PixelFormat.BGR
    chw = np.zeros((3, H, W), dtype=np.float32)
    planar = memhal.Tensor.from_numpy(chw, format="planar_rgb")
    assert planar.pixel_format == memhal.PixelFormat.PLANAR_RGB and planar.shape == (3, H, W)
    grey = memhal.Tensor.from_numpy(np.zeros((H, W), dtype=np.uint8), format="grey")
    assert grey.shape == (H, W, 1)
    i420 = memhal.Tensor.from_numpy(np.zeros((H * 3 // 2, W), dtype=np.uint8), format="i420")
    assert [(p["offset"], p["pitch"]) for p in i420.planes] == [(0, W), (W * H, W // 2), (W * H * 5 // 4, W // 2)]
    # A padded NV12 view (a crop of a wider buffer) keeps its row pitch.
    wide = np.zeros((H * 3 // 2, W + 16), dtype=np.uint8)
    padded = memhal.Tensor.from_numpy(wide[:, :W], format="nv12")
    assert [p["pitch"] for p in padded.planes] == [W + 16, W + 16]
    copy = memhal.Tensor.from_numpy(hwc, copy=True, format="rgb")
    assert copy.pixel_format == memhal.PixelFormat.RGB and not copy.same_storage(
        memhal.Tensor.from_numpy(hwc, format="rgb"))


def test_image_from_buffer_takes_per_plane_pitches_and_offsets() -> None:
    pitch, chroma = 80, 80 * H + 96
    buffer = bytearray(chroma + pitch * H // 2)
    t = memhal.Tensor.image_from_buffer(buffer, W, H, memhal.PixelFormat.NV12, strides=[pitch, pitch],
                                        offsets=[0, chroma])
    assert [(p["offset"], p["pitch"]) for p in t.planes] == [(0, pitch), (chroma, pitch)]
    buffer[chroma + pitch + 4] = 55
    with t.map("read") as m:
        assert np.asarray(m.plane(1))[1, 4] == 55
    same = memhal.Tensor.image_from_buffer(buffer, W, H, "nv12", strides=pitch, offsets=[0, chroma])
    assert same.planes == t.planes
    yuyv = memhal.Tensor.image_from_buffer(bytearray(W * 2 * H), W, H, "yuyv")
    assert yuyv.shape == (H, W, 2) and yuyv.pixel_format == memhal.PixelFormat.YUYV


def test_a_read_only_bytes_object_gives_a_read_only_image() -> None:
    data = bytes(range(256)) * (W * H * 3 // 2 // 256)
    t = memhal.Tensor.image_from_buffer(data, W, H, "nv12")
    with pytest.raises(memhal.PermissionDeniedError, match="read-only"):
        t.map("write")
    with t.map("read") as m:
        assert np.asarray(m.plane(0))[0, 5] == 5


def test_the_exporter_lives_until_the_last_tensor_map_and_frame_and_no_longer() -> None:
    data = bytes(W * H * 3 // 2)
    baseline = sys.getrefcount(data)
    t = memhal.Tensor.image_from_buffer(data, W, H, "nv12")
    assert sys.getrefcount(data) > baseline
    crop = t.crop(16, 8, 32, 16)
    m = t.map("read")
    frame = memhal.Frame.from_tensor(t)
    branches = memhal.Tee(2).push(frame)
    back = branches[1].to_tensor()
    del t, crop, frame, branches
    gc.collect()
    assert sys.getrefcount(data) > baseline
    del back
    gc.collect()
    assert sys.getrefcount(data) > baseline  # the open map still reads it
    m.close()
    gc.collect()
    assert sys.getrefcount(data) == baseline


def test_an_array_is_released_by_gc_after_its_last_image() -> None:
    rows = nv12_rows()
    watch = weakref.ref(rows)
    t = memhal.Tensor.from_numpy(rows, format="nv12")
    frame = memhal.Frame.from_tensor(t)
    del rows, t
    gc.collect()
    assert watch() is not None
    del frame
    gc.collect()
    assert watch() is None


def test_a_dlpack_exporter_is_a_buffer_too() -> None:
    class Exporter:
        def __init__(self, array: npt.NDArray[np.uint8]) -> None:
            self.array = array

        def __dlpack__(self, **kwargs: Any) -> Any:
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self) -> tuple[int, int]:
            return self.array.__dlpack_device__()

    rows = nv12_rows(3)
    t = memhal.Tensor.image_from_buffer(Exporter(rows.reshape(-1)), W, H, "nv12")
    with t.map("read") as m:
        np.testing.assert_array_equal(np.asarray(m.plane(1)), rows[H:])


@pytest.mark.parametrize("call, error, says", [
    (lambda: memhal.Tensor.image_from_buffer(bytes(100), W, H, "nv12"), memhal.OutOfRangeError, "needs 3072 bytes"),
    (lambda: memhal.Tensor.image_from_buffer(bytes(4096), W, H, "nv12", strides=[63, 64]),
     memhal.InvalidArgumentError, "pitch 63"),
    (lambda: memhal.Tensor.image_from_buffer(bytes(4096), W, H, "nv12", strides=[64]),
     memhal.InvalidArgumentError, "2 planes, 1 strides"),
    (lambda: memhal.Tensor.image_from_buffer(bytes(4096), W, H, "nv13"), memhal.InvalidArgumentError, "nv13"),
    (lambda: memhal.Tensor.image_from_buffer(bytes(4096), 1 << 62, H, "nv12"), memhal.InvalidArgumentError, "size"),
    (lambda: memhal.Tensor.image_from_buffer(bytes(4096), W, H, "nv12", strides=1 << 62),
     memhal.InvalidArgumentError, "outside"),
    (lambda: memhal.Tensor.image_from_buffer(None, W, H, "nv12"), memhal.InvalidArgumentError, "NoneType"),
    (lambda: memhal.Tensor.image_from_buffer(bytes(4096), W, H, "planar_rgb", offsets=[0, 100, 300]),
     memhal.InvalidArgumentError, "evenly spaced"),
    (lambda: memhal.Tensor.from_numpy(np.zeros((H * 3 // 2 + 1, W), np.uint8), format="nv12"),
     memhal.InvalidArgumentError, "2-D array"),
    (lambda: memhal.Tensor.from_numpy(np.zeros((H * 3 // 2, W + 8), np.uint8)[:, :W], format="i420"),
     memhal.InvalidArgumentError, "row padding"),
    (lambda: memhal.Tensor.from_numpy(np.zeros((H, W, 4), np.uint8), format="rgb"),
     memhal.InvalidArgumentError, "is not a rgb image"),
])
def test_bad_inputs_are_clear_errors(call: Callable[[], object], error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        call()


def test_a_refused_array_is_not_kept() -> None:
    array = np.zeros((H, W, 4), np.uint8)
    watch = weakref.ref(array)
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.Tensor.from_numpy(array, format="rgb")
    del array
    gc.collect()
    assert watch() is None
