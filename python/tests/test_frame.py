"""memhal.Frame and memhal.Tee: frames over tensors, fan-out and frames over a Channel."""
from __future__ import annotations

import numpy as np
import pytest

import memhal


def counted(n: int, memory: str = "mem") -> memhal.Tensor:
    t = memhal.Tensor((n,), "u8", memory=memory)
    with t.map("write") as m:
        np.asarray(m)[:] = np.arange(n, dtype=np.uint8)
    return t


def test_a_frame_over_a_tensor_keeps_its_bytes_timing_and_sequence() -> None:
    frame = memhal.Frame.from_tensor(counted(8), sequence=7, pts=1000, duration=33)
    assert frame.domain == memhal.MemoryDomainKind.SYSTEM
    assert (frame.sequence, frame.pts, frame.duration) == (7, 1000, 33)
    with frame.to_tensor().map("read") as m:
        assert np.asarray(m).tolist() == list(range(8))


def test_a_strided_tensor_becomes_a_system_view_frame() -> None:
    t = counted(12).reshape((3, 4)).flip(1)
    frame = memhal.Frame.from_tensor(t)
    assert frame.domain == memhal.MemoryDomainKind.SYSTEM_VIEW
    with frame.to_tensor().map("read") as m:
        np.testing.assert_array_equal(np.asarray(m), np.arange(12).reshape(3, 4)[:, ::-1])


def test_a_tee_hands_every_branch_the_same_bytes() -> None:
    source = counted(16)
    frame = memhal.Frame.from_tensor(source, sequence=3)
    branches = memhal.Tee(3).push(frame)
    assert len(branches) == 3
    with source.map("read") as m:
        address = np.asarray(m).__array_interface__["data"][0]
    for branch in branches:
        assert branch.sequence == 3
        with branch.to_tensor().map("read") as m:
            assert np.asarray(m).__array_interface__["data"][0] == address  # no byte copied
    with pytest.raises(memhal.InvalidArgumentError):
        memhal.Tee(0)


def test_a_tee_with_more_branches_than_memory_raises_out_of_memory() -> None:
    frame = memhal.Frame.from_tensor(counted(16))
    with pytest.raises(memhal.OutOfMemoryError, match=str(1 << 62)):
        memhal.Tee(1 << 62).push(frame)


def test_a_frame_crosses_a_channel_with_its_timing() -> None:
    kind = next((k for k in ("shm", "dmabuf") if memhal.is_available(k)), None)
    if kind is None:
        pytest.skip("neither shm nor dmabuf can be allocated here")
    a, b = memhal.Channel.pair()
    a.send_frame(memhal.Frame.from_tensor(counted(32, kind), sequence=11, pts=5))
    received = b.receive_frame(timeout=5)
    assert (received.sequence, received.pts) == (11, 5)
    with received.to_tensor().map("read") as m:
        assert np.asarray(m).tolist() == list(range(32))


@pytest.mark.parametrize("fmt", ["nv12", "yuyv", "i420"])
@pytest.mark.parametrize("memory", ["mem", "shm"])
def test_a_frame_of_an_image_gives_the_same_image_back(fmt: str, memory: str) -> None:
    if not memhal.is_available(memory):
        pytest.skip(f"{memory} cannot be allocated here")
    image = memhal.Tensor.image(64, 32, fmt, memory=memory)
    branches = memhal.Tee(2).push(memhal.Frame.from_tensor(image, sequence=1))
    for branch in branches:
        back = branch.share().to_tensor()
        assert back.pixel_format == image.pixel_format
        assert (back.shape, back.strides, back.memory) == (image.shape, image.strides, image.memory)
        assert back.same_storage(image)
        dst = memhal.Tensor.image(64, 32, "rgb", memory="mem")
        memhal.ImageProcessor(backend="cpu").convert(back, dst)  # takes the frame's tensor as it is
