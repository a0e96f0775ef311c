#include "image/cpu/resample_plan.hpp"

#include <algorithm>
#include <cmath>

namespace memhal::detail {
namespace {

// Source position of output `o` and its weight towards the next position, pixel centres
// aligned; clamped at the edges (edge pixels repeat).
void two_tap_at(int64_t o, double scale, int64_t in, Interpolation interpolation, int64_t* i0, double* w) {
  if (interpolation == Interpolation::Nearest) {
    *i0 = std::min<int64_t>(in - 1, static_cast<int64_t>(std::floor((static_cast<double>(o) + 0.5) * scale)));
    *w = 0.0;
    return;
  }
  double f = (static_cast<double>(o) + 0.5) * scale - 0.5;
  f = std::clamp(f, 0.0, static_cast<double>(in - 1));
  *i0 = static_cast<int64_t>(std::floor(f));
  *w = f - static_cast<double>(*i0);
  if (*i0 >= in - 1) {
    *i0 = in - 1;
    *w = 0.0;
  }
}

}  // namespace

void AxisTaps::build(int64_t out, int64_t in, Interpolation interpolation, bool mirror) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  two_tap = !(interpolation == Interpolation::Area && scale > 1.0);
  index.clear();
  weight.clear();
  first.clear();
  if (two_tap) {
    max_taps = 2;
    for (int64_t o = 0; o < out; ++o) {
      int64_t i0 = 0;
      double w = 0.0;
      two_tap_at(o, scale, in, interpolation, &i0, &w);
      if (w == 0.0) {
        index.push_back(static_cast<int32_t>(mirror ? in - 1 - i0 : i0));
        weight.push_back(0.0f);
      } else {
        // Mirrored, the pair (i0, i0 + 1) becomes (m - 1, m) with m = in - 1 - i0.
        index.push_back(static_cast<int32_t>(mirror ? in - 2 - i0 : i0));
        weight.push_back(static_cast<float>(mirror ? 1.0 - w : w));
      }
    }
    single_tap = std::all_of(weight.begin(), weight.end(), [](float w) { return w == 0.0f; });
    return;
  }
  max_taps = 0;
  single_tap = false;
  for (int64_t o = 0; o < out; ++o) {
    first.push_back(static_cast<int32_t>(index.size()));
    const double begin = static_cast<double>(o) * scale;
    const double end = std::min(static_cast<double>(o + 1) * scale, static_cast<double>(in));
    const auto lo = static_cast<int64_t>(std::floor(begin));
    const auto hi = std::min<int64_t>(in, static_cast<int64_t>(std::ceil(end)));
    for (int64_t i = lo; i < hi; ++i) {
      const double w = (std::min(static_cast<double>(i + 1), end) - std::max(static_cast<double>(i), begin)) / scale;
      if (w <= 0.0) continue;
      index.push_back(static_cast<int32_t>(mirror ? in - 1 - i : i));
      weight.push_back(static_cast<float>(w));
    }
    max_taps = std::max(max_taps, static_cast<int>(index.size()) - first.back());
  }
  first.push_back(static_cast<int32_t>(index.size()));
}

void Geometry::build(const Rect& crop_rect, int64_t dst_w, int64_t dst_h, const ConvertOptions& options) {
  crop = crop_rect;
  const bool flip_h = options.flip == Flip::Horizontal || options.flip == Flip::Both;
  const bool flip_v = options.flip == Flip::Vertical || options.flip == Flip::Both;
  // Oriented pixel (ox, oy) -> flipped source (fx, fy) -> source; see image_processor.hpp.
  switch (options.rotation) {
    case Rotation::None: column_lines = false, mirror_lines = flip_v, mirror_positions = flip_h; break;
    case Rotation::Cw180: column_lines = false, mirror_lines = !flip_v, mirror_positions = !flip_h; break;
    case Rotation::Cw90: column_lines = true, mirror_lines = flip_h, mirror_positions = !flip_v; break;
    case Rotation::Cw270: column_lines = true, mirror_lines = !flip_h, mirror_positions = flip_v; break;
  }
  lines = column_lines ? crop.width : crop.height;
  positions = column_lines ? crop.height : crop.width;
  content = Rect{0, 0, dst_w, dst_h};
  if (options.resize == ResizeMode::Letterbox) {
    const double scale = std::min(static_cast<double>(dst_w) / static_cast<double>(positions),
                                  static_cast<double>(dst_h) / static_cast<double>(lines));
    content.width = std::clamp<int64_t>(std::llround(static_cast<double>(positions) * scale), 1, dst_w);
    content.height = std::clamp<int64_t>(std::llround(static_cast<double>(lines) * scale), 1, dst_h);
    content.x = (dst_w - content.width) / 2;
    content.y = (dst_h - content.height) / 2;
  }
  horizontal.build(content.width, positions, options.interpolation, mirror_positions);
  vertical.build(content.height, lines, options.interpolation, mirror_lines);
}

}  // namespace memhal::detail
