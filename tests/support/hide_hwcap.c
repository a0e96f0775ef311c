/* LD_PRELOAD shim for aarch64 tests: getauxval(AT_HWCAP) without the bits named, in hex, by
 * MEMHAL_HIDE_HWCAP. It shows software a CPU without some extensions where the emulator
 * cannot switch them off: qemu's CPU models all have the crypto extension (AES, PMULL, SHA1,
 * SHA2: MEMHAL_HIDE_HWCAP=0x78), which the Raspberry Pi 3 and 4 lack. The instructions still
 * execute; only feature detection (Highway's dispatcher among it) sees the smaller set. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/auxv.h>

static unsigned long hidden(unsigned long type, unsigned long value) {
  const char* mask = getenv("MEMHAL_HIDE_HWCAP");
  return type == AT_HWCAP && mask ? value & ~strtoul(mask, NULL, 16) : value;
}

static unsigned long (*real_getauxval)(unsigned long);

__attribute__((constructor)) static void find_real_getauxval(void) {
  *(void**)&real_getauxval = dlsym(RTLD_NEXT, "getauxval"); /* POSIX's way to a function pointer */
}

unsigned long getauxval(unsigned long type) {
  if (!real_getauxval) find_real_getauxval(); /* called before this library's constructor ran */
  return hidden(type, real_getauxval(type));
}

unsigned long __getauxval(unsigned long type) {
  return getauxval(type);
}
