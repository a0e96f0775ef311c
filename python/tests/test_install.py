"""`cmake --install --component python` gives a module that imports on its own (no build tree)."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import memhal


def test_the_installed_module_imports_from_a_scratch_prefix(tmp_path: pathlib.Path) -> None:
    build = os.environ.get("MEMHAL_BUILD_DIR")
    if not build:
        pytest.skip("MEMHAL_BUILD_DIR unset: run through CTest to know the build tree")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", build, "--component", "python", "--prefix", str(prefix)],
                   check=True, capture_output=True)
    site = prefix / "lib" / "python3" / "dist-packages"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c",
                          "import memhal; print(memhal.__file__); print(memhal.MemoryKind.DMABUF.code)"],
                         check=True, capture_output=True, text=True, env=env, cwd=str(tmp_path)).stdout.split()
    assert out[0].startswith(str(site))
    assert out[1] == "2"


def test_the_version_is_one_on_every_surface(memhal_cli: str) -> None:
    import re
    from conftest import REPO
    project = re.search(r"project\(memhal VERSION (\d+\.\d+\.\d+)", (REPO / "CMakeLists.txt").read_text())
    assert project, "no project(memhal VERSION x.y.z) in CMakeLists.txt"
    assert memhal.__version__ == project.group(1)
    out = subprocess.run([memhal_cli, "--version"], check=True, capture_output=True, text=True).stdout
    assert out == f"memhal {memhal.__version__}\n"
