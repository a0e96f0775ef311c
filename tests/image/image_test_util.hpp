// Helpers shared by the image tests: random images of any layout.
#pragma once

#include <cstdint>
#include <memhal/tensor.hpp>
#include <random>

namespace memhal::testing {

/// Fills every byte a map of `t` can reach (padding too) with random values.
inline void fill_random(const Tensor& t, std::mt19937& rng) {
  auto map = *t.map(CpuAccess::Write);
  const Layout& l = map.layout();
  std::uniform_int_distribution<int> byte(0, 255);
  if (l.is_multi_plane()) {
    for (std::size_t i = 0; i < l.planes().size(); ++i) {
      const PlaneLayout& p = l.planes()[i];
      for (int64_t b = 0; b < p.pitch * (p.height - 1) + p.row_bytes; ++b) {
        map.plane(i)[b] = static_cast<std::byte>(byte(rng));
      }
    }
    return;
  }
  // Walk every element through the strides, so views and flipped layouts work too.
  const auto shape = l.shape();
  const auto strides = l.strides();
  const int64_t esize = static_cast<int64_t>(l.element_size());
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < l.element_count(); ++n) {
    int64_t off = 0;
    for (std::size_t a = 0; a < shape.size(); ++a) off += index[a] * strides[a];
    for (int64_t b = 0; b < esize; ++b) map.data()[off + b] = static_cast<std::byte>(byte(rng));
    for (std::size_t a = shape.size(); a-- > 0;) {
      if (++index[a] < shape[a]) break;
      index[a] = 0;
    }
  }
}

}  // namespace memhal::testing
