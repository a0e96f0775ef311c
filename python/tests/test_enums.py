"""The vocabularies are Python enums: iterable, indexable by name, equal to (and hashed as) their
wire strings, strict about unknown codes; numpy dtypes are accepted wherever a DType is."""
from __future__ import annotations

import enum

import numpy as np
import pytest

import memhal


def test_enums_are_python_enums_equal_to_their_wire_strings() -> None:
    assert issubclass(memhal.DType, enum.Enum)
    assert list(memhal.DType)[:3] == [memhal.DType.U8, memhal.DType.I8, memhal.DType.U16]
    assert memhal.DType["F32"] is memhal.DType.F32
    t = memhal.Tensor((2,), "f32", memory="mem")
    assert t.dtype == "f32" and t.dtype is memhal.DType.F32
    assert {"f32": 1}[t.dtype] == 1 and hash(t.dtype) == hash("f32")
    assert {memhal.MemoryKind.MEM, memhal.MemoryKind.MEM, memhal.MemoryKind.SHM} == {"mem", "shm"}
    assert str(memhal.PixelFormat.PLANAR_RGB) == "planar_rgb" and f"{memhal.Flip.HORIZONTAL}" == "horizontal"
    assert memhal.DType.F32.code == 9 and memhal.DType.F32.value == "f32"
    backend: str = memhal.ImageProcessor(backend="cpu").backend
    assert backend == "cpu" and backend is memhal.ImageBackend.CPU


def test_unknown_codes_raise_a_value_error_subclass() -> None:
    with pytest.raises(ValueError) as info:
        memhal.MemoryKind(99)
    assert isinstance(info.value, memhal.InvalidArgumentError) and "99" in str(info.value)
    with pytest.raises(KeyError):
        memhal.DType["F128"]
    with pytest.raises(memhal.InvalidArgumentError, match="expected a Flip, got Rotation.CW90"):
        memhal.Flip(memhal.Rotation.CW90)


@pytest.mark.parametrize("spelling", [np.float32, np.dtype("float32"), "float32", "f32", memhal.DType.F32, 9,
                                      np.dtype("<f4")])
def test_numpy_dtypes_and_names_are_accepted_wherever_a_dtype_is(spelling: object) -> None:
    assert memhal.DType(spelling) is memhal.DType.F32
    assert memhal.Tensor((2,), spelling, memory="mem").dtype == "f32"  # type: ignore[arg-type]
    assert memhal.TensorPool((2,), spelling, count=1, memory="mem").dtype == "f32"  # type: ignore[arg-type]


def test_dtype_numpy_gives_the_numpy_dtype_and_unknown_numpy_dtypes_are_refused() -> None:
    for member in memhal.DType:
        if member is memhal.DType.BF16:
            with pytest.raises(memhal.UnimplementedError, match="bfloat16"):
                member.numpy
        else:
            assert memhal.DType(member.numpy) is member
            assert np.asarray(memhal.Tensor((1,), member, memory="mem")).dtype == member.numpy
    for bad in (np.bool_, np.complex64, np.dtype(">f4"), "float128x"):
        with pytest.raises(memhal.InvalidArgumentError):
            memhal.Tensor((1,), bad, memory="mem")  # type: ignore[arg-type]
