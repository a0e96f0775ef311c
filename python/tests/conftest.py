"""Shared fixtures of the memhal pytest suite (run by CTest with PYTHONPATH=<build>/python)."""
from __future__ import annotations

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def golden_rows() -> list[tuple[str, int, str, list[str]]]:
    """(vocabulary, code, wire, aliases) for every line of the golden vocabulary file."""
    path = os.environ.get("MEMHAL_GOLDEN", str(REPO / "tests" / "core" / "vocabulary_golden.txt"))
    rows = []
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            vocabulary, code, wire, *aliases = line.split()
            rows.append((vocabulary, int(code), wire, aliases))
    assert rows, f"no rows in {path}"
    return rows


@pytest.fixture
def memhal_cli() -> str:
    """Path of the memhal command built next to the module, or a skip."""
    path = os.environ.get("MEMHAL_CLI", "")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("memhal command not built (MEMHAL_CLI unset); configure with MEMHAL_BUILD_TOOLS=ON")
    return path
