// Copying elements between two layouts of the same shape: the one loop behind materialize,
// copy_to and every backend's CPU fallback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memhal/layout.hpp>
#include <span>

namespace memhal::detail {

/// Copies the elements of a plain (single-plane) strided array: `shape` elements of
/// `element_size` bytes, read from `src` (element 0) with `src_strides` and written to `dst`
/// with `dst_strides`. Strides are signed byte strides. The regions must not overlap.
void copy_strided(const std::byte* src, std::span<const int64_t> src_strides, std::byte* dst,
                  std::span<const int64_t> dst_strides, std::span<const int64_t> shape, std::size_t element_size);

/// Copies rows of bytes: `rows` rows of `row_bytes`, `src_pitch` / `dst_pitch` apart.
void copy_rows(const std::byte* src, int64_t src_pitch, std::byte* dst, int64_t dst_pitch, int64_t rows,
               int64_t row_bytes);

}  // namespace memhal::detail
