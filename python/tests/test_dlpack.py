"""DLPack both ways: Tensor.__dlpack__ (legacy and versioned 1.0 capsules) and memhal.from_dlpack."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import memhal


def filled(shape: tuple[int, ...], dtype: str = "f32", memory: str = "mem") -> memhal.Tensor:
    t = memhal.Tensor(shape, dtype, memory=memory)
    with t.map("write") as m:
        a = np.asarray(m)
        a[...] = np.arange(a.size, dtype=a.dtype).reshape(a.shape)
    return t


def test_numpy_from_dlpack_shares_memory_with_the_tensor() -> None:
    t = filled((3, 4))
    a = np.from_dlpack(t)  # numpy 1.24 asks for no max_version: the legacy capsule
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))
    with t.map("write") as m:
        np.asarray(m)[1, 2] = -5.0
    assert a[1, 2] == -5.0


def test_dlpack_device_is_the_cpu_for_host_memory() -> None:
    assert memhal.Tensor((2,), "u8").__dlpack_device__() == (1, 0)


def test_no_max_version_gives_the_legacy_capsule_and_1_0_the_versioned_one() -> None:
    t = memhal.Tensor((2,), "u8")
    assert '"dltensor"' in repr(t.__dlpack__())
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))


def test_a_versioned_capsule_round_trips_into_memhal_without_a_copy() -> None:
    t = filled((2, 5), "i16")
    u = memhal.from_dlpack(t)  # asks for max_version (1, 0)
    assert u.shape == (2, 5) and u.dtype == memhal.DType.I16
    with u.map("write") as m:
        np.asarray(m)[0, 0] = 1234
    with t.map("read") as m:
        assert np.asarray(m)[0, 0] == 1234


def test_strided_views_export_with_their_strides() -> None:
    t = filled((4, 6))
    a = np.from_dlpack(t.transpose(0, 1).slice(0, 1, 5))
    np.testing.assert_array_equal(a, np.arange(24).reshape(4, 6).T[1:5])
    with t.map("write") as m:
        np.asarray(m)[0, 1] = -1.0
    assert a[0, 0] == -1.0  # shared, not copied


def test_negative_strides_travel_only_in_the_versioned_capsule() -> None:
    t = filled((4, 6))
    flipped = t.flip(1).slice(0, 1, 3)
    # numpy 1.24 and torch 1.13 ask for the legacy capsule: refused with advice, not handed over.
    with pytest.raises(BufferError, match=r"negative strides.*materialize\(\).*copy=True.*max_version"):
        np.from_dlpack(flipped)
    with pytest.raises(BufferError, match="negative strides"):
        flipped.__dlpack__(copy=False)
    # A versioned consumer takes them as they are: the same memory, strides kept.
    u = memhal.from_dlpack(flipped.__dlpack__(max_version=(1, 0)))
    assert u.strides == flipped.strides and u.strides[1] < 0
    with t.map("write") as m:
        np.asarray(m)[1, 5] = -3.0
    with u.map("read") as m:
        assert np.asarray(m)[0, 0] == -3.0  # the same memory: row 1, last column
    # copy=True hands a legacy consumer a dense copy; numpy also shares it through a map.
    expected = np.arange(24, dtype=np.float32).reshape(4, 6)[1:3, ::-1]
    expected[0, 0] = -3.0
    np.testing.assert_array_equal(np.from_dlpack(flipped.materialize()), expected)
    copied = memhal.from_dlpack(flipped.__dlpack__(copy=True))
    assert not memhal.same_storage(copied, t) and copied.strides[1] > 0
    with flipped.map("read") as m:
        np.testing.assert_array_equal(np.asarray(m), expected)


def _torch_missing() -> bool:
    import importlib.util
    return importlib.util.find_spec("torch") is None


@pytest.mark.skipif(_torch_missing(), reason="torch is not installed (Debian: apt-get install python3-torch)")
def test_torch_from_dlpack_of_a_flipped_tensor_raises_instead_of_aborting() -> None:
    # In a child interpreter: torch 1.13 aborts (SIGABRT) on a legacy capsule with negative
    # strides, which would kill pytest itself rather than fail this test.
    import subprocess
    import sys
    code = """
import memhal, numpy as np, torch
t = memhal.Tensor((4, 6), "f32", memory="mem")
with t.map("write") as m:
    np.asarray(m)[...] = np.arange(24, dtype=np.float32).reshape(4, 6)
flipped = t.flip(1)
try:
    torch.from_dlpack(flipped)
    print("accepted")
except BufferError as e:
    print("BufferError:", e)
x = torch.from_dlpack(flipped.materialize())
assert x.tolist() == np.arange(24).reshape(4, 6)[:, ::-1].tolist()
y = torch.utils.dlpack.from_dlpack(flipped.__dlpack__(copy=True))
assert y.tolist() == x.tolist()
z = torch.from_dlpack(t.transpose(0, 1))  # positive strides still travel without a copy
z[0, 1] = -7.0
with t.map("read") as m:
    assert np.asarray(m)[1, 0] == -7.0
