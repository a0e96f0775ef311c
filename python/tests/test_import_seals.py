"""Tensor.from_fd refuses memfds that their owner could shrink under the mapping (a SIGBUS)."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from typing import Any, cast

import pytest

import memhal

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no os.memfd_create on this platform")


def _memfd(flags: int, size: int = 4096) -> int:
    fd = os.memfd_create("py-seal-test", flags)
    os.ftruncate(fd, size)
    return fd


def test_a_memfd_made_without_allow_sealing_is_refused_naming_the_seal() -> None:
    fd = _memfd(os.MFD_CLOEXEC)
    try:
        with pytest.raises(memhal.InvalidArgumentError, match="F_SEAL_SHRINK"):
            memhal.Tensor.from_fd(fd, (4096,), "u8")
    finally:
        os.close(fd)


def test_a_read_only_fd_of_an_unsealed_memfd_is_refused_and_imports_once_sealed() -> None:
    fd = _memfd(os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    read_only = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        with pytest.raises(memhal.InvalidArgumentError, match="MFD_ALLOW_SEALING"):
            memhal.Tensor.from_fd(read_only, (4096,), "u8")
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
        tensor = memhal.Tensor.from_fd(read_only, (4096,), "u8")
        assert tensor.memory == memhal.MemoryKind.SHM
        with tensor.map("read") as m:
            # (a TensorMap exports the buffer protocol, which the stub cannot declare to mypy's memoryview)
            assert bytes(memoryview(cast(Any, m))[:4]) == b"\0\0\0\0"
    finally:
        os.close(read_only)
        os.close(fd)


def test_a_writable_sealable_memfd_is_sealed_on_import() -> None:
    fd = _memfd(os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        memhal.Tensor.from_fd(fd, (4096,), "u8")
        assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK
    finally:
        os.close(fd)


def test_the_owner_truncating_cannot_crash_the_importer() -> None:
    # In a child: import an unsealable memfd, truncate it as its owner would, then read. Without
    # the refusal the read dies of SIGBUS.
    script = textwrap.dedent(
        """
        import os, sys, memhal
        fd = os.memfd_create("py-sigbus", os.MFD_CLOEXEC)
        os.ftruncate(fd, 1 << 16)
        try:
            tensor = memhal.Tensor.from_fd(fd, (1 << 16,), "u8")
        except memhal.InvalidArgumentError:
            sys.exit(0)
        os.ftruncate(fd, 0)
        with tensor.map("read") as m:
            sys.exit(5 if memoryview(m)[-1] == 0 else 6)
        """
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert child.returncode == 0, (child.returncode, child.stderr.decode())
