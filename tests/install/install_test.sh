#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds the consumer project against it
# with CMake (find_package) and with pkg-config, and runs both programs.
set -eu
build=$1 consumer=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/cmake-build" >"$work/build.log"
LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64:${LD_LIBRARY_PATH:-}" "$work/cmake-build/consumer"
LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64:${LD_LIBRARY_PATH:-}" "$work/cmake-build/c_consumer"

pc_dir=$(dirname "$(find "$work/prefix" -name memhal.pc | head -1)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs memhal)
g++ "$consumer/main.cpp" $flags -o "$work/pkg-config-consumer"
LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64:${LD_LIBRARY_PATH:-}" "$work/pkg-config-consumer"
echo "install: consumer built with find_package and with pkg-config"
