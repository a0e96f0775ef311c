"""ImageProcessor, Channel and recordings from Python; the blocking calls release the GIL."""
from __future__ import annotations

import pathlib
import threading
import time
from typing import Any

import numpy as np
import pytest

import memhal


def test_convert_rgb_to_a_planar_float_model_input() -> None:
    src = memhal.Tensor.image(8, 4, "rgb", memory="mem")
    with src.map("write") as m:
        a = np.asarray(m)
        a[..., 0], a[..., 1], a[..., 2] = 255, 0, 51
    dst = memhal.Tensor.image(4, 2, "planar_rgb", memory="mem", dtype="f32")
    memhal.ImageProcessor().convert(src, dst)
    with dst.map("read") as m:
        out = np.asarray(m)
    assert out.shape == (3, 2, 4)
    np.testing.assert_allclose(out[0], 1.0, atol=1e-6)
    np.testing.assert_allclose(out[1], 0.0, atol=1e-6)
    np.testing.assert_allclose(out[2], 0.2, atol=1e-6)


def test_convert_applies_options_and_rejects_unknown_ones() -> None:
    src = memhal.Tensor.image(4, 4, "grey", memory="mem")
    with src.map("write") as m:
        np.asarray(m)[:, :2, 0] = 10
        np.asarray(m)[:, 2:, 0] = 200
    dst = memhal.Tensor.image(4, 4, "grey", memory="mem")
    processor = memhal.ImageProcessor(threads=1)
    processor.convert(src, dst, flip="horizontal", interpolation="nearest")
    with dst.map("read") as m:
        assert np.asarray(m)[0, :, 0].tolist() == [200, 200, 10, 10]
    with pytest.raises(memhal.InvalidArgumentError, match="flipp"):
        processor.convert(src, dst, flipp="horizontal")
    with pytest.raises(memhal.InvalidArgumentError, match="flip"):
        processor.convert(src, dst, flip="sideways")


def test_convert_options_take_a_member_its_wire_string_an_alias_or_its_code() -> None:
    src = memhal.Tensor.image(4, 2, "grey", memory="mem")
    with src.map("write") as m:
        np.asarray(m)[..., 0] = np.arange(8, dtype=np.uint8).reshape(2, 4) * 30
    p = memhal.ImageProcessor(threads=1, backend="cpu")

    def run(width: int = 4, height: int = 2, **options: Any) -> list[list[int]]:
        dst = memhal.Tensor.image(width, height, "grey", memory="mem")
        p.convert(src, dst, **options)
        with dst.map("read") as m:
            rows: list[list[int]] = np.asarray(m)[..., 0].tolist()
            return rows

    mirrored = run(flip="horizontal")
    assert mirrored[0] == [90, 60, 30, 0]
    for spelling in (memhal.Flip.HORIZONTAL, "h", "H", "HORIZONTAL", 1):
        assert run(flip=spelling) == mirrored, spelling
    turned = run(2, 4, rotation=90)
    assert turned[0] == [120, 0]
    for spelling in (memhal.Rotation.CW90, "cw90", "CW90", "90", -270, 450):
        assert run(2, 4, rotation=spelling) == turned, spelling
    for spelling in (0, "none", "0", memhal.Rotation.NONE, 360):
        assert run(rotation=spelling) == run(), spelling
    for option, spellings in (("resize", ("letterbox", memhal.ResizeMode.LETTERBOX, "LETTERBOX", 1)),
                              ("interpolation", ("area", memhal.Interpolation.AREA, 2)),
                              ("matrix", ("bt709", memhal.ColorMatrix.BT709, 1)),
                              ("range", ("full", "pc", memhal.ColorRange.FULL, 1))):
        first = run(3, 3, **{option: spellings[0]})
        for spelling in spellings[1:]:
            assert run(3, 3, **{option: spelling}) == first, (option, spelling)


@pytest.mark.parametrize("options, says", [
    ({"flip": "hv"}, "flip: unknown Flip 'hv'"),
    ({"flip": 4}, "flip: unknown Flip code 4"),
    ({"flip": memhal.Rotation.CW90}, "flip: expected a Flip"),
    ({"rotation": "45"}, "rotation: unknown Rotation '45'"),
    ({"rotation": 45}, "rotation: 45 is not a multiple of 90"),
    ({"resize": "crop"}, "resize: unknown ResizeMode 'crop'"),
    ({"interpolation": 3}, "interpolation: unknown Interpolation code 3"),
    ({"matrix": "bt2020"}, "matrix: unknown ColorMatrix 'bt2020'"),
    ({"range": "studio"}, "range: unknown ColorRange 'studio'"),
])
def test_unknown_option_spellings_and_codes_are_refused_naming_the_option(options: dict[str, object],
                                                                        says: str) -> None:
    src = memhal.Tensor.image(4, 4, "rgb", memory="mem")
    dst = memhal.Tensor.image(4, 4, "rgb", memory="mem")
    with pytest.raises(memhal.InvalidArgumentError, match=says):
        memhal.ImageProcessor(threads=1, backend="cpu").convert(src, dst, **options)


