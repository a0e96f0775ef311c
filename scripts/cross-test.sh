#!/usr/bin/env bash
# Cross-builds memhal for a board (library, C API, the memhal command, the unit tests) with the
# toolchain file in cmake/toolchains/ and runs the tests under qemu-user, on this x86-64 Debian
# machine. Installs what is missing first (apt: the cross compiler, qemu-user, the :arm64 -dev
# packages through multiarch). Build directory: build/ARCH.
#
#  * The image kernels run once per emulated CPU, so that every Highway target is checked
#    against the reference: NEON (cortex-a72), SVE (a64fx), SVE2 (max), SVE2_128 and SVE_256
#    (max with 128- and 256-bit vectors), and NEON on a CPU without the crypto extension
#    (cortex-a53 with AES/PMULL/SHA hidden: Highway 1.0.3 then lists no NEON, and its
#    dispatcher must still call the NEON code). Each run prints the target the dispatcher
#    picked and the targets it exercised, and fails if they are not the ones that CPU gives.
#  * Every other test runs once, on cortex-a72 (the boards are NEON-only). What cannot run
#    here is listed by CTest as skipped, with the reason: the DMA-heap VM (x86-64 only), the
#    OpenCV cross-checks (no co-installable arm64 OpenCV CMake package), the Python module
#    (python3-numpy:arm64 does not co-install).
#  * cli.same_output_as_host compares the command with this machine's own build (its
#    tables, the README's convert examples, memhal demo).
# Usage: scripts/cross-test.sh aarch64
#   MEMHAL_HOST_BUILD=dir   the host build whose memhal command is compared (default build/ci,
#                           configured as scripts/test.sh does; its command is built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

case "${1:-}" in
  aarch64) arch=aarch64 debarch=arm64 triple=aarch64-linux-gnu ;;
  *)
    echo "usage: scripts/cross-test.sh aarch64" >&2
    exit 2
    ;;
esac
build=build/$arch
host_build=${MEMHAL_HOST_BUILD:-build/ci}
jobs=$(nproc)
phases=()
phase_start=$SECONDS
section() { # ends the previous phase (its wall time goes to the summary), starts the next
  [ -n "${phase:-}" ] && phases+=("${phase%% (*}: $((SECONDS - phase_start)) s")
  phase=$1 phase_start=$SECONDS
  printf '\n==== %s ====\n' "$*"
}
source scripts/lib/line-tables.sh # line_tables: -g1, as scripts/test.sh builds
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

section "$arch: packages (cross compiler, qemu-user, :$debarch -dev packages)"
# Never libopencv-dev:arm64 (nor the OpenCV modules that pull in gdal) or python3-numpy:arm64:
# they do not co-install with their amd64 versions, and apt would remove those (and python3).
if ! dpkg --print-foreign-architectures | grep -qx "$debarch"; then
  echo "adding the dpkg architecture $debarch (multiarch)"
  $sudo dpkg --add-architecture "$debarch"
fi
binfmt_package=qemu-user-binfmt
dpkg-query -W -f='${Status}' qemu-user-static 2>/dev/null | grep -q "install ok installed" && binfmt_package=""
scripts/deps.sh "g++-$triple" qemu-user $binfmt_package binfmt-support "pkgconf:$debarch" \
  "libgtest-dev:$debarch" "libgmock-dev:$debarch" "libhwy-dev:$debarch" "zlib1g-dev:$debarch" \
  "libpng-dev:$debarch" "libjpeg62-turbo-dev:$debarch" "libegl-dev:$debarch" "libgles-dev:$debarch" \
  "libegl-mesa0:$debarch" "libgl1-mesa-dri:$debarch"
qemu=$(command -v "qemu-$arch")

# binfmt: the tests that start a program themselves (the CLI scripts, memhal demo's second
# process, the install test) run $arch programs directly, which qemu-user does not intercept.
# It is kernel state: a fresh machine needs the mount and the enable every time.
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
  $sudo mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
fi
if ! grep -qs '^enabled' "/proc/sys/fs/binfmt_misc/qemu-$arch"; then
  $sudo update-binfmts --enable "qemu-$arch" || true
