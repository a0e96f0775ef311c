# Cross-compiling memhal for 64-bit ARM Linux (Raspberry Pi 4/5, Jetson, i.MX8/9, RK3588) on a
# Debian/Ubuntu x86-64 host, with Debian's cross compiler and multiarch :arm64 -dev packages
# (scripts/cross-test.sh installs them):
#   cmake -S . -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# The ISA stays at the compiler's default (armv8-a): Highway compiles NEON, SVE, SVE2 (and
# their 128/256-bit variants) side by side and picks one at run time. Adding +sve to -march
# would make SVE the baseline and the binaries would die with SIGILL on NEON-only boards.
# Tests run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR); QEMU_CPU chooses the emulated CPU.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# The cross sysroot holds only libc and libstdc++; the :arm64 -dev packages live in the
# multiarch directories under / (/usr/lib/aarch64-linux-gnu, /usr/include/aarch64-linux-gnu),
# so / is a find root too. Programs (python3, bash) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(PKG_CONFIG_EXECUTABLE aarch64-linux-gnu-pkg-config CACHE FILEPATH "pkg-config for the arm64 .pc files")

# No "-L /usr/aarch64-linux-gnu": with libc6:arm64 installed, the guest's loader and libc must
# both come from the multiarch directories; the cross sysroot's loader with the multiarch libc
# is a mismatched pair (Mesa's llvmpipe hangs under it).
find_program(MEMHAL_QEMU_AARCH64 qemu-aarch64)
if(MEMHAL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${MEMHAL_QEMU_AARCH64})
endif()
