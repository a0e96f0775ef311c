#!/usr/bin/env bash
# The main job: installs what is missing, builds memhal (Release), and runs `memhal info`.
# Usage: scripts/run.sh [arguments for memhal, default: info]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMHAL_BUILD_TESTS=OFF -DMEMHAL_BUILD_BENCH=OFF >/dev/null
cmake --build build/release --target memhal_cli
if [ $# -eq 0 ]; then set -- info; fi
exec build/release/tools/memhal "$@"