print("done")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr[-2000:])
    assert "BufferError: __dlpack__: this tensor has negative strides" in run.stdout, run.stdout
    assert run.stdout.rstrip().endswith("done"), run.stdout


def test_memhal_from_dlpack_wraps_a_numpy_array_and_keeps_it_alive() -> None:
    a = np.arange(10, dtype=np.float64)
    t = memhal.from_dlpack(a)  # numpy 1.24 takes no max_version: legacy fallback
    with t.map("write") as m:
        np.asarray(m)[3] = 42.0
    assert a[3] == 42.0
    a[4] = -1.0
    del a
    gc.collect()
    with t.map("read") as m:
        values = np.asarray(m).copy()
    assert values[3] == 42.0 and values[4] == -1.0 and values[9] == 9.0


def test_read_only_memory_travels_with_the_read_only_flag_in_a_versioned_capsule() -> None:
    source = np.arange(6, dtype=np.uint8)
    source.flags.writeable = False
    ro = memhal.Tensor.from_numpy(source)
    u = memhal.from_dlpack(ro)
    with pytest.raises(memhal.PermissionDeniedError):
        u.map("write")
    with u.map("read") as m:
        assert np.shares_memory(np.asarray(m), source)


def test_read_only_memory_is_copied_for_a_legacy_consumer_and_refused_with_copy_false() -> None:
    source = np.arange(6, dtype=np.uint8)
    source.flags.writeable = False
    ro = memhal.Tensor.from_numpy(source)
    a = np.from_dlpack(ro)
    assert not np.shares_memory(a, source)
    np.testing.assert_array_equal(a, source)
    with pytest.raises(BufferError, match="copy=False"):
        ro.__dlpack__(copy=False)


def test_copy_true_exports_a_copy_and_says_so() -> None:
    t = filled((4,))
    a = np.from_dlpack(memhal.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True)))
    with t.map("write") as m:
        np.asarray(m)[0] = 99.0
    assert a[0] == 0.0


def test_other_devices_and_streams_are_buffer_errors() -> None:
    t = memhal.Tensor((2,), "u8")
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        t.__dlpack__(stream=1)
    t.__dlpack__(dl_device=(1, 0))


def test_multi_plane_images_cannot_be_one_dlpack_tensor() -> None:
    with pytest.raises(BufferError, match="planes"):
        memhal.Tensor.image(8, 8, "nv12", memory="mem").__dlpack__()


def test_an_unconsumed_capsule_frees_its_map_and_a_consumed_one_cannot_be_reused() -> None:
    t = memhal.Tensor((3,), "u8")
    capsule = t.__dlpack__()
    u = memhal.from_dlpack(capsule)
    with u.map("write") as m:
        np.asarray(m)[:] = 5
    with t.map("read") as m:
        assert np.asarray(m).tolist() == [5, 5, 5]
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.from_dlpack(capsule)
    del capsule
    t.__dlpack__()  # dropped unconsumed: its destructor frees the export
    gc.collect()


def test_a_dtype_memhal_does_not_have_is_rejected() -> None:
    with pytest.raises(memhal.InvalidArgumentError, match="dtype"):
        memhal.from_dlpack(np.zeros(3, dtype=np.complex64))


def test_from_dlpack_takes_the_array_api_keywords() -> None:
    a = np.arange(4, dtype=np.int32)
    copied = memhal.from_dlpack(a, copy=True, device="cpu")
    a[:] = 0
    with copied.map("read") as m:
        assert np.asarray(m).tolist() == [0, 1, 2, 3]
    shared = memhal.from_dlpack(a, copy=False, device=(1, 0))
    a[:] = 8
    with shared.map("read") as m:
        assert np.asarray(m).tolist() == [8] * 4
    with pytest.raises(BufferError):
        memhal.from_dlpack(a, device=(2, 0))


def test_malformed_dlpack_keywords_are_invalid_arguments_naming_them() -> None:
    t = memhal.Tensor((2,), "u8")
    cases: list[tuple[dict[str, object], str]] = [
        ({"max_version": "1.0"}, "max_version"), ({"max_version": (1.5, 0)}, "max_version"),
        ({"dl_device": ("cpu", 0)}, "dl_device"), ({"dl_device": 1}, "dl_device")]
    for kwargs, says in cases:
        with pytest.raises(memhal.InvalidArgumentError, match=says):
            t.__dlpack__(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(memhal.InvalidArgumentError, match="device"):
        memhal.from_dlpack(np.zeros(3), device=("x", 0))
    t.__dlpack__(stream=-1)  # the array API's "no stream" for the CPU
