// memhal.h compiles as C++ too.
#include <memhal/memhal.h>

static_assert(MEMHAL_OK == 0);
