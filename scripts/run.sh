#!/usr/bin/env bash
# The main job: installs what is missing, builds the memhal command (Release) and runs
# `memhal demo` — a synthetic camera fanning NV12 frames out, without copying them, to an
# in-process consumer and a second process (3 seconds; see `memhal demo --help`).
# Usage: scripts/run.sh [arguments for memhal, default: demo]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMHAL_BUILD_TESTS=OFF \
  -DMEMHAL_BUILD_BENCH=OFF -DMEMHAL_BUILD_PYTHON=OFF >/dev/null
cmake --build build/release --target memhal_cli
if [ $# -eq 0 ]; then set -- demo; fi
exec build/release/tools/memhal "$@"
