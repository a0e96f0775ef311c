/* The C tests' one assertion: CHECK counts a pass or prints the failure with the last memhal
 * error; each test program prints "N passed, N failed" at the end and exits non-zero on a
 * failure. Included once per program (the counters are its own). */
#ifndef MEMHAL_TESTS_C_CHECK_H
#define MEMHAL_TESTS_C_CHECK_H

#include <memhal/memhal.h>
#include <stdio.h>

static int passed = 0;
static int failed = 0;

#define CHECK(condition)                                                                   \
  do {                                                                                     \
    if (condition) {                                                                       \
      ++passed;                                                                            \
    } else {                                                                               \
      ++failed;                                                                            \
      fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #condition, \
              memhal_last_error_message());                                                \
    }                                                                                      \
  } while (0)

#define CHECK_OK(call) CHECK((call) == MEMHAL_OK)

#endif