def shareable_kind() -> str:
    for kind in ("shm", "dmabuf"):
        if memhal.is_available(kind):
            return kind
    pytest.skip("neither shm nor dmabuf can be allocated here")


def test_a_tensor_sent_over_a_channel_arrives_as_the_same_memory() -> None:
    a, b = memhal.Channel.pair()
    t = memhal.Tensor((16,), "u8", memory=shareable_kind())
    a.send(t)
    received = b.receive(timeout=5)
    assert received.shape == (16,) and received.memory == t.memory
    with received.map("write") as m:
        np.asarray(m)[:] = 33
    with t.map("read") as m:
        assert np.asarray(m).tolist() == [33] * 16


@pytest.mark.parametrize("registry", [True, False])
def test_a_buffer_sent_again_is_a_small_message_with_the_registry(registry: bool) -> None:
    a, b = memhal.Channel.pair()
    a.buffer_registry = registry
    assert a.buffer_registry == registry
    t = memhal.Tensor((4096,), "u8", memory=shareable_kind())
    sizes: list[int] = []
    for _ in range(3):
        before = a.bytes_sent
        a.send(t)
        sizes.append(a.bytes_sent - before)
        del before
        received = b.receive(timeout=5)
        assert received.shape == (4096,)
        del received  # released back to the sender
    assert (sizes[2] < sizes[0]) == registry, sizes


def test_receive_releases_the_gil_while_it_waits() -> None:
    a, b = memhal.Channel.pair()
    t = memhal.Tensor((4,), "u8", memory=shareable_kind())
    result: dict[str, Any] = {}

    def receiver() -> None:
        try:
            result["tensor"] = b.receive(timeout=10)
        except memhal.Error as e:  # a receive holding the GIL would time out here
            result["error"] = e

    thread = threading.Thread(target=receiver)
    thread.start()
    time.sleep(0.2)  # Python code runs in this thread while the other waits in receive
    a.send(t)
    thread.join(20)
    assert "error" not in result, result.get("error")
    assert result["tensor"].shape == (4,)


def test_a_receive_timeout_is_an_error_with_a_code() -> None:
    _, b = memhal.Channel.pair()
    with pytest.raises(memhal.Error) as info:
        b.receive(timeout=0.05)
    assert isinstance(info.value.code, memhal.ErrorCode)


@pytest.mark.parametrize(
    "timeout", [4294967.296, 1e300, float("inf"), 2**100, 10**400], ids=["2**32ms", "1e300", "inf", "2**100", "10**400"]
)
def test_long_and_infinite_timeouts_wait_for_the_tensor(timeout: float) -> None:
    # 4294967.296 s is 2**32 ms, which wrapped to 0 (BusyError at once); the others overflowed.
    a, b = memhal.Channel.pair()
    t = memhal.Tensor((4,), "u8", memory=shareable_kind())
    sender = threading.Timer(0.2, a.send, args=(t,))
    start = time.monotonic()
    sender.start()
    try:
        received = b.receive(timeout=timeout)
    finally:
        sender.join()
    assert received.shape == (4,)
    assert time.monotonic() - start >= 0.19
    frame_sender = threading.Timer(0.2, a.send_frame, args=(memhal.Frame.from_tensor(t, sequence=5),))
    frame_sender.start()
    try:
        assert b.receive_frame(timeout=timeout).sequence == 5
    finally:
        frame_sender.join()


@pytest.mark.parametrize(
    "timeout", [float("nan"), -1, -0.5, float("-inf"), -(10**400)], ids=["nan", "-1", "-0.5", "-inf", "-10**400"]
)
def test_nan_and_negative_timeouts_are_value_errors(timeout: float) -> None:
    a, b = memhal.Channel.pair()
    with pytest.raises(memhal.InvalidArgumentError, match="timeout"):
        b.receive(timeout=timeout)
    with pytest.raises(ValueError):
        b.receive_frame(timeout=timeout)
    with pytest.raises(memhal.InvalidArgumentError):
        b.receive(timeout="1")  # type: ignore[arg-type]


def test_a_zero_timeout_does_not_wait() -> None:
    _, b = memhal.Channel.pair()
    start = time.monotonic()
    with pytest.raises(memhal.BusyError):
        b.receive(timeout=0)
    assert time.monotonic() - start < 1


def test_recordings_replay_every_tensor_with_its_timestamp(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "run.mhr")
    recorder = memhal.Recorder(path)
    for i in range(3):
        t = memhal.Tensor((2, 3), "f32", memory="mem")
        with t.map("write") as m:
            np.asarray(m)[:] = i
        recorder.write(t, timestamp_ns=1000 * i)
    assert recorder.records_written == 3
    del recorder
    records = list(memhal.Replayer(path))
    assert [r.timestamp_ns for r in records] == [0, 1000, 2000]
    assert all(r.has_payload and r.memory_name == "mem" for r in records)
    with records[2].materialize().map("read") as m:
        assert np.asarray(m).tolist() == [[2.0] * 3] * 2