fi
binfmt_reason=""
if ! grep -qs '^enabled' "/proc/sys/fs/binfmt_misc/qemu-$arch"; then
  binfmt_reason="binfmt_misc has no enabled qemu-$arch entry (mount binfmt_misc, update-binfmts --enable qemu-$arch)"
fi

section "host build of the memhal command ($host_build), to compare outputs with"
if [ ! -f "$host_build/build.ninja" ]; then
  cmake -S . -B "$host_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMHAL_WERROR=ON "${line_tables[@]}" >/dev/null
fi
cmake --build "$host_build" -j "$jobs" --target memhal_cli
host_cli=$(realpath "$host_build/tools/memhal")

section "$arch: cross build ($build, cmake/toolchains/$triple.cmake)"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/$triple.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMHAL_WERROR=ON -DMEMHAL_BUILD_BENCH=OFF "${line_tables[@]}" \
  -DMEMHAL_HOST_CLI="$host_cli" "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$jobs"
file -bL "$build/src/libmemhal.so" | cut -d, -f1-2

# NEON code runs on CPUs without the crypto extension only if it uses none of its instructions.
crypto=$("$triple-objdump" -d "$build/src/libmemhal.so" | grep -cE $'\t(aes[ed]|aes(i)?mc|pmull2?|sha1[chmp]|sha1su[01]|sha256h2?|sha256su[01])\t' || true)
if [ "$crypto" -ne 0 ]; then
  echo "FAIL: libmemhal.so has $crypto crypto-extension instructions; Raspberry Pi 3/4 class CPUs lack them"
  status=1
else
  echo "libmemhal.so uses no crypto-extension instruction (AES, PMULL, SHA): its NEON code runs on CPUs without them"
fi
status=${status:-0}

section "$arch: image kernels once per emulated CPU (qemu-$arch -cpu ...)"
# QEMU_CPU | what the tests see | the dispatcher's pick | the targets the CPU has, best first
cpus=(
  "cortex-a72||NEON|NEON"
  "a64fx||SVE|SVE NEON"
  "max||SVE2|SVE2 SVE NEON"
  "max,sve-default-vector-length=16||SVE2_128|SVE2_128 SVE2 SVE NEON"
  "max,sve-default-vector-length=32||SVE_256|SVE_256 SVE2 SVE NEON"
  "cortex-a53|no crypto extension|NEON|NEON"
)
per_cpu='^ImageProcessor(Batch)?\.'
hide_hwcap=$(realpath "$build/tests/image/libmemhal_hide_hwcap.so")
summary=()
for entry in "${cpus[@]}"; do
  IFS='|' read -r cpu variant pick targets <<<"$entry"
  label=$cpu${variant:+ ($variant)}
  log="$build/simd-${cpu//[^a-z0-9]/_}${variant:+-nocrypto}.log"
  env_args=(QEMU_CPU="$cpu" MEMHAL_TEST_EXPECT_SIMD_PICK="$pick" MEMHAL_TEST_EXPECT_SIMD_TARGETS="$targets")
  # HWCAP_AES | HWCAP_PMULL | HWCAP_SHA1 | HWCAP_SHA2, hidden from the guest by an LD_PRELOAD
  # shim (qemu's CPU models cannot switch them off); QEMU_SET_ENV reaches only the guest.
  [ -n "$variant" ] && env_args+=(QEMU_SET_ENV="LD_PRELOAD=$hide_hwcap,MEMHAL_HIDE_HWCAP=0x78")
  echo "-- $label"
  cpu_status=0
  env "${env_args[@]}" "$qemu" "$build/tests/image/image_simd_target_test" >"$log" 2>&1 || cpu_status=1
  grep -E '^\[ SIMD     \]|^WARNING: CPU supports' "$log" | awk '!seen[$0]++' || true
  simd_passed=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?.*/\1/p' "$log")
  if [ $cpu_status -ne 0 ]; then
    tail -40 "$log"
    status=1
  fi
  # The other image kernel tests (ImageProcessor.*, ImageProcessorBatch.*; one process each) on
  # whatever the dispatcher picks.
  ctest_log="$build/ctest-${cpu//[^a-z0-9]/_}${variant:+-nocrypto}.log"
  env "${env_args[@]}" ctest --test-dir "$build" -j "$jobs" -R "$per_cpu" --output-on-failure \
    >"$ctest_log" 2>&1 || { cpu_status=1; status=1; grep -E -A30 'Failed|\*\*\*' "$ctest_log" | tail -60; }
  image_passed=$(sed -nE 's/^[0-9]+% tests passed, [0-9]+ tests failed out of ([0-9]+).*/\1/p' "$ctest_log")
  image_failed=$(sed -nE 's/^[0-9]+% tests passed, ([0-9]+) tests failed.*/\1/p' "$ctest_log")
  # CTest counts a skipped test among the passed ones: count them apart, never as passes.
  image_skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .*\(Skipped\)$' "$ctest_log" || true)
  picked=$(sed -nE 's/^\[ SIMD     \] the dispatcher picks ([A-Z0-9_]+).*/\1/p' "$log")
  exercised=$(sed -nE 's/^\[ SIMD     \] exercised: (.*)/\1/p' "$log")
  result="ok"
  [ $cpu_status -ne 0 ] && result="FAILED"
  line="$label: picks ${picked:-nothing}, exercised ${exercised:-nothing}; SimdTarget ${simd_passed:-0}/2 passed,"
  line+=" ImageProcessor $(( ${image_passed:-0} - ${image_failed:-0} - ${image_skipped:-0} ))/${image_passed:-0} passed"
  [ "${image_skipped:-0}" -gt 0 ] && line+=", ${image_skipped} skipped (named in $ctest_log; ctest -V gives why)"
  line+=": $result"
  echo "$line"
  summary+=("$line")
