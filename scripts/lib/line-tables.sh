# Sourced by scripts/test.sh, scripts/cross-test.sh and scripts/fuzz.sh: CMake arguments that
# build with line tables only (-g1) instead of full debug information (-g). Sanitizer reports,
# libFuzzer crashes and backtraces still name file and line; the compiles take a quarter to two
# fifths less time (measured on the 2-core machine: kernels.cpp 29.8 -> 22.6 s at -O2, the ASan
# build's pixel_io.cpp 25.7 -> 14.6 s), which keeps the test command inside CI's budget.
# shellcheck shell=bash
# shellcheck disable=SC2034 # used by the scripts that source this file
line_tables=(
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
  -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1
)
