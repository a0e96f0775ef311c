#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) and runs each for SECONDS (default 60),
# as many at once as there are cores,
# from its seed corpus in tests/fuzz/corpus/<target>. New inputs go to build/fuzz/corpus/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
scripts/deps.sh clang-14 libclang-rt-14-dev
source scripts/lib/line-tables.sh
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DMEMHAL_FUZZ=ON -DMEMHAL_SANITIZE=address,undefined \
  -DMEMHAL_BUILD_TESTS=OFF -DMEMHAL_BUILD_BENCH=OFF -DMEMHAL_BUILD_TOOLS=OFF "${line_tables[@]}" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(ls tests/fuzz/corpus))
  targets=("${targets[@]/%/_fuzz}")
fi
cmake --build build/fuzz -j "$(nproc)" --target "${targets[@]}"
# One target per core at a time: each libFuzzer run is single-threaded, so on the 2-core CI
# machine two targets side by side take the wall time of one without shortening either run.
fuzz_one() {
  local target=$1 name=${1%_fuzz}
  mkdir -p "build/fuzz/corpus/$name"
  build/fuzz/tests/fuzz/"$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 "build/fuzz/corpus/$name" "tests/fuzz/corpus/$name" \
    >"build/fuzz/$target.log" 2>&1
}
cores=$(nproc)
declare -A pid_of
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do wait -n || true; done
  echo "fuzz: $target for ${seconds}s"
  fuzz_one "$target" &
  pid_of[$target]=$!
done
status=0
for target in "${targets[@]}"; do
  if ! wait "${pid_of[$target]}"; then
    echo "fuzz: $target FAILED"; tail -40 "build/fuzz/$target.log"; status=1
  else
    echo "fuzz: $target passed"
    grep -E "stat::number_of_executed_units|Done" "build/fuzz/$target.log" | tail -2
  fi
done
exit $status
