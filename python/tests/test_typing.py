"""The stub (memhal/__init__.pyi) matches the module, every public thing has a docstring and a
signature, and the examples and tests type-check under `mypy --strict` (where mypy is installed)."""
from __future__ import annotations

import ast
import enum
import importlib.util
import inspect
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

import memhal
from conftest import REPO

PACKAGE = pathlib.Path(memhal.__file__).parent
# Every test file is written typed (the deliberate wrong-type calls carry `# type: ignore[<code>]`).
TYPED_TESTS = sorted(path.name for path in pathlib.Path(__file__).resolve().parent.glob("*.py"))
DUNDERS = {"__enter__", "__exit__", "__iter__", "__next__", "__len__", "__array__", "__dlpack__", "__dlpack_device__",
           "__bool__"}


def stub() -> ast.Module:
    return ast.parse((PACKAGE / "__init__.pyi").read_text())


def stub_classes() -> dict[str, set[str]]:
    """Public classes of the stub and their members (methods, properties, attributes, enum members)."""
    out: dict[str, set[str]] = {}
    for node in stub().body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name != "__init__":
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members.update(t.id for t in item.targets if isinstance(t, ast.Name))
            out[node.name] = members
    return out


def stub_names() -> set[str]:
    names = set(stub_classes())
    for node in stub().body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return {n for n in names if not n.startswith("_")}


def public_members(cls: type) -> set[str]:
    if issubclass(cls, enum.Enum):
        extras = {"numpy"} if cls is memhal.DType else set()
        return set(cls.__members__) | extras
    return {name for name in vars(cls) if (not name.startswith("_") or name in DUNDERS) and name != "__init__"}


def test_every_public_name_is_in_all_and_the_stub_and_nothing_else() -> None:
    public = {name for name in dir(memhal) if not name.startswith("_") and not isinstance(getattr(memhal, name),
                                                                                            type(memhal))}
    assert set(memhal.__all__) == public
    assert stub_names() == public, (stub_names() - public, public - stub_names())


def test_every_class_of_the_stub_has_the_members_of_the_module() -> None:
    classes = stub_classes()
    for name, members in classes.items():
        cls = getattr(memhal, name)
        if issubclass(cls, BaseException):
            continue
        assert members == public_members(cls), (name, members - public_members(cls), public_members(cls) - members)


def docstring(value: Any) -> str:
    """The docstring without the signature line pybind11 puts first."""
    doc = inspect.getdoc(value) or ""
    first, _, rest = doc.partition("\n")
    return rest.strip() if first.startswith(getattr(value, "__name__", "\0") + "(") else doc.strip()


def test_every_public_class_method_and_property_has_a_docstring() -> None:
    missing = []
    for name in memhal.__all__:
        value = getattr(memhal, name)
        if not docstring(value):
            missing.append(name)
        if not isinstance(value, type) or issubclass(value, BaseException):
            continue
        for member in public_members(value) - set(getattr(value, "__members__", {})):
            attribute = inspect.getattr_static(value, member)
            if isinstance(attribute, (staticmethod, classmethod)):
                attribute = attribute.__func__
            if not docstring(attribute):
                missing.append(f"{name}.{member}")
    assert not missing, missing


def test_signatures_name_the_arguments_and_their_defaults() -> None:
    assert str(inspect.signature(memhal.Tensor.map)) == "(self, /, access='read_write')"
    parameters = inspect.signature(memhal.TensorPool.acquire).parameters
    assert list(parameters) == ["self", "timeout"] and parameters["timeout"].default is None
    assert list(inspect.signature(memhal.from_dlpack).parameters) == ["obj", "device", "copy", "memory"]
    assert inspect.signature(memhal.from_dlpack).parameters["copy"].kind == inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(memhal.Tensor.image).parameters)[:3] == ["width", "height", "format"]
    checked = 0
    for name in memhal.__all__:
        value = getattr(memhal, name)
        if isinstance(value, type) and not issubclass(value, (BaseException, enum.Enum)):
            for member, attribute in vars(value).items():
                if callable(attribute) and not member.startswith("__") or member in DUNDERS - {"__array__"}:
                    inspect.signature(getattr(value, member))  # raises ValueError without a text signature
                    checked += 1
    assert checked > 60


def test_the_stub_enums_are_the_tables() -> None:
    for node in stub().body:
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "_Vocabulary" for b in node.bases):
            members = {t.id: ast.literal_eval(item.value) for item in node.body if isinstance(item, ast.Assign)
                       for t in item.targets if isinstance(t, ast.Name)}
            assert members == {m.name: m.value for m in getattr(memhal, node.name)}, node.name


def test_the_examples_and_tests_type_check_under_mypy_strict(tmp_path: pathlib.Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (Debian: python3-mypy; scripts/deps.sh installs it)")
    env = dict(os.environ, MYPYPATH=str(PACKAGE.parent))
    tests = REPO / "python" / "tests"
    targets = [str(REPO / "python" / "examples")] + [str(tests / name) for name in TYPED_TESTS]
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                           "--explicit-package-bases", *targets], capture_output=True, text=True, env=env,
                          cwd=str(REPO / "python" / "tests"))
    assert done.returncode == 0, done.stdout + done.stderr
