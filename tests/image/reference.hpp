// The oracle for ImageProcessor: a plain, slow, per-pixel implementation of the semantics in
// image_processor.hpp, written independently of the fast path (double precision, one formula
// per step, no tables, no SIMD).
#pragma once

#include <memhal/image_processor.hpp>
#include <memhal/tensor.hpp>
#include <string>
#include <vector>

namespace memhal::reference {

/// One element the fast path wrote and what the reference expects there.
struct Mismatch {
  std::string where;
  double actual = 0;
  double expected = 0;
};

/// Compares every element of `dst` (already converted from `src`) with the reference result.
/// Returns the elements off by more than the tolerance: 1 for 8-bit outputs, 1/255/std for
/// float outputs (plus f16 rounding), scaled by `tolerance` (a backend that may be off by 2 per
/// 8-bit channel passes 2). `limit` caps how many are reported.
std::vector<Mismatch> compare(const Tensor& src, const Tensor& dst, const ConvertOptions& options,
                              std::size_t limit = 5, double tolerance = 1.0);

/// The output format a convert into `dst` writes (its pixel format or the options' override).
PixelFormat output_format(const Tensor& dst, const ConvertOptions& options);

}  // namespace memhal::reference