def test_a_damaged_recording_is_reported_as_corrupt(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.mhr"
    recorder = memhal.Recorder(str(path))
    recorder.write(memhal.Tensor((64,), "u8", memory="mem"), timestamp_ns=1)
    del recorder
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(memhal.Error) as info:
        list(memhal.Replayer(str(path)))
    assert info.value.code == memhal.ErrorCode.CORRUPT


def test_a_gl_processor_converts_pbo_images_and_counts_what_ran_where() -> None:
    try:
        gl = memhal.ImageProcessor(threads=1, backend="gl")
    except memhal.Error as e:
        pytest.skip(f"no GL here: {e}")
    assert gl.backend == "gl" and gl.gl_renderer
    src = gl.create_image(64, 48, "rgb", memory="pbo")
    assert src.memory == memhal.MemoryKind.PBO
    with src.map("write") as m:
        np.asarray(m)[...] = (255, 0, 51)
    dst = gl.create_image(32, 24, "planar_rgb", dtype="f32", memory="mem")
    gl.convert(src, dst)
    with dst.map("read") as m:
        out = np.asarray(m)
    np.testing.assert_allclose(out[:, 5, 5], [1.0, 0.0, 0.2], atol=2 / 255)
    stats = gl.stats
    assert stats["gl_calls"] == 1 and stats["fallbacks"] == 0, stats


def test_backend_choice_is_validated_and_a_cpu_processor_has_no_pbo_images() -> None:
    with pytest.raises(memhal.InvalidArgumentError, match="vulkan"):
        memhal.ImageProcessor(backend="vulkan")
    cpu = memhal.ImageProcessor(threads=1, backend="cpu")
    assert cpu.backend == "cpu" and cpu.gl_renderer is None
    with pytest.raises(memhal.UnavailableError, match="gl backend"):
        cpu.create_image(8, 8, "rgb", memory="pbo")


@pytest.mark.parametrize("options, says", [
    ({"crop": (0, 0, 10)}, "crop: expected 4 values"),
    ({"crop": (0, 0, 10, 2.5)}, "crop height: expected an int, got float"),
    ({"crop": 5}, "crop: expected a sequence"),
    ({"pad": (300, 0, 0)}, r"pad\[0\]: 300 is outside \[0, 255\]"),
    ({"pad": (0, -1)}, r"pad\[1\]: -1 is outside"),
    ({"pad": (1 << 64,)}, "int64 range"),
    ({"pad": ()}, "expected 1 to 4 values, got 0"),
    ({"mean": ("a",)}, r"mean\[0\]: expected a number, got str"),
    ({"std": (1, 2, 3, 4, 5)}, "std: expected 1 to 4 values, got 5"),
    ({"rotation": 1.5}, "rotation: expected an int, got float"),
    ({"rotation": 1 << 80}, "rotation.*int64 range"),
])
def test_convert_options_of_the_wrong_type_or_range_are_invalid_arguments_naming_them(options: dict[str, object],
                                                                                    says: str) -> None:
    src = memhal.Tensor.image(16, 16, "rgb", memory="mem")
    dst = memhal.Tensor.image(8, 8, "rgb", memory="mem")
    p = memhal.ImageProcessor(threads=1, backend="cpu")
    with pytest.raises(memhal.InvalidArgumentError, match=says):
        p.convert(src, dst, **options)


def test_a_backend_is_an_image_backend_its_wire_string_or_its_code_and_nothing_else() -> None:
    backends: tuple[memhal.ImageBackend | str | int, ...] = (memhal.ImageBackend.CPU, "cpu", "CPU", 0)
    for spelling in backends:
        assert memhal.ImageProcessor(threads=1, backend=spelling).backend == "cpu"
    with pytest.raises(memhal.InvalidArgumentError, match="backend: expected a ImageBackend"):
        memhal.ImageProcessor(backend=1.5)  # type: ignore[arg-type]
    with pytest.raises(memhal.InvalidArgumentError, match="backend: unknown ImageBackend code 7"):
        memhal.ImageProcessor(backend=7)


def test_convert_batch_fills_each_image_from_frames_of_different_sizes_and_formats() -> None:
    red = memhal.Tensor.image(8, 4, "rgb", memory="mem")
    with red.map("write") as m:
        a = np.asarray(m)
        a[..., 0], a[..., 1], a[..., 2] = 255, 0, 0
    grey = memhal.Tensor.image(6, 6, "grey", memory="mem")
    with grey.map("write") as m:
        np.asarray(m)[...] = 51
    batch = memhal.Tensor((2, 3, 6, 8), "f32", memory="mem")  # w = 8: no {h, w, c} reading
    processor = memhal.ImageProcessor(threads=1)
    processor.convert_batch([red, grey], batch)
    with batch.map("read") as m:
        out = np.asarray(m)
    np.testing.assert_allclose(out[0, 0], 1.0, atol=1e-6)
    np.testing.assert_allclose(out[0, 1:], 0.0, atol=1e-6)
    np.testing.assert_allclose(out[1], 0.2, atol=1e-6)
    with pytest.raises(memhal.InvalidArgumentError, match="frame count"):
        processor.convert_batch([red], batch)
