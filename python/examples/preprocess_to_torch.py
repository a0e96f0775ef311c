#!/usr/bin/env python3
"""The job memhal's Python users run: frames → letterboxed f32 NCHW → torch, without a copy.

Frames come from a TensorPool of NV12 images (a synthetic moving pattern) or, with --camera,
from a V4L2 device. memhal.ImageProcessor converts each one (colour conversion, letterbox
resize, scaling to [0, 1]) straight into a planar RGB f32 image whose memory torch sees through
DLPack (torch.from_dlpack, no copy: the same data pointer), and a torchvision model (random
weights; resnet18 when python3-torchvision is installed, else a small torch.nn network) runs on
it. Prints the time of each stage per frame.

    python3 python/examples/preprocess_to_torch.py --frames 20
    python3 python/examples/preprocess_to_torch.py --camera /dev/video0 --frames 100
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator

import numpy as np
import torch

import memhal


def pool_frames(width: int, height: int, count: int) -> Iterator[memhal.Tensor]:
    """NV12 frames from a pool: each slot goes back once the conversion is done with it."""
    pool = memhal.TensorPool.image(width, height, "nv12", count=4)
    ramp = np.arange(width, dtype=np.uint8)
    for index in range(count):
        frame = pool.acquire(timeout=1.0)
        with frame.map("write") as m:
            np.asarray(m.plane(0))[:, :width] = np.roll(ramp, index * 8)  # luma: a moving ramp
            np.asarray(m.plane(1))[:] = 128  # neutral chroma
        yield frame


def camera_frames(path: str, count: int) -> Iterator[memhal.Tensor]:
    """Frames of a V4L2 camera, each the driver's own buffer."""
    camera = memhal.V4l2Camera(path)
    for _, frame in zip(range(count), camera):
        yield frame.to_tensor()


def make_model() -> tuple[torch.nn.Module, str]:
    """resnet18 with random weights when torchvision is installed, else a small CNN."""
    try:
        import torchvision  # type: ignore[import]
    except ImportError:
        small = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
        return small.eval(), "a small torch.nn CNN (python3-torchvision not installed)"
    model: torch.nn.Module = torchvision.models.resnet18(weights=None)
    return model.eval(), f"torchvision {torchvision.__version__} resnet18, random weights"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--camera", help="a V4L2 capture device (default: synthetic frames from a TensorPool)")
    parser.add_argument("--frames", type=int, default=10, help="frames to run (default 10)")
    parser.add_argument("--size", type=int, default=224, help="model input side (default 224)")
    parser.add_argument("--width", type=int, default=1280, help="synthetic frame width (default 1280)")
    parser.add_argument("--height", type=int, default=720, help="synthetic frame height (default 720)")
    args = parser.parse_args(argv)

    processor = memhal.ImageProcessor()
    # Host memory: the address torch gets is the one numpy sees, so the zero-copy claim is checked.
    image = memhal.Tensor.image(args.size, args.size, "planar_rgb", dtype="f32", memory="mem", row_align=4)
    batch = image.reshape((1, 3, args.size, args.size))  # NCHW view of the same bytes
    start = time.perf_counter()
    x = torch.from_dlpack(batch)  # type: ignore[attr-defined]  # (torch 1.13 does not declare it)
    handoff_ms = (time.perf_counter() - start) * 1e3
    assert x.data_ptr() == batch.numpy().ctypes.data, "torch got a copy"
    model, described = make_model()
    print(f"backend: {processor.backend}; model: {described}; input {tuple(x.shape)} {x.dtype}")
    print(f"handoff: torch.from_dlpack took {handoff_ms:.3f} ms once, no copy (same data pointer)")

    frames = camera_frames(args.camera, args.frames) if args.camera else pool_frames(args.width, args.height,
                                                                                      args.frames)
    times: dict[str, list[float]] = {"capture": [], "preprocess": [], "inference": []}
    outputs = 0
    last = time.perf_counter()
    with torch.no_grad():
        for frame in frames:
            captured = time.perf_counter()
            processor.convert(frame, image, resize="letterbox", pad=(114,))  # f32: scaled to [0, 1]
            del frame  # the pool slot (or camera buffer) goes back now
            converted = time.perf_counter()
            logits = model(x)  # reads the converted frame: x and image share memory
            done = time.perf_counter()
            outputs += int(logits.shape[0])
            times["capture"].append((captured - last) * 1e3)
            times["preprocess"].append((converted - captured) * 1e3)
            times["inference"].append((done - converted) * 1e3)
            last = time.perf_counter()
    if outputs == 0:
        print("no frames")
        return 1
    for stage, values in times.items():
        print(f"{stage:>10}: {statistics.median(values):8.3f} ms median over {len(values)} frames")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
