#include "tensor/strided_copy.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace memhal::detail {
namespace {

// Square tiles for transposing copies: a tile of 4-byte pixels spans 64 cache lines of source
// and destination, small enough to stay in L1 while it is read across and written down.
constexpr int64_t kTile = 32;

// Element sizes with a native integer type are copied as that type, so the compiler can
// vectorise a reversed or gathered run; other sizes go through fixed-size memcpy.
template <std::size_t N>
void copy_elements_fixed(const std::byte* src, int64_t src_stride, std::byte* dst, int64_t dst_stride, int64_t count) {
  using Word = std::conditional_t<N == 1, uint8_t,
                                  std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;
  if constexpr (N == 1 || N == 2 || N == 4 || N == 8) {
    if (dst_stride == static_cast<int64_t>(N) && src_stride == -static_cast<int64_t>(N)) {
      // A mirrored run (horizontal flip): a constant stride the vectoriser can reverse.
      for (int64_t i = 0; i < count; ++i) {
        Word word;
        std::memcpy(&word, src - i * static_cast<int64_t>(N), N);
        std::memcpy(dst + i * static_cast<int64_t>(N), &word, N);
      }
      return;
    }
    if (dst_stride == static_cast<int64_t>(N) && src_stride % static_cast<int64_t>(N) == 0) {
      const int64_t step = src_stride / static_cast<int64_t>(N);
      for (int64_t i = 0; i < count; ++i) {
        Word word;
        std::memcpy(&word, src + i * step * static_cast<int64_t>(N), N);
        std::memcpy(dst + i * static_cast<int64_t>(N), &word, N);
      }
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst, src, N);
    src += src_stride;
    dst += dst_stride;
  }
}

// One strided run of `count` elements.
void copy_run(const std::byte* src, int64_t src_stride, std::byte* dst, int64_t dst_stride, int64_t count,
              std::size_t size) {
  const auto element = static_cast<int64_t>(size);
  if (src_stride == element && dst_stride == element) {
    std::memcpy(dst, src, static_cast<std::size_t>(count) * size);
    return;
  }
  switch (size) {
    case 1: return copy_elements_fixed<1>(src, src_stride, dst, dst_stride, count);
    case 2: return copy_elements_fixed<2>(src, src_stride, dst, dst_stride, count);
    case 3: return copy_elements_fixed<3>(src, src_stride, dst, dst_stride, count);
    case 4: return copy_elements_fixed<4>(src, src_stride, dst, dst_stride, count);
    case 8: return copy_elements_fixed<8>(src, src_stride, dst, dst_stride, count);
    case 16: return copy_elements_fixed<16>(src, src_stride, dst, dst_stride, count);
    default:
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * dst_stride, src + i * src_stride, size);
  }
}

// A transposing tile with the element size known at compile time: no call per row, and the
// source walked along its short stride in the inner loop.
template <std::size_t N>
void copy_tile(const std::byte* src, int64_t src_row, int64_t src_col, std::byte* dst, int64_t dst_row, int64_t dst_col,
               int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const std::byte* from = src + r * src_row;
    std::byte* to = dst + r * dst_row;
    for (int64_t c = 0; c < cols; ++c) std::memcpy(to + c * dst_col, from + c * src_col, N);
  }
}

using TileFn = void (*)(const std::byte*, int64_t, int64_t, std::byte*, int64_t, int64_t, int64_t, int64_t);

TileFn tile_for(std::size_t size) {
  switch (size) {
    case 1: return copy_tile<1>;
    case 2: return copy_tile<2>;
    case 3: return copy_tile<3>;
    case 4: return copy_tile<4>;
    case 8: return copy_tile<8>;
    case 16: return copy_tile<16>;
    default: return nullptr;
  }
}

// A 2-D block: rows x cols elements; the inner dimension is `cols`.
void copy_block(const std::byte* src, const int64_t* src_strides, std::byte* dst, const int64_t* dst_strides,
                int64_t rows, int64_t cols, std::size_t size) {
  // When the source walks its inner dimension with a larger step than its outer one (a
  // transpose), row-by-row copying reads one element per cache line; tiles fix that.
  const bool transposing =
      std::llabs(src_strides[1]) > std::llabs(src_strides[0]) && std::llabs(src_strides[1]) > 64 && rows > 1;
  const TileFn tile = tile_for(size);
  if (!transposing || tile == nullptr) {
    for (int64_t r = 0; r < rows; ++r) {
      copy_run(src + r * src_strides[0], src_strides[1], dst + r * dst_strides[0], dst_strides[1], cols, size);
    }
    return;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      tile(src + r0 * src_strides[0] + c0 * src_strides[1], src_strides[0], src_strides[1],
           dst + r0 * dst_strides[0] + c0 * dst_strides[1], dst_strides[0], dst_strides[1], r1 - r0, c1 - c0);
    }
  }
}

}  // namespace

void copy_strided(const std::byte* src, std::span<const int64_t> src_strides, std::byte* dst,
                  std::span<const int64_t> dst_strides, std::span<const int64_t> shape, std::size_t element_size) {
  // Normalise: drop size-1 dimensions, then merge neighbours that are nested in both layouts,
  // so a flipped or cropped image becomes a few long runs.
  std::array<int64_t, kMaxRank + 1> dims{}, s{}, d{};
  std::size_t rank = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    if (rank > 0 && s[rank - 1] == src_strides[i] * shape[i] && d[rank - 1] == dst_strides[i] * shape[i]) {
      dims[rank - 1] *= shape[i];
      s[rank - 1] = src_strides[i];
      d[rank - 1] = dst_strides[i];
      continue;
    }
    dims[rank] = shape[i];
    s[rank] = src_strides[i];
    d[rank] = dst_strides[i];
    ++rank;
  }
  std::size_t size = element_size;
  // A contiguous innermost dimension becomes one bigger element.
  if (rank > 0 && s[rank - 1] == static_cast<int64_t>(size) && d[rank - 1] == static_cast<int64_t>(size) && rank > 1) {
    size *= static_cast<std::size_t>(dims[rank - 1]);
    --rank;
  }
  if (rank == 0) {
    std::memcpy(dst, src, size);
    return;
  }
  if (rank == 1) {
    copy_run(src, s[0], dst, d[0], dims[0], size);
    return;
  }
  // Iterate the outer dimensions with an odometer; the inner two go to copy_block.
  const std::size_t outer = rank - 2;
  std::array<int64_t, kMaxRank> index{};
  for (;;) {
    int64_t src_offset = 0, dst_offset = 0;
    for (std::size_t i = 0; i < outer; ++i) {
      src_offset += index[i] * s[i];
      dst_offset += index[i] * d[i];
    }
    copy_block(src + src_offset, &s[outer], dst + dst_offset, &d[outer], dims[outer], dims[outer + 1], size);
    std::size_t axis = outer;
    while (axis > 0) {
      --axis;
      if (++index[axis] < dims[axis]) break;
      index[axis] = 0;
      if (axis == 0) return;
    }
    if (outer == 0) return;
  }
}

void copy_rows(const std::byte* src, int64_t src_pitch, std::byte* dst, int64_t dst_pitch, int64_t rows,
               int64_t row_bytes) {
  if (src_pitch == row_bytes && dst_pitch == row_bytes) {
    std::memcpy(dst, src, static_cast<std::size_t>(rows * row_bytes));
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * dst_pitch, src + r * src_pitch, static_cast<std::size_t>(row_bytes));
  }
}

}  // namespace memhal::detail
