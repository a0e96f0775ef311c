"""python/examples/preprocess_to_torch.py runs: pool frames → letterboxed f32 NCHW → torch (no copy) → a model."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import REPO


def test_preprocess_to_torch_runs_each_stage_without_a_copy() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (Debian: python3-torch)")
    script = REPO / "python" / "examples" / "preprocess_to_torch.py"
    done = subprocess.run([sys.executable, str(script), "--frames", "3", "--size", "32", "--width", "64",
                           "--height", "48"], capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "no copy (same data pointer)" in done.stdout, done.stdout
    for stage in ("capture", "preprocess", "inference"):
        assert f"{stage}:" in done.stdout and "median over 3 frames" in done.stdout, done.stdout
