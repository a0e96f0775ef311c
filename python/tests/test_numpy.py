"""Tensor.from_numpy: numpy memory as a memhal tensor, shared or copied."""
import gc

import numpy as np
import pytest

import memhal


def test_from_numpy_shares_memory_both_ways() -> None:
    a = np.zeros((3, 4), dtype=np.float32)
    t = memhal.Tensor.from_numpy(a)
    assert t.shape == (3, 4) and t.dtype == memhal.DType.F32 and t.memory == memhal.MemoryKind.MEM
    with t.map("write") as m:
        np.asarray(m)[2, 3] = 7.5
    assert a[2, 3] == 7.5
    a[0, 0] = -1.0
    with t.map("read") as m:
        assert np.asarray(m)[0, 0] == -1.0


def test_negative_and_gapped_strides_are_kept() -> None:
    base = np.arange(40, dtype=np.int64).reshape(5, 8)
    view = base[::2, ::-3]
    t = memhal.Tensor.from_numpy(view)
    assert t.strides == view.strides
    with t.map("read") as m:
        np.testing.assert_array_equal(np.asarray(m), view)
    with t.materialize().map("read") as m:
        np.testing.assert_array_equal(np.asarray(m), view)


def test_the_array_lives_as_long_as_a_tensor_over_it() -> None:
    t = memhal.Tensor.from_numpy(np.full(1000, 3, dtype=np.uint16))
    gc.collect()
    view = t.slice(0, 10, 20)
    del t
    gc.collect()
    with view.map("read") as m:
        assert np.asarray(m).tolist() == [3] * 10


def test_a_read_only_array_gives_a_tensor_that_refuses_write_maps() -> None:
    a = np.ones(4, dtype=np.uint8)
    a.flags.writeable = False
    t = memhal.Tensor.from_numpy(a)
    with pytest.raises(memhal.PermissionDeniedError) as info:
        t.map("write")
    assert info.value.code == memhal.ErrorCode.PERMISSION_DENIED
    assert "read-only" in info.value.message


def test_copy_true_makes_independent_memory_of_the_asked_kind() -> None:
    a = np.arange(8, dtype=np.uint8)
    t = memhal.Tensor.from_numpy(a, copy=True, memory="mem")
    assert t.memory == memhal.MemoryKind.MEM
    a[:] = 0
    with t.map("read") as m:
        assert np.asarray(m).tolist() == list(range(8))


def test_wrapping_without_copy_into_another_kind_is_refused() -> None:
    with pytest.raises(memhal.InvalidArgumentError, match="copy=True"):
        memhal.Tensor.from_numpy(np.zeros(4), memory="shm")


def test_unsupported_formats_are_rejected() -> None:
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.Tensor.from_numpy(np.zeros(4, dtype=np.complex128))
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.Tensor.from_numpy(np.zeros(4, dtype=bool))
