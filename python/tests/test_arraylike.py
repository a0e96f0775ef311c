"""Tensors behave as arrays where that is safe: numpy views, len/shape/ndim/.T, copies, DLPack 1.0."""
from __future__ import annotations

import ctypes
import gc
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import memhal


def filled(shape: tuple[int, ...], dtype: str = "u8") -> memhal.Tensor:
    t = memhal.Tensor(shape, dtype, memory="mem")
    with t.map("write") as m:
        np.asarray(m)[...] = np.arange(int(np.prod(shape))).reshape(shape)
    return t


def test_asarray_is_a_read_only_view_of_the_same_memory() -> None:
    t = filled((2, 3))
    a = np.asarray(t)
    assert a.shape == (2, 3) and a.dtype == np.uint8 and not a.flags.writeable
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]]
    with t.map("write") as m:
        np.asarray(m)[0, 0] = 42  # writes go through a write map, as before
    assert a[0, 0] == 42  # same memory, not a copy
    with pytest.raises(ValueError):
        a[0, 0] = 1


def test_the_view_keeps_the_mapping_alive_after_the_tensor_is_gone() -> None:
    pool = memhal.TensorPool((4,), "u8", count=1, memory="mem")
    t = pool.acquire()
    with t.map("write") as m:
        np.asarray(m)[:] = 7
    a = t.numpy()
    del t
    gc.collect()
    assert pool.available == 0  # the array holds the slot
    assert a.tolist() == [7, 7, 7, 7]
    del a
    gc.collect()
    assert pool.available == 1


def test_asarray_with_another_dtype_and_array_copy_give_writable_copies() -> None:
    t = filled((2, 2))
    f = np.asarray(t, dtype=np.float32)
    assert f.dtype == np.float32 and f.tolist() == [[0, 1], [2, 3]]
    c = np.array(t)
    c[0, 0] = 9
    assert np.asarray(t)[0, 0] == 0


def test_len_shape_ndim_and_transposed_views() -> None:
    t = filled((2, 3, 4))
    assert len(t) == 2 and t.shape == (2, 3, 4) and t.ndim == 3
    assert t.transpose().shape == (4, 3, 2) and t.T.shape == (4, 3, 2)
    assert np.array_equal(np.asarray(t.T), np.asarray(t).T)
    assert np.array_equal(np.asarray(t.transpose(0, 2)), np.asarray(t).swapaxes(0, 2))
    assert t.T.same_storage(t)
    with pytest.raises(memhal.InvalidArgumentError, match="two axes"):
        t.transpose(1)
    with pytest.raises(TypeError, match="0-d"):
        len(memhal.Tensor((), "u8", memory="mem"))


def test_numpy_is_a_view_and_to_numpy_a_copy_by_default() -> None:
    t = filled((3,))
    view = t.numpy()
    assert not view.flags.writeable
    copy = t.to_numpy()
    assert copy.flags.writeable and copy.flags.owndata
    copy[0] = 100
    assert t.numpy()[0] == 0
    shared = t.to_numpy(copy=False)
    assert not shared.flags.writeable
    assert shared.ctypes.data == view.ctypes.data


def test_multi_plane_images_are_refused_naming_the_planes() -> None:
    img = memhal.Tensor.image(4, 4, "nv12", memory="mem")
    with pytest.raises(BufferError, match="plane"):
        np.asarray(img)


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The C DLPack 1.x consumer (dlpack_consumer.c), built with the system C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the DLPack consumer")
    out = tmp_path_factory.mktemp("dlpack") / "consumer.so"
    source = pathlib.Path(__file__).with_name("dlpack_consumer.c")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(source)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.consume.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64]
    lib.consume.restype = ctypes.c_int
    return lib


def consume(lib: ctypes.CDLL, capsule: object) -> list[int]:
    """Takes the versioned capsule as a consumer does: its pointer, then the used_ rename."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.argtypes, get.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
    pointer = get(capsule, b"dltensor_versioned")
    out = (ctypes.c_int64 * 17)()
    assert lib.consume(pointer, out, 17) == 0
    rename = ctypes.pythonapi.PyCapsule_SetName
    rename.argtypes, rename.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
    assert rename(capsule, b"used_dltensor_versioned") == 0
    return list(out)


def test_a_dlpack_1_0_consumer_gets_the_versioned_tensor_over_the_same_memory(consumer: ctypes.CDLL) -> None:
    t = filled((2, 3))
    out = consume(consumer, t.__dlpack__(max_version=(1, 0)))
    major, minor, flags, device, ndim, code, bits, data, total = out[:9]
    assert (major, minor) == (1, 0) and flags == 0 and device == 1
    assert ndim == 2 and out[9:11] == [2, 3] and (code, bits) == (1, 8)  # kDLUInt, 8 bits
    assert data == np.asarray(t).ctypes.data  # no copy
    assert total == sum(range(6))


def test_a_dlpack_1_0_consumer_sees_read_only_memory_flagged_and_views_with_strides(consumer: ctypes.CDLL) -> None:
    frozen = memhal.Tensor.from_numpy(np.frombuffer(bytes(range(8)), np.uint8))
    out = consume(consumer, frozen.__dlpack__(max_version=(1, 0)))
    assert out[2] & 1  # DLPACK_FLAG_BITMASK_READ_ONLY
    assert out[8] == sum(range(8))
    flipped = filled((2, 3)).flip(1)  # negative strides travel in the versioned capsule
    assert consume(consumer, flipped.__dlpack__(max_version=(1, 0)))[8] == sum(range(6))
    pool = memhal.TensorPool((4,), "u8", count=1, memory="mem")
    consume(consumer, pool.acquire().__dlpack__(max_version=(1, 0)))
    gc.collect()
    assert pool.available == 1  # the consumer's deleter released the tensor
