"""memhal.Tensor and memhal.TensorMap: allocation, views, maps and the buffer protocol."""
from __future__ import annotations

import os
from typing import Any, cast

import numpy as np
import pytest

import memhal


def buffer_of(m: memhal.TensorMap) -> memoryview:
    """memoryview(m): a TensorMap exports the buffer protocol, which the stub cannot declare to mypy's typeshed
    (whose memoryview takes only the builtin buffer types)."""
    return memoryview(cast(Any, m))


def test_a_new_tensor_reports_shape_row_major_byte_strides_dtype_and_name() -> None:
    t = memhal.Tensor((2, 3, 4), "f32", name="input")
    assert t.shape == (2, 3, 4)
    assert t.strides == (48, 16, 4)
    assert t.dtype == memhal.DType.F32
    assert t.nbytes == 96
    assert t.name == "input"
    assert t.is_contiguous
    assert isinstance(t.memory, memhal.MemoryKind)


def test_auto_selection_says_why_it_skipped_dmabuf_when_no_heap_serves() -> None:
    t = memhal.Tensor((4,), "u8")
    if t.memory == memhal.MemoryKind.DMABUF:
        pytest.skip("a DMA heap served this tensor: nothing was skipped")
    assert t.memory == memhal.MemoryKind.MEM
    if not memhal.force_mem_requested():
        assert "dmabuf" in t.allocation_notes


def test_a_pinned_kind_that_cannot_serve_fails_instead_of_falling_back() -> None:
    with pytest.raises(memhal.UnimplementedError) as info:
        memhal.Tensor((4,), "u8", memory="iosurface")
    assert info.value.code == memhal.ErrorCode.NOT_IMPLEMENTED
    assert "iosurface" in info.value.message.lower()
    assert isinstance(info.value, NotImplementedError)


def test_a_negative_dimension_is_an_invalid_argument_with_code_and_message() -> None:
    with pytest.raises(memhal.InvalidArgumentError) as info:
        memhal.Tensor((2, -1), "u8")
    assert info.value.code == memhal.ErrorCode.INVALID_ARGUMENT
    assert "-1" in info.value.message


def test_numpy_asarray_of_a_write_map_shares_the_tensor_memory() -> None:
    t = memhal.Tensor((3, 4), "i32", memory="mem")
    with t.map("write") as m:
        np.asarray(m)[:] = np.arange(12, dtype=np.int32).reshape(3, 4)
    with t.map("read") as m:
        np.testing.assert_array_equal(np.asarray(m), np.arange(12).reshape(3, 4))


def test_a_read_map_exports_a_read_only_buffer() -> None:
    t = memhal.Tensor((4,), "f64", memory="mem")
    with t.map("read") as m:
        a = np.asarray(m)
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0] = 1.0
        assert buffer_of(m).readonly
        del a


def test_mapping_for_no_access_is_an_invalid_argument() -> None:
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.Tensor((4,), "u8").map("none")


def test_closing_a_map_with_an_array_alive_keeps_the_array_valid_and_refuses_new_exports() -> None:
    t = memhal.Tensor((5,), "u8", memory="mem")
    with t.map("read_write") as m:
        a = np.asarray(m)
    assert m.closed
    a[:] = 9  # still backed by the mapping: the unmap waits for this array
    with pytest.raises(BufferError):
        buffer_of(m)  # (numpy.asarray would fall back to a 0-d object array)
    del a
    with t.map("read") as m2:
        assert list(np.asarray(m2)) == [9] * 5


def test_views_share_storage_and_see_writes_through_the_parent() -> None:
    t = memhal.Tensor((4, 6), "u16", memory="mem")
    with t.map("write") as m:
        np.asarray(m)[:] = np.arange(24, dtype=np.uint16).reshape(4, 6)
    reference = np.arange(24, dtype=np.uint16).reshape(4, 6)
    views = {
        "slice": (t.slice(0, 1, 3), reference[1:3]),
        "flip": (t.flip(1), reference[:, ::-1]),
        "transpose": (t.transpose(0, 1), reference.T),
        "permute": (t.permute([1, 0]), reference.T),
        "reshape": (t.reshape((2, 12)), reference.reshape(2, 12)),
    }
    for name, (view, expected) in views.items():
        assert memhal.same_storage(view, t), name
        with view.map("read") as m:
            np.testing.assert_array_equal(np.asarray(m), expected, err_msg=name)


