"""`pip install .` and `pip wheel .` from a copy of the checkout, with Debian's setuptools and no
download (--no-build-isolation), give a package that imports in a fresh virtual environment.

Slow the first time (a Release build of the library: minutes); ccache makes later runs a link
and a configure (setup.py keys ccache on paths relative to the checkout)."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

CHECK = (
    "import importlib.metadata, pathlib, memhal; "
    "print(memhal.__file__); print(importlib.metadata.version('memhal')); print(memhal.__version__); "
    "print(memhal.DType.F32.code); "
    "print(sorted(p.name for p in pathlib.Path(memhal.__file__).parent.iterdir() if p.suffix in ('.pyi', '.typed')))"
)


def clean_env() -> dict[str, str]:
    """The environment without the build tree's PYTHONPATH (the venv must find its own memhal)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def venv(path: pathlib.Path) -> pathlib.Path:
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(path)], check=True)
    return path / "bin" / "python"


def check_import(python: pathlib.Path, prefix: pathlib.Path, cwd: pathlib.Path) -> None:
    out = subprocess.run([str(python), "-c", CHECK], check=True, capture_output=True, text=True, env=clean_env(),
                         cwd=str(cwd)).stdout.splitlines()
    assert out[0].startswith(str(prefix)), out  # this venv's copy, not the build tree's
    assert out[1] == out[2], out  # metadata version == memhal.__version__
    assert out[3] == "9"
    assert out[4] == "['__init__.pyi', 'py.typed']"


def test_pip_install_and_pip_wheel_from_a_copy_of_the_checkout(tmp_path: pathlib.Path) -> None:
    for module in ("venv", "setuptools", "wheel", "pip"):
        found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0
        if not found:
            pytest.skip(f"{sys.executable} has no {module} (Debian: python3-venv, python3-setuptools, "
                        "python3-wheel, python3-pip; scripts/deps.sh installs them)")
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the copy is made from git ls-files")
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                           capture_output=True).stdout.decode().split("\0")
    source = tmp_path / "memhal"
    for name in filter(None, files):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    env = dict(clean_env(), PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")

    first = tmp_path / "venv-install"
    python = venv(first)
    subprocess.run([str(python), "-m", "pip", "install", "--no-build-isolation", "--no-deps", str(source)],
                   check=True, capture_output=True, env=env)
    check_import(python, first, tmp_path)

    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(dist),
                    str(source)], check=True, capture_output=True, env=env)
    wheels = list(dist.glob("memhal-*.whl"))
    assert len(wheels) == 1, wheels
    second = tmp_path / "venv-wheel"
    python = venv(second)
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", str(wheels[0])], check=True,
                   capture_output=True, env=env)
    check_import(python, second, tmp_path)
