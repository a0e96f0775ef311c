"""Builds memhal._memhal with CMake for `pip install .` / `pip wheel .` (see pyproject.toml).

The version comes from CMakeLists.txt (project(memhal VERSION ...)), so the package metadata,
memhal.__version__ and `memhal --version` agree. Extra CMake arguments: $CMAKE_ARGS; the build
uses ccache and Ninja when they are installed, and $CMAKE_BUILD_PARALLEL_LEVEL jobs (default 2).
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def project_version() -> str:
    found = re.search(r"project\(memhal VERSION (\d+\.\d+\.\d+)", (ROOT / "CMakeLists.txt").read_text())
    if not found:
        raise RuntimeError("no project(memhal VERSION x.y.z) in CMakeLists.txt")
    return found.group(1)


class CMakeBuild(build_ext):
    """Configures the project with only the Python module on and copies the module out."""

    def build_extension(self, ext: Extension) -> None:
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        args = [
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DMEMHAL_BUILD_PYTHON=ON",
            "-DMEMHAL_BUILD_TESTS=OFF",
            "-DMEMHAL_BUILD_TOOLS=OFF",
            "-DMEMHAL_BUILD_BENCH=OFF",
        ]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        if shutil.which("ccache"):
            args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        args += os.environ.get("CMAKE_ARGS", "").split()
        # Paths relative to the checkout in ccache's keys: a copy elsewhere hits the same entries.
        env = dict(os.environ, CCACHE_BASEDIR=os.environ.get("CCACHE_BASEDIR", str(ROOT)))
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *args], check=True, env=env)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.run(["cmake", "--build", str(build), "--target", "memhal_python", "-j", jobs], check=True, env=env)
        built = next((build / "python" / "memhal").glob("_memhal*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    version=project_version(),
    packages=["memhal"],
    package_dir={"memhal": "python/memhal"},
    package_data={"memhal": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("memhal._memhal", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
