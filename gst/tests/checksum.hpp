// SHA-1 of an image tensor's plane rows (what checksumsink prints for an unpadded buffer) and
// checksumsink's time format: the gst tests' frame identity.
#pragma once

#include <glib.h>

#include <cstdio>
#include <memhal/tensor.hpp>
#include <memhal/tensor_map.hpp>
#include <string>

#include "../gst_internal.hpp"

namespace memhal::gst_test {

inline Result<std::string> plane_sha1(const Tensor& tensor) {
  MEMHAL_ASSIGN_OR_RETURN(const TensorMap map, tensor.map(CpuAccess::Read));
  const auto* base = reinterpret_cast<const guchar*>(gst_detail::buffer_base(map, tensor.layout()));
  GChecksum* sha1 = g_checksum_new(G_CHECKSUM_SHA1);
  for (const auto& plane : gst_detail::planes_of(tensor.layout())) {
    for (int64_t row = 0; row < plane.height; ++row) {
      g_checksum_update(sha1, base + plane.offset + row * plane.pitch, static_cast<gssize>(plane.row_bytes));
    }
  }
  std::string text = g_checksum_get_string(sha1);
  g_checksum_free(sha1);
  return text;
}

inline void print_line(int64_t pts, const std::string& sha1) {
  std::printf("%d:%02d:%02d.%09d %s\n", static_cast<int>(pts / 3600000000000LL),
              static_cast<int>(pts / 60000000000LL % 60), static_cast<int>(pts / 1000000000LL % 60),
              static_cast<int>(pts % 1000000000LL), sha1.c_str());
}

}  // namespace memhal::gst_test
