// Geometry of one conversion, computed once per distinct (source, destination, options)
// shape and reused for every frame of that shape: which source lines feed which output rows,
// with what weights, where the letterboxed content lies.
#pragma once

#include <cstdint>
#include <memhal/image_processor.hpp>
#include <vector>

namespace memhal::detail {

/// Resampling weights along one axis, from `in` source positions onto `out` outputs.
struct AxisTaps {
  /// Two-tap form (nearest, bilinear, area on upscales): output i = in[index[i]] * (1 - w)
  /// + in[index[i] + 1] * w with w = weight[i]; w == 0 never reads index + 1.
  bool two_tap = true;
  std::vector<int32_t> index;
  std::vector<float> weight;
  /// General form (area downscales): output i sums taps first[i] .. first[i + 1] - 1.
  std::vector<int32_t> first;
  int max_taps = 2;
  /// Two-tap form with every weight 0 (nearest, or integer downscale ratios where bilinear
  /// samples land on pixel centres): one read per output.
  bool single_tap = false;

  /// `mirror` reverses the source axis (flips and rotations are folded in here). Reuses the
  /// vectors' capacity, so rebuilding for a shape seen before allocates nothing.
  void build(int64_t out, int64_t in, Interpolation interpolation, bool mirror);
};

/// Where everything goes. Source "lines" are rows of the cropped source, or its columns when
/// the rotation is 90 or 270 degrees; a line's "positions" run along it in source order.
struct Geometry {
  Rect crop;
  bool column_lines = false;
  bool mirror_lines = false;
  bool mirror_positions = false;
  int64_t lines = 0;
  int64_t positions = 0;
  Rect content;  ///< destination pixels that show the source; the rest is padding
  AxisTaps horizontal;
  AxisTaps vertical;

  /// Fills this geometry for `options` over a crop of the source onto a dst_w x dst_h image.
  void build(const Rect& crop_rect, int64_t dst_w, int64_t dst_h, const ConvertOptions& options);
};

}  // namespace memhal::detail