done

section "$arch: every other test, once (QEMU_CPU=cortex-a72)"
exclude="$per_cpu|^SimdTarget\."
# Not under emulation (the native build runs them): each is named here with the reason.
not_emulated=(
  "GlConvert.EveryInputConvertsToEveryOutputAndDtypeWithinTwoSteps|an exhaustive GL matrix: Mesa's llvmpipe under qemu-user takes over 300 s (the other GL tests run)"
  "GlConvert.RandomGeometryAndPaddedPitchesMatchTheReference|an exhaustive GL matrix: over 300 s under qemu-user"
  "GlConvert.FullHdNv12ToALetterboxedPlanarF32InputTakesMeasuredTime|it measures time; emulated times say nothing"
  "GlBackend.ProcessorsComeAndGoWithoutLeakingFdsOrThreads|it counts /proc/self/task, where qemu-user leaves a joined thread's host task for a moment after pthread_join returns"
)
for entry in "${not_emulated[@]}"; do
  echo "SKIPPED under emulation: ${entry%%|*}: ${entry#*|}"
  exclude+="|^${entry%%|*}\$"
done
if [ -n "$binfmt_reason" ]; then
  echo "SKIPPED: the tests that run $arch programs themselves (labels cli, install): $binfmt_reason"
  label_exclude=(-LE '^(cli|install)$')
else
  label_exclude=()
fi
rest_log="$build/ctest-rest.log"
QEMU_CPU=cortex-a72 ctest --test-dir "$build" -j "$jobs" -E "$exclude" "${label_exclude[@]}" --output-on-failure \
  2>&1 | tee "$rest_log" | grep -vE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' || true
grep -qE '^100% tests passed' "$rest_log" || status=1
echo "not in a cross build, with the reason:"
ctest --test-dir "$build" -L '^skipped$' -V 2>&1 | awk '/^ *Start +[0-9]+: /{n=$2; sub(":","",n); name[n]=$3}
  /^[0-9]+: SKIPPED: /{k=$1; sub(":","",k); sub(/^[0-9]+: SKIPPED: /,""); print "  " name[k] ": " $0}'
rest=$(grep -E '^[0-9]+% tests passed' "$rest_log" || echo "no result")

section "$arch: result"
for line in "${summary[@]}"; do echo "$line"; done
echo "other tests (cortex-a72): $rest; skipped ones are listed above with their reason"
printf 'wall time: %s\n' "${phases[@]}"
echo "cross-test $arch: $(($(date +%s) - started)) s"
[ $status -eq 0 ] && echo "cross-test $arch passed" || echo "cross-test $arch FAILED"
exit $status
