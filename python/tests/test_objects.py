"""Every object is bound and behaves as Python expects: TensorPool, Tee, Channel/Listener,
Recorder/Replayer (close() and context managers), readable reprs."""
from __future__ import annotations

import gc
import os
import pathlib
import threading
import time

import numpy as np
import pytest

import memhal


def test_a_pool_hands_out_its_slots_waits_and_takes_them_back() -> None:
    pool = memhal.TensorPool((2, 3), "u8", count=2, memory="mem")
    assert (pool.capacity, pool.available, len(pool), pool.shape, pool.dtype) == (2, 2, 2, (2, 3), "u8")
    assert repr(pool) == "memhal.TensorPool(capacity=2, available=2, shape=(2, 3), dtype=u8, memory=mem)"
    a, b = pool.acquire(), pool.acquire(timeout=0)
    assert pool.try_acquire() is None
    start = time.monotonic()
    with pytest.raises(memhal.BusyError):
        pool.acquire(timeout=0.05)
    assert time.monotonic() - start >= 0.04
    del a
    gc.collect()
    assert pool.available == 1 and pool.try_acquire() is not None
    with pytest.raises(memhal.InvalidArgumentError, match="negative"):
        pool.acquire(timeout=-1)
    del b


def test_an_acquire_waiting_on_another_thread_gets_the_slot_given_back() -> None:
    pool = memhal.TensorPool.image(8, 4, "rgb", count=1, memory="mem")
    assert pool.pixel_format == memhal.PixelFormat.RGB
    held = [pool.acquire()]
    got: list[memhal.Tensor] = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire(timeout=10)))
    waiter.start()
    time.sleep(0.05)
    held.clear()
    gc.collect()
    waiter.join(10)
    assert len(got) == 1 and got[0].pixel_format == "rgb"


def test_a_pool_slot_context_manager_returns_the_slot_when_the_block_ends() -> None:
    pool = memhal.TensorPool((4,), "f32", count=1, memory="mem")
    with pool.slot(timeout=1) as t:
        assert pool.available == 0 and t.shape == (4,)
        view = t.numpy()  # something made from it keeps the slot out...
    assert t.shape == (0,)  # the Python handle let go
    assert pool.available == 0
    del view
    gc.collect()
    assert pool.available == 1  # ...until it is gone
    with pool.slot() as again:
        with pytest.raises(memhal.BusyError):
            with pool.slot(timeout=0):
                pass
        assert again.dtype == memhal.DType.F32


def test_a_tee_fans_out_without_copying_and_reprs_read_well() -> None:
    t = memhal.Tensor((4,), "u8", memory="mem")
    frame = memhal.Frame.from_tensor(t, sequence=3, pts=1000)
    branches = memhal.Tee(3).push(frame)
    assert len(branches) == 3 and all(b.to_tensor().same_storage(t) for b in branches)
    assert repr(memhal.Tee(3)) == "memhal.Tee(branches=3)"
    assert repr(frame) == "memhal.Frame(sequence=3, domain=tensor, pts=1000, duration=None)" or \
        repr(frame).startswith("memhal.Frame(sequence=3, domain=")
    assert repr(t.map("read")) == "memhal.TensorMap(shape=(4,), dtype=u8, access=read)"
    assert repr(memhal.ImageProcessor(backend="cpu")).startswith("memhal.ImageProcessor(backend=cpu, threads=")
    assert repr(memhal.availability("mem")).startswith("Availability(available=True")


def shareable_kind() -> str:
    for kind in ("shm", "dmabuf"):
        if memhal.is_available(kind):
            return kind
    pytest.skip("neither shm nor dmabuf can be allocated here")


def test_channels_close_as_context_managers_and_wake_a_blocked_receive() -> None:
    kind = shareable_kind()
    with memhal.Channel.pair()[0] as lone:
        assert repr(lone).startswith("memhal.Channel(fd=")
    assert lone.closed and repr(lone) == "memhal.Channel(closed)"
    with pytest.raises(memhal.InvalidArgumentError, match="Channel.send: the Channel is closed"):
        lone.send(memhal.Tensor((1,), "u8", memory=kind))
    a, b = memhal.Channel.pair()
    errors: list[BaseException] = []

    def receive() -> None:
        try:
            b.receive()  # forever, until close() wakes it
        except memhal.Error as e:
            errors.append(e)

    waiter = threading.Thread(target=receive)
    waiter.start()
    time.sleep(0.05)
    b.close()
    waiter.join(10)
    assert not waiter.is_alive() and isinstance(errors[0], memhal.UnavailableError)
    b.close()  # idempotent
    a.close()


def test_a_listener_closes_and_removes_its_socket(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "sock")
    with memhal.Listener.bind(path) as listener:
        assert os.path.exists(path) and repr(listener).startswith("memhal.Listener(fd=")
        with memhal.Channel.connect(path) as client, listener.accept(timeout=5) as server:
            t = memhal.Tensor((3,), "u8", memory=shareable_kind())
            client.send(t)
            assert server.receive(timeout=5).shape == (3,)
    assert listener.closed and not os.path.exists(path)
    with pytest.raises(memhal.InvalidArgumentError, match="closed"):
        listener.accept(timeout=0)


def test_recordings_write_and_replay_as_context_managers_and_iterators(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "rec.mhr")
    t = memhal.Tensor((2, 2), "u8", memory="mem")
    with t.map("write") as m:
        np.asarray(m)[:] = 5
    with memhal.Recorder(path) as recorder:
        recorder.write(t, timestamp_ns=10)
        recorder.write(memhal.Frame.from_tensor(t, sequence=1), timestamp_ns=20)
        assert repr(recorder) == "memhal.Recorder(records_written=2)"
    assert recorder.closed
    with memhal.Replayer(path) as replayer:
        records = list(replayer)
    assert [r.timestamp_ns for r in records] == [10, 20] and records[0].shape == (2, 2)
    assert repr(records[0]) == "memhal.Record(index=0, timestamp_ns=10, shape=(2, 2), memory=mem)"
    assert np.asarray(records[0].materialize()).tolist() == [[5, 5], [5, 5]]
    with pytest.raises(memhal.InvalidArgumentError, match="closed"):
        replayer.next()
