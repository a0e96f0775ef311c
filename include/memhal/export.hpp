/// @file
/// Symbol visibility for the memhal shared library.
///
/// The library is built with hidden visibility; everything that is part of the public API is
/// marked `MEMHAL_EXPORT`. Private classes in `src/` stay hidden, so the ABI is exactly what
/// the installed headers show.
#pragma once

#if defined(MEMHAL_STATIC_DEFINE)
#define MEMHAL_EXPORT
#else
#define MEMHAL_EXPORT __attribute__((visibility("default")))
#endif
