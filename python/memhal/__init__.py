"""memhal: zero-copy tensor and video-frame memory across hardware backends.

Tensors (``memhal.Tensor``) live in host memory, shared memory or DMA-BUFs and reach numpy
(``np.asarray(t)``, ``t.numpy()``), torch (``torch.from_dlpack(t)``) and other processes
(``memhal.Channel``) without copying. The vocabularies (``memhal.DType``,
``memhal.MemoryKind`` ...) are Python enums whose members equal their wire strings.

The compiled part is ``memhal._memhal``; this package adds the enums, built from the same
tables as every other surface of memhal (C++, C, the ``memhal`` command, the file formats).
"""
import enum as _enum
from typing import Any as _Any

from . import _memhal
from ._memhal import *  # noqa: F401,F403  (the classes, functions and errors)
from ._memhal import __version__

_DOCS = {
    "MemoryKind": "Which backend a tensor is allocated from.",
    "DType": "Element type of a tensor; also accepts numpy dtypes and names (np.float32, 'float32').",
    "PixelFormat": "Pixel layout of an image.",
    "Compression": "Framebuffer compression a buffer may carry.",
    "CpuAccess": "What a CPU mapping will do with the bytes.",
    "MemoryDomainKind": "Where a pipeline frame's payload lives.",
    "Flip": "Mirroring of ImageProcessor.convert (flip=).",
    "Rotation": "Clockwise rotation of ImageProcessor.convert (rotation=).",
    "ResizeMode": "How ImageProcessor.convert fits the source into the destination (resize=).",
    "Interpolation": "Resampling filter of ImageProcessor.convert (interpolation=).",
    "ColorMatrix": "YUV colour matrix of ImageProcessor.convert (matrix=).",
    "ColorRange": "YUV quantisation range of ImageProcessor.convert (range=).",
    "ImageBackend": "Where an ImageProcessor runs its conversions.",
    "ErrorCode": "The code of a memhal.Error (its .code).",
}


class _Vocabulary(str, _enum.Enum):
    """A memhal vocabulary: members are the wire strings upper-cased and equal those strings.

    ``str(member)`` is the wire string, ``member.code`` the stable code; the constructor, like
    every argument that takes this vocabulary, accepts a member, its wire string or an alias
    (any case) and its code, and raises ``InvalidArgumentError`` (a ``ValueError``) otherwise.
    """

    @property
    def code(self) -> int:
        """The stable code, identical on every surface (C, C++, the CLI, the file formats)."""
        return type(self)._memhal_codes[self._value_]  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return self._value_  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        return format(self._value_, spec)

    @classmethod
    def _missing_(cls, value: object) -> _Any:
        return cls._memhal_members[_memhal._vocabulary_code(cls.__name__, value, "any")]

    @classmethod
    def from_code(cls, code: int) -> _Any:
        """The member with this code; InvalidArgumentError for an unknown one."""
        return cls._memhal_members[_memhal._vocabulary_code(cls.__name__, code, "from_code")]

    @classmethod
    def from_string(cls, text: str) -> _Any:
        """The member with this wire spelling or alias (ASCII case-insensitive); InvalidArgumentError otherwise."""
        return cls._memhal_members[_memhal._vocabulary_code(cls.__name__, text, "from_string")]


class _DTypeVocabulary(_Vocabulary):
    """DType's extras over a vocabulary: the numpy dtype of each member."""

    @property
    def numpy(self) -> _Any:
        """The numpy dtype of this element type (UnimplementedError for bf16, which numpy lacks)."""
        import numpy

        if self._value_ == "bf16":
            _memhal._raise("not_implemented", "DType.numpy: numpy has no bfloat16 dtype")
        return numpy.dtype({"u": "uint", "i": "int", "f": "float"}[self._value_[0]] + self._value_[1:])


def _make_vocabularies() -> "dict[str, type[_Vocabulary]]":
    made: "dict[str, type[_Vocabulary]]" = {}
    _memhal._register_vocabulary_base(_Vocabulary)
    for name, rows in _memhal._vocabularies().items():
        base = _DTypeVocabulary if name == "DType" else _Vocabulary
        cls: _Any = base(name, [(member, wire) for member, wire, _ in rows], module=__name__, qualname=name)
        cls.__doc__ = f"The memhal vocabulary {name}: {_DOCS[name]} Members equal their wire strings."
        cls._memhal_codes = {wire: code for _, wire, code in rows}
        cls._memhal_members = {code: cls[member] for member, _, code in rows}
        _memhal._register_vocabulary(name, cls)
        made[name] = cls
    return made


globals().update(_make_vocabularies())

for _name in dir(_memhal):
    _object = getattr(_memhal, _name)
    if not _name.startswith("_") and isinstance(_object, type) and _object.__module__ == _memhal.__name__:
        _object.__module__ = __name__  # memhal.Tensor, not memhal._memhal.Tensor

__all__ = sorted(
    [name for name in dir(_memhal) if not name.startswith("_")] + list(_memhal._vocabularies())
)
del _name, _object
