#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then uses it as an outside project would:
#  * the installed `memhal` command runs with no LD_LIBRARY_PATH (its RUNPATH finds the library);
#  * the consumer project builds with CMake (find_package: memhal::memhal and memhal::c);
#  * a C-only project builds with find_package(memhal COMPONENTS c), strict C99 and -Werror;
#    an unknown component fails the configure, naming it;
#  * with pkg-config: a C program under -std=c99 -Werror, a C++ one with the cxxflags variable.
# A cross build (CMAKE_CROSSCOMPILING) sets MEMHAL_INSTALL_CROSS_ARGS (the toolchain file), CC and
# CXX, so the consumers are cross-built too; they and the command then run through binfmt.
set -eu
build=$1 consumer=$2 work=$3 with_cli=${4:-1}
cross_args=${MEMHAL_INSTALL_CROSS_ARGS:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
prefix=$work/prefix
fail() {
  echo "install: $*" >&2
  exit 1
}

pc_dir=$(dirname "$(find "$prefix" -name memhal.pc | head -1)")
pc_version=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --modversion memhal)
version="memhal $pc_version"

# The command, from the prefix alone (a build with MEMHAL_BUILD_TOOLS=OFF has none).
if [ "$with_cli" = 1 ]; then
  [ -x "$prefix/bin/memhal" ] || fail "no $prefix/bin/memhal"
  env -u LD_LIBRARY_PATH "$prefix/bin/memhal" info >"$work/info.log" 2>&1 ||
    fail "installed memhal info failed without LD_LIBRARY_PATH: $(cat "$work/info.log")"
  said=$(env -u LD_LIBRARY_PATH "$prefix/bin/memhal" --version)
  [ "$said" = "$version" ] || fail "memhal --version says '$said', memhal.pc says '$pc_version'"
fi

run() { LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64:${LD_LIBRARY_PATH:-}" "$@"; }

# CMake, C++ and C.
cmake -S "$consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" $cross_args >"$work/configure.log"
cmake --build "$work/cmake-build" >"$work/build.log"
run "$work/cmake-build/consumer"
run "$work/cmake-build/c_consumer"

# CMake, a C-only project asking for the c component.
cmake -S "$here/c_consumer" -B "$work/c-build" -DCMAKE_PREFIX_PATH="$prefix" $cross_args >"$work/c-configure.log"
cmake --build "$work/c-build" >"$work/c-build.log"
run "$work/c-build/c_only_consumer"
if cmake -S "$here/c_consumer" -B "$work/bad-build" -DCMAKE_PREFIX_PATH="$prefix" $cross_args \
  "-DMEMHAL_COMPONENTS=c;nosuch" >"$work/bad-configure.log" 2>&1; then
  fail "find_package(memhal COMPONENTS nosuch) succeeded"
fi
grep -q "no component 'nosuch'" "$work/bad-configure.log" ||
  fail "an unknown component fails without naming it: $(cat "$work/bad-configure.log")"

# pkg-config: Cflags a strict C99 build takes, and C++20 through the cxxflags variable.
cflags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags memhal)
libs=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --libs memhal)
cxxflags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --variable=cxxflags memhal)
${CC:-cc} -std=c99 -Wall -Wextra -pedantic -Werror "$consumer/c_consumer.c" $cflags $libs -o "$work/pkg-config-c-consumer"
run "$work/pkg-config-c-consumer"
${CXX:-c++} $cxxflags "$consumer/main.cpp" $cflags $libs -o "$work/pkg-config-consumer"
run "$work/pkg-config-consumer"
echo "install: $version runs from its prefix; consumers built with find_package (C++, C, C-only" \
  "with COMPONENTS c) and with pkg-config (C99 -Werror, C++20)"