def test_out_of_range_views_are_errors_not_clamps() -> None:
    t = memhal.Tensor((4, 6), "u8")
    with pytest.raises(memhal.OutOfRangeError) as info:
        t.slice(0, 2, 5)
    assert info.value.code == memhal.ErrorCode.OUT_OF_RANGE
    with pytest.raises(memhal.Error):
        t.transpose(0, 1).reshape((24,))


def test_materialize_makes_a_dense_copy_on_new_storage() -> None:
    t = memhal.Tensor((3, 3), "f32", memory="mem")
    with t.map("write") as m:
        np.asarray(m)[:] = np.arange(9, dtype=np.float32).reshape(3, 3)
    dense = t.transpose(0, 1).materialize()
    assert dense.is_contiguous
    assert not memhal.same_storage(dense, t)
    with dense.map("read") as m:
        np.testing.assert_array_equal(np.asarray(m), np.arange(9).reshape(3, 3).T)


def test_an_nv12_image_maps_as_two_planes_with_their_pitch() -> None:
    img = memhal.Tensor.image(16, 8, memhal.PixelFormat.NV12, memory="mem")
    assert img.pixel_format == memhal.PixelFormat.NV12
    assert img.shape == (8, 16)
    assert [p["height"] for p in img.planes] == [8, 4]
    with img.map("write") as m:
        with pytest.raises(BufferError, match="plane"):
            buffer_of(m)
        y, uv = np.asarray(m.plane(0)), np.asarray(m.plane(1))
        assert y.shape == (8, 16) and uv.shape == (4, 16)
        assert y.strides[0] == img.planes[0]["pitch"]
        y[:] = 200
        uv[:] = 50
        del y, uv
    crop = img.crop(0, 0, 8, 4)
    with crop.map("read") as m:
        assert np.asarray(m.plane(0)).min() == 200
        assert np.asarray(m.plane(1)).max() == 50
    with pytest.raises(memhal.OutOfRangeError):
        img.map("read").plane(2)


def test_an_shm_tensor_shared_through_its_fd_sees_the_same_bytes() -> None:
    if not memhal.is_available("shm"):
        pytest.skip("shm unavailable: " + memhal.availability("shm").reason)
    t = memhal.Tensor((64,), "u8", memory="shm")
    assert t.fd() >= 0
    fd = t.clone_fd()
    try:
        other = memhal.Tensor.from_fd(fd, (64,), "u8")
    finally:
        os.close(fd)  # from_fd duplicated it
    assert other.memory == memhal.MemoryKind.SHM
    with other.map("write") as m:
        np.asarray(m)[:] = 77
    with t.map("read") as m:
        assert np.asarray(m).tolist() == [77] * 64


@pytest.mark.parametrize("shape, says", [
    ((1 << 63,), "int64 range"),
    (1 << 63, "int64 range"),
    ((2, -(1 << 64)), "dimension 1"),
    ((2.5, 3), "dimension 0: expected an int, got float"),
    ((2, "3"), "dimension 1: expected an int, got str"),
    ((True, 2), "got bool"),
    ("23", "expected an int or a sequence"),
])
def test_a_shape_python_cannot_give_as_int64_is_an_invalid_argument_naming_it(shape: object, says: str) -> None:
    with pytest.raises(memhal.InvalidArgumentError, match=says):
        memhal.Tensor(shape, "u8")  # type: ignore[arg-type]
    with pytest.raises(memhal.InvalidArgumentError, match=says):
        memhal.Tensor((6,), "u8", memory="mem").reshape(shape)  # type: ignore[arg-type]


def test_numpy_integers_are_dimensions_and_a_name_must_be_a_str() -> None:
    assert memhal.Tensor((np.int64(2), np.uint8(3)), "u8").shape == (2, 3)
    with pytest.raises(memhal.InvalidArgumentError, match="name"):
        memhal.Tensor((2,), "u8", name=5)  # type: ignore[arg-type]
