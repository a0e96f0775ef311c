#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks every tracked C and C++ file against
# .clang-format (a misformatted file fails the run), then builds and runs every test twice —
# a warnings-as-errors build, and an ASan+UBSan build of the unit tests — plus a TSan build
# of the concurrency stress tests (CTest label tsan), and a short libFuzzer run of every
# parser (scripts/fuzz.sh; longer runs: scripts/fuzz.sh SECONDS). The first run includes the
# CTest label dmaheap: DmaBuf tests inside a real kernel with DMA heaps, udmabuf, vivid and
# vgem, booted under qemu by ../shared/tools/run-in-dmaheap-vm (skipped where it is missing).
# Last, scripts/cross-test.sh aarch64: a cross build for ARM boards whose tests run under
# qemu-user, the image kernels once per emulated CPU (NEON, SVE, SVE2, SVE2_128, SVE_256).
# Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
status=0

section() { printf '\n==== %s ====\n' "$*"; }
source scripts/lib/line-tables.sh # line_tables: -g1 for every build here

section "format (clang-format --dry-run -Werror over every tracked C and C++ file)"
git ls-files -z -- '*.c' '*.h' '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run -Werror || status=1

section "build (warnings are errors)"
cmake -S . -B build/ci -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMHAL_WERROR=ON "${line_tables[@]}" >/dev/null
cmake --build build/ci -j "$jobs"
section "tests"
ctest --test-dir build/ci -j "$jobs" --output-on-failure || status=1

section "build (ASan+UBSan)"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMHAL_WERROR=ON "${line_tables[@]}" \
  -DMEMHAL_SANITIZE=address,undefined -DMEMHAL_BUILD_BENCH=OFF >/dev/null
cmake --build build/asan -j "$jobs"
section "tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan -j "$jobs" --output-on-failure -L unit || status=1

section "build (TSan: the concurrency stress tests and the Channel)"
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMHAL_WERROR=ON "${line_tables[@]}" \
  -DMEMHAL_SANITIZE=thread -DMEMHAL_BUILD_BENCH=OFF >/dev/null
cmake --build build/tsan -j "$jobs" --target frame_stress_test image_stress_test ipc_test channel_peer
section "tests under TSan"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build/tsan -j "$jobs" --output-on-failure -L tsan || status=1

section "fuzzing (libFuzzer, 60 s a target, one target per core at a time)"
scripts/fuzz.sh 60 || status=1

section "aarch64: cross build, tests under qemu-user (scripts/cross-test.sh)"
scripts/cross-test.sh aarch64 || status=1

section "result"
[ $status -eq 0 ] && echo "all test runs passed" || echo "some test runs FAILED"
exit $status
