#include "image/cpu/pixel_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "image/cpu/kernels.hpp"

namespace memhal::detail {
namespace {

inline uint8_t byte_at(const PlaneRef& p, int64_t x, int64_t y, int64_t c) {
  return static_cast<uint8_t>(p.base[y * p.row + x * p.pixel + c * p.comp]);
}

inline float clamp255(float v) {
  return std::min(std::max(v, 0.0f), 255.0f);
}

void yuv_to_rgba(float y, float u, float v, const ColorCoeffs& c, float* rgba) {
  const float yl = (y - c.y_offset) * c.y_scale;
  rgba[0] = clamp255(yl + c.rv * (v - 128.0f));
  rgba[1] = clamp255(yl - c.gu * (u - 128.0f) - c.gv * (v - 128.0f));
  rgba[2] = clamp255(yl + c.bu * (u - 128.0f));
  rgba[3] = 255.0f;
}

// PixelFormatInfo::order as ints: R, G, B, A in an interleaved RGB-family pixel; Y0, U, Y1, V
// in a packed 4:2:2 macropixel; U, V in a semi-planar chroma pair.
std::array<int, 4> offsets_of(PixelFormat format) {
  const auto order = pixel_format_info(format)->order;
  return {order[0], order[1], order[2], order[3]};
}

// The byte, from its row's start, of channel c (0 Y, 1 U, 2 V) of the source pixel at `at` of a
// semi-planar row with halved chroma (Y from the luma row, U and V from the chroma row) or a
// packed 4:2:2 row; `pos` as offsets_of.
int64_t yuv_byte(bool semi, const std::array<int, 4>& pos, int32_t at, int c) {
  if (semi) return c == 0 ? at : (at & ~1) + (c == 1 ? pos[0] : 1 - pos[0]);
  return 4 * (at >> 1) + (c == 0 ? pos[(at & 1) ? 2 : 0] : c == 1 ? pos[1] : pos[3]);
}

bool standard_interleaved(const PlaneRef& p, int64_t bytes_per_pixel) {
  return p.comp == 1 && p.pixel == bytes_per_pixel;
}

}  // namespace

void read_pixel(const ImageRef& src, int64_t x, int64_t y, const ColorCoeffs& coeffs, float* rgba) {
  const auto& p = src.planes;
  switch (src.format) {
    case PixelFormat::Rgb:
    case PixelFormat::Bgr:
    case PixelFormat::Rgba:
    case PixelFormat::Bgra:
    case PixelFormat::Grey: {
      const auto off = offsets_of(src.format);
      for (int c = 0; c < 3; ++c) rgba[c] = byte_at(p[0], x, y, off[c]);
      rgba[3] = has_alpha(src.format) ? byte_at(p[0], x, y, off[3]) : 255.0f;
      return;
    }
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba:
      for (int c = 0; c < 3; ++c) rgba[c] = byte_at(p[c], x, y, 0);
      rgba[3] = has_alpha(src.format) ? byte_at(p[3], x, y, 0) : 255.0f;
      return;
    case PixelFormat::Yuyv:
    case PixelFormat::Uyvy:
    case PixelFormat::Vyuy: {
      const auto pos = offsets_of(src.format);
      const int64_t macro = x & ~int64_t{1};
      yuv_to_rgba(byte_at(p[0], macro, y, pos[(x & 1) ? 2 : 0]), byte_at(p[0], macro, y, pos[1]),
                  byte_at(p[0], macro, y, pos[3]), coeffs, rgba);
      return;
    }
    default: break;
  }
  const auto info = *pixel_format_info(src.format);
  const int64_t cx = x >> info.chroma_shift_x;
  const int64_t cy = y >> info.chroma_shift_y;
  float u = 0, v = 0;
  if (src.format == PixelFormat::I420) {
    u = byte_at(p[1], cx, cy, 0);
    v = byte_at(p[2], cx, cy, 0);
  } else {
    u = byte_at(p[1], cx, cy, info.order[0]);
    v = byte_at(p[1], cx, cy, info.order[1]);
  }
  yuv_to_rgba(byte_at(p[0], x, y, 0), u, v, coeffs, rgba);
}

void read_column(const ImageRef& src, int64_t x, int64_t y, int64_t n, const ColorCoeffs& coeffs, bool alpha,
                 const RgbaRows& out) {
  float rgba[4];
  for (int64_t i = 0; i < n; ++i) {
    read_pixel(src, x, y + i, coeffs, rgba);
    for (int c = 0; c < (alpha ? 4 : 3); ++c) out.channel(c)[i] = rgba[c];
  }
}

bool semi_planar_subsampled(PixelFormat format) {
  return format == PixelFormat::Nv12 || format == PixelFormat::Nv21 || format == PixelFormat::Nv16;
}

bool packed_422(PixelFormat format) {
  return format == PixelFormat::Yuyv || format == PixelFormat::Uyvy || format == PixelFormat::Vyuy;
}

void read_row(const ImageRef& src, int64_t x, int64_t y, int64_t n, const ColorCoeffs& coeffs, bool alpha,
              const RgbaRows& out, uint8_t* staging) {
  const auto& p = src.planes;
  auto row_ptr = [&](int plane, int64_t px, int64_t py) {
    return reinterpret_cast<const uint8_t*>(p[plane].base + py * p[plane].row + px * p[plane].pixel);
  };
  float* r = out.channel(0);
  float* g = out.channel(1);
  float* b = out.channel(2);
  switch (src.format) {
    case PixelFormat::Nv12:
    case PixelFormat::Nv21:
    case PixelFormat::Nv16: {
      const int64_t cy = src.format == PixelFormat::Nv16 ? y : y >> 1;
      kernels::semi_planar_to_rgb(row_ptr(0, x, y), row_ptr(1, x >> 1, cy), offsets_of(src.format)[0] == 1, n, coeffs,
                                  r, g, b);
      return;
    }
    case PixelFormat::Nv24:
      kernels::semi_planar_444_to_rgb(row_ptr(0, x, y), row_ptr(1, x, y), n, coeffs, r, g, b);
      return;
    case PixelFormat::I420: {
      // Interleave U and V once so that the semi-planar kernel serves I420 too.
      const uint8_t* u = row_ptr(1, x >> 1, y >> 1);
      const uint8_t* v = row_ptr(2, x >> 1, y >> 1);
      const int64_t pairs = (n + 1) / 2;
      for (int64_t i = 0; i < pairs; ++i) {
        staging[2 * i] = u[i];
        staging[2 * i + 1] = v[i];
      }
      kernels::semi_planar_to_rgb(row_ptr(0, x, y), staging, false, n, coeffs, r, g, b);
      return;
    }
    case PixelFormat::Yuyv:
    case PixelFormat::Uyvy:
    case PixelFormat::Vyuy:
      if (!standard_interleaved(p[0], 2)) break;
      kernels::packed_422_to_rgb(row_ptr(0, x, y),
                                 src.format == PixelFormat::Yuyv   ? 0
                                 : src.format == PixelFormat::Uyvy ? 1
                                                                   : 2,
                                 n, coeffs, r, g, b);
      return;
    case PixelFormat::Rgb:
    case PixelFormat::Bgr:
    case PixelFormat::Rgba:
    case PixelFormat::Bgra:
    case PixelFormat::Grey: {
      const int channels = pixel_format_info(src.format)->plane_bytes_per_pixel[0];
      if (!standard_interleaved(p[0], channels)) break;
      const auto off = offsets_of(src.format);
      const bool has_alpha = alpha && channels == 4;
      kernels::bytes_to_rgb(row_ptr(0, x, y), channels, off.data(), n, r, g, b, has_alpha ? out.channel(3) : nullptr);
      if (alpha && !has_alpha) std::fill(out.channel(3), out.channel(3) + n, 255.0f);
      return;
    }
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba: {
      const int planes = has_alpha(src.format) && alpha ? 4 : 3;
      if (p[0].pixel != 1 || p[1].pixel != 1 || p[2].pixel != 1 || (planes == 4 && p[3].pixel != 1)) break;
      for (int c = 0; c < planes; ++c) {
        const uint8_t* in = row_ptr(c, x, y);
        float* ch = out.channel(c);
        for (int64_t i = 0; i < n; ++i) ch[i] = in[i];
      }
      if (alpha && planes == 3) std::fill(out.channel(3), out.channel(3) + n, 255.0f);
      return;
    }
  }
  float rgba[4];
  for (int64_t i = 0; i < n; ++i) {
    read_pixel(src, x + i, y, coeffs, rgba);
    for (int c = 0; c < (alpha ? 4 : 3); ++c) out.channel(c)[i] = rgba[c];
  }
}

bool sampled_rows_supported(const ImageRef& src) {
  const auto& p = src.planes;
  switch (src.format) {
    case PixelFormat::Nv12:
    case PixelFormat::Nv21:
    case PixelFormat::Nv16:
    case PixelFormat::Nv24:
    case PixelFormat::I420: return true;
    case PixelFormat::Yuyv:
    case PixelFormat::Uyvy:
    case PixelFormat::Vyuy: return standard_interleaved(p[0], 2);
    case PixelFormat::Rgb:
    case PixelFormat::Bgr:
    case PixelFormat::Rgba:
    case PixelFormat::Bgra:
    case PixelFormat::Grey: return standard_interleaved(p[0], pixel_format_info(src.format)->plane_bytes_per_pixel[0]);
    default: return false;
  }
}

// The planes' lines are asked for in turn (luma line 0, chroma line 0, luma line 1, ...), not
// plane by plane: on cold 1080p NV12 frames the jobs ran 8-15 % faster so (image_bench, Zen 5,
// 2026-12-04); a single plane's row is asked for in order (its two halves in turn were slower).
void prefetch_row(const ImageRef& src, int64_t x, int64_t y, int64_t n) {
  const auto info = *pixel_format_info(src.format);
  std::array<const char*, 4> begin{};
  std::array<int64_t, 4> bytes{};
  int64_t longest = 0;
  for (int i = 0; i < src.plane_count; ++i) {
    const PlaneRef& p = src.planes[i];
    const int sx = i == 0 ? 0 : info.chroma_shift_x;
    const int sy = i == 0 ? 0 : info.chroma_shift_y;
    begin[i] = reinterpret_cast<const char*>(p.base + (y >> sy) * p.row + (x >> sx) * p.pixel);
    bytes[i] = ((n + (1 << sx) - 1) >> sx) * p.pixel;
    longest = std::max(longest, bytes[i]);
  }
  for (int64_t b = 0; b < longest; b += 64) {
    for (int i = 0; i < src.plane_count; ++i) {
      if (b < bytes[i]) __builtin_prefetch(begin[i] + b);
    }
  }
  for (int i = 0; i < src.plane_count; ++i) __builtin_prefetch(begin[i] + bytes[i] - 1);
}

// Word picks (see kernels::WordPicks). Packed formats: whole macropixels, 16 outputs a chunk,
// where a chunk's macropixels span at most 32 (steps up to about 4; a wider chunk fits no
// 128-byte window by words either). Semi-planar: 32 outputs a chunk, Y from the luma row and
// the chroma pairs from theirs, where 32 outputs span at most 128 bytes; else 16 a chunk, Y
// (op 0), then U and V (op 1).
void SamplePlan::build_words(bool semi, const std::array<int, 4>& pos, const int32_t* index, int64_t n) {
  kernels::WordPicks& w = words;
  w.chunks = 0;
  w.stream = {0, 1};
  w.macropixels = !semi;
  if (!semi) {
    const int64_t count = n / 16;
    w.base[0].assign(static_cast<std::size_t>(count), 0);
    w.control[0].assign(static_cast<std::size_t>(32 * count), 0);
    for (int64_t k = 0; k < count; ++k) {
      int32_t lo = INT32_MAX, hi = 0;
      for (int l = 0; l < 16; ++l) lo = std::min(lo, index[16 * k + l] >> 1), hi = std::max(hi, index[16 * k + l] >> 1);
      if (hi - lo >= 32) return;  // the shuffle chunks serve this step
      w.base[0][static_cast<std::size_t>(k)] = 4 * lo;
      for (int l = 0; l < 16; ++l) {
        const int32_t at = index[16 * k + l];
        w.control[0][static_cast<std::size_t>(32 * k + 2 * l)] = static_cast<uint16_t>((at >> 1) - lo);
        w.control[0][static_cast<std::size_t>(32 * k + 2 * l + 1)] = static_cast<uint16_t>(8 * pos[(at & 1) ? 2 : 0]);
      }
    }
    w.outputs = 16;
    w.lo = {0, 0};
    w.hi = {-1, -1};
    w.u_byte = pos[1];
    w.v_byte = pos[3];
    w.chunks = count;
    return;
  }
  const int vu = pos[0];
  // Byte offset, from its row start, of channel ch (0 Y, 1 U, 2 V, 3 the chroma pair) of output i.
  const auto offset = [&](int ch, int64_t i) -> int64_t {
    return ch == 3 ? (index[i] & ~1) : yuv_byte(true, pos, index[i], ch);
  };
  // Fills op o of every chunk from the channels of its lane groups (`group_lanes` lanes each); false
  // when a chunk's picks do not fit one window.
  const auto plan_op = [&](int o, std::array<int, 2> channels, int group_lanes, int64_t count) {
    w.base[o].assign(static_cast<std::size_t>(count), 0);
    w.control[o].assign(static_cast<std::size_t>(32 * count), 0);
    for (int64_t k = 0; k < count; ++k) {
      int64_t lo = INT64_MAX, hi = 0;
      for (int group = 0; group * group_lanes < 32; ++group) {
        for (int l = 0; channels[group] >= 0 && l < group_lanes; ++l) {
          lo = std::min(lo, offset(channels[group], group_lanes * k + l));
          hi = std::max(hi, offset(channels[group], group_lanes * k + l));
        }
      }
      if (hi - lo > 126) return false;  // wider than one window
      w.base[o][static_cast<std::size_t>(k)] = static_cast<int32_t>(lo);
      for (int group = 0; group * group_lanes < 32; ++group) {
        for (int l = 0; channels[group] >= 0 && l < group_lanes; ++l) {
          const int64_t d = offset(channels[group], group_lanes * k + l) - lo;
          w.control[o][static_cast<std::size_t>(32 * k + group_lanes * group + l)] =
              static_cast<uint16_t>((d >> 1) | ((d & 1) << 11));
        }
      }
    }
    return true;
  };
  if (n >= 32 && plan_op(0, {0, -1}, 32, n / 32) && plan_op(1, {3, -1}, 32, n / 32)) {
    w.outputs = 32;
    w.lo = {0, vu == 0 ? 1 : 2};
    w.hi = {-1, vu == 0 ? 2 : 1};
    w.chunks = n / 32;
    return;
  }
  w.outputs = 16;
  w.lo = {0, 1};
  w.hi = {-1, 2};
  if (plan_op(0, {0, -1}, 16, n / 16) && plan_op(1, {1, 2}, 16, n / 16)) w.chunks = n / 16;
}

void SamplePlan::build_lanes(bool semi, const std::array<int, 4>& pos, const int32_t* index, int64_t n) {
  constexpr int kMaxWindows = 4;
  kernels::LanePicks& l = lanes;
  l.halves = 0;
  l.stream = semi ? std::array<int, 3>{0, 1, 1} : std::array<int, 3>{0, 0, 0};
  const int used = semi ? 2 : 1;  // streams
  // Channel c's byte for output i, from the row of stream l.stream[c].
  const auto offset = [&](int c, int64_t i) { return yuv_byte(semi, pos, index[i], c); };
  const int64_t halves = n / 8;
  // The lowest and highest byte of each stream's block (lane) b of half h, at [(s * halves + h) * 2 + b].
  std::vector<int64_t> lo(static_cast<std::size_t>(2 * used * halves), INT64_MAX);
  std::vector<int64_t> hi(lo.size(), -1);
  for (int64_t h = 0; h < halves; ++h) {
    for (int j = 0; j < 8; ++j) {
      for (int c = 0; c < 3; ++c) {
        const auto at = static_cast<std::size_t>((l.stream[c] * halves + h) * 2 + j / 4);
        const int64_t o = offset(c, 8 * h + j);
        lo[at] = std::min(lo[at], o), hi[at] = std::max(hi[at], o);
      }
    }
  }
  int windows = 1;
  for (std::size_t k = 0; k < lo.size(); ++k) windows = std::max(windows, static_cast<int>((hi[k] - lo[k]) / 16 + 1));
  if (windows > kMaxWindows) return;
  l.windows = windows;
  l.contiguous_from = 0;
  for (int s = 0; s < 2; ++s) {
    const auto size = static_cast<std::size_t>(s < used ? halves : 0);
    l.lower[s].assign(size, 0), l.upper[s].assign(size, 0), l.reach[s].assign(size, 0);
  }
  for (int64_t h = 0; h < halves; ++h) {
    bool contiguous = true;
    for (int s = 0; s < used; ++s) {
      const auto k = static_cast<std::size_t>((s * halves + h) * 2);
      // One 32-byte load a window where both blocks' bytes fit 16 bytes apart.
      const int64_t at = std::min(lo[k], lo[k + 1] - 16);
      const bool fits = at >= 0 && hi[k] < at + 16 * windows && hi[k + 1] < at + 16 + 16 * windows;
      contiguous = contiguous && fits;
      l.lower[s][static_cast<std::size_t>(h)] = static_cast<int32_t>(fits ? at : lo[k]);
      l.upper[s][static_cast<std::size_t>(h)] = static_cast<int32_t>(fits ? at + 16 : lo[k + 1]);
      const int64_t reach =
          std::max(l.lower[s][static_cast<std::size_t>(h)], l.upper[s][static_cast<std::size_t>(h)]) + 16 * windows;
      l.reach[s][static_cast<std::size_t>(h)] =
          h > 0 ? std::max(reach, l.reach[s][static_cast<std::size_t>(h - 1)]) : reach;
    }
    if (!contiguous) l.contiguous_from = h + 1;
  }
  const int64_t bytes = 32 * windows;
  for (int c = 0; c < 3; ++c) {
    const int s = l.stream[c];
    l.control[c].assign(static_cast<std::size_t>(halves * bytes), 0x80);
    for (int64_t h = 0; h < halves; ++h) {
      for (int j = 0; j < 8; ++j) {
        const int block = j / 4;
        const int64_t d = offset(c, 8 * h + j) - (block == 0 ? l.lower[s] : l.upper[s])[static_cast<std::size_t>(h)];
        l.control[c][static_cast<std::size_t>(h * bytes + (d / 16) * 32 + 16 * block + 4 * (j % 4))] =
            static_cast<uint8_t>(d % 16);
      }
    }
  }
  l.halves = halves;
}

namespace {

// The pairs of chunks of `stream` for 256-bit shuffles (kernels::ShuffleStream), from the byte
// offsets offset(slot, output) that its chunks' slots take (-1: unused); with the windows of
// `share` (a stream of the same row, or null) where every pair fits them.
template <class Offset>
void build_pairs(kernels::ShuffleStream& stream, const Offset& offset, int64_t chunks,
                 const kernels::ShuffleStream* share) {
  constexpr int kMaxWindows = 4;
  const int64_t pairs = chunks / 2;
  stream.pair_packed = true;
  for (int slot = 8; slot < 16; ++slot) stream.pair_packed = stream.pair_packed && offset(slot, 0) < 0;
  stream.pair_windows = 1;
  stream.pair_base.assign(static_cast<std::size_t>(pairs), -1);
  // The lowest and highest byte chunk `k` takes.
  const auto span = [&](int64_t k, int64_t& lo, int64_t& hi) {
    lo = INT64_MAX, hi = -1;
    for (int slot = 0; slot < 16; ++slot) {
      const int64_t o = offset(slot, 8 * k + slot % 8);
      if (o >= 0) lo = std::min(lo, o), hi = std::max(hi, o);
    }
  };
  // Each pair's chunks' spans, and whether every pair fits kMaxWindows with the upper block 16
  // bytes past the lower one (one 32-byte load a window); else each block starts at its own
  // chunk's lowest byte (two 16-byte loads a window, as many windows as the chunks have).
  std::vector<int64_t> lo(static_cast<std::size_t>(2 * pairs)), hi(static_cast<std::size_t>(2 * pairs));
  stream.pair_split = false;
  for (int64_t k = 0; k < 2 * pairs; ++k) span(k, lo[static_cast<std::size_t>(k)], hi[static_cast<std::size_t>(k)]);
  const auto contiguous_windows = [&](int64_t p, int64_t at) {
    return std::max((hi[2 * p] - at) / 16 + 1, (hi[2 * p + 1] - at - 16) / 16 + 1);
  };
  // Shared: each pair's chunks lie within share's windows of it (no more of them).
  stream.pair_shared = share != nullptr && static_cast<int64_t>(share->pair_base.size()) == pairs;
  for (int64_t p = 0; p < pairs && stream.pair_shared; ++p) {
    const int64_t at = share->pair_base[static_cast<std::size_t>(p)];
    const bool used = hi[2 * p] >= 0 && hi[2 * p + 1] >= 0;
    if (at < 0) {
      stream.pair_shared = !used;
      continue;
    }
    const int64_t upper = share->pair_split ? share->pair_upper[static_cast<std::size_t>(p)] : at + 16;
    stream.pair_shared = used && lo[2 * p] >= at && lo[2 * p + 1] >= upper &&
                         std::max(hi[2 * p] - at, hi[2 * p + 1] - upper) < 16 * share->pair_windows;
  }
  if (stream.pair_shared) {
    stream.pair_split = share->pair_split;
    stream.pair_windows = share->pair_windows;
    stream.pair_base = share->pair_base;
    stream.pair_upper = share->pair_upper;
  } else {
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t at = std::min(lo[2 * p], lo[2 * p + 1] - 16);
      if (at >= 0 && contiguous_windows(p, at) > kMaxWindows) stream.pair_split = true;
    }
    stream.pair_upper.assign(stream.pair_split ? static_cast<std::size_t>(pairs) : 0, -1);
    for (int64_t p = 0; p < pairs; ++p) {
      if (hi[2 * p] < 0 || hi[2 * p + 1] < 0) continue;
      int64_t windows = 0;
      if (stream.pair_split) {
        windows = std::max((hi[2 * p] - lo[2 * p]) / 16 + 1, (hi[2 * p + 1] - lo[2 * p + 1]) / 16 + 1);
        if (windows > kMaxWindows) continue;
        stream.pair_base[p] = static_cast<int32_t>(lo[2 * p]);
        stream.pair_upper[p] = static_cast<int32_t>(lo[2 * p + 1]);
      } else {
        const int64_t at = std::min(lo[2 * p], lo[2 * p + 1] - 16);
        if (at < 0) continue;  // the row's first bytes, rising by less than 16 a chunk
        windows = contiguous_windows(p, at);
        stream.pair_base[p] = static_cast<int32_t>(at);
      }
      stream.pair_windows = std::max(stream.pair_windows, static_cast<int>(windows));
    }
  }
  const int64_t bytes = 32 * stream.pair_windows;
  stream.pair_control.assign(static_cast<std::size_t>(pairs * bytes), 0x80);
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t at = stream.pair_base[static_cast<std::size_t>(p)];
    if (at < 0) continue;
    for (int block = 0; block < 2; ++block) {
      const int64_t from = block == 0 ? at : stream.pair_split ? stream.pair_upper[p] : at + 16;
      for (int slot = 0; slot < 16; ++slot) {
        const int64_t o = offset(slot, 16 * p + 8 * block + slot % 8);
        if (o < 0) continue;
        const int64_t d = o - from;
        const int to = block == 1 && stream.pair_packed ? slot + 8 : slot;
        stream.pair_control[static_cast<std::size_t>(p * bytes + (d / 16) * 32 + 16 * block + to)] =
            static_cast<uint8_t>(d % 16);
      }
    }
  }
}

}  // namespace

void SamplePlan::build(PixelFormat source, const int32_t* index, int64_t n) {
  format = source;
  chunks = 0;
  words.chunks = 0;
  lanes.halves = 0;
  const bool packed = packed_422(source);
  const bool semi = semi_planar_subsampled(source);
  if (!packed && !semi) return;
  const auto pos = offsets_of(source);
  // Byte offset, from its stream's row start, of what slot `slot` of stream `s` takes for
  // output i; -1 for an unused slot. Semi-planar: Y | U, V from the chroma row; packed: Y, U | V.
  const auto offset = [&](int s, int slot, int64_t i) -> int64_t {
    const int c = semi ? (s == 0 ? (slot < 8 ? 0 : -1) : (slot < 8 ? 1 : 2))
                       : (s == 0 ? (slot < 8 ? 0 : 1) : (slot < 8 ? 2 : -1));
    return c < 0 ? -1 : yuv_byte(semi, pos, index[i], c);
  };
  slots = semi ? std::array<int, 3>{0, 16, 24} : std::array<int, 3>{0, 8, 16};
  build_words(semi, pos, index, n);
  build_lanes(semi, pos, index, n);
  constexpr int kMaxWindows = 4;
  const int64_t count = n / 8;
  for (int s = 0; s < 2; ++s) {
    kernels::ShuffleStream& stream = streams[s];
    stream.base.assign(static_cast<std::size_t>(count), 0);
    stream.windows = 1;
    for (int64_t k = 0; k < count; ++k) {
      int64_t lo = INT64_MAX, hi = 0;
      for (int slot = 0; slot < 16; ++slot) {
        const int64_t o = offset(s, slot, 8 * k + slot % 8);
        if (o < 0) continue;
        lo = std::min(lo, o);
        hi = std::max(hi, o);
      }
      stream.base[static_cast<std::size_t>(k)] = static_cast<int32_t>(lo);
      stream.windows = std::max(stream.windows, static_cast<int>((hi - lo) / 16 + 1));
    }
    if (stream.windows > kMaxWindows) return;
    const int64_t bytes = 16 * stream.windows;
    stream.control.assign(static_cast<std::size_t>(count * bytes), 0x80);
    for (int64_t k = 0; k < count; ++k) {
      for (int slot = 0; slot < 16; ++slot) {
        const int64_t o = offset(s, slot, 8 * k + slot % 8);
        if (o < 0) continue;
        const int64_t d = o - stream.base[static_cast<std::size_t>(k)];
        stream.control[static_cast<std::size_t>(k * bytes + (d / 16) * 16 + slot)] = static_cast<uint8_t>(d % 16);
      }
    }
    // A packed row's second stream (V) lies within the first's (Y, U) windows at 3:1.
    build_pairs(
        stream, [&](int slot, int64_t i) { return offset(s, slot, i); }, count,
        packed && s == 1 ? &streams[0] : nullptr);
  }
  chunks = count;
}

namespace {

// The two rows a sample plan's streams read from row `y`, column `x` on (luma, then the chroma
// row; a packed row twice), and how many bytes may be read from there: the row's own, or, for
// a row with another after it, a stride more (its padding and as many of the next row's
// bytes), so that the shuffles' last windows of a row need no copy.
struct PlanRows {
  const uint8_t* rows[2];
  int64_t limits[2];
};

PlanRows plan_rows(const ImageRef& src, int64_t x, int64_t y) {
  const auto& p = src.planes;
  const auto readable = [](const PlaneRef& plane, int64_t row, int64_t rows, int64_t bytes) {
    return row + 1 < rows && plane.row > 0 ? plane.row + bytes : bytes;
  };
  const auto* luma = reinterpret_cast<const uint8_t*>(p[0].base + y * p[0].row + x * p[0].pixel);
  const int64_t luma_bytes = readable(p[0], y, src.height, (packed_422(src.format) ? 2 : 1) * (src.width - x));
  PlanRows r{{luma, luma}, {luma_bytes, luma_bytes}};
  if (!packed_422(src.format)) {
    const bool halved = src.format != PixelFormat::Nv16;
    const int64_t cy = halved ? y >> 1 : y;
    r.rows[1] = reinterpret_cast<const uint8_t*>(p[1].base + cy * p[1].row + (x >> 1) * p[1].pixel);
    r.limits[1] = readable(p[1], cy, halved ? (src.height + 1) / 2 : src.height, src.width - x);
  }
  return r;
}

// The plan's picked Y, U and V bytes of row y, from column x, into `ys`, `us` and `vs`: by its
// word picks where they are fast, else by its shuffle chunks. Returns how many of each (0 when
// the plan was not built for this source's format).
int64_t planned_bytes(const ImageRef& src, int64_t x, int64_t y, const SamplePlan& plan, uint8_t* ys, uint8_t* us,
                      uint8_t* vs) {
  if (plan.format != src.format) return 0;
  const PlanRows from = plan_rows(src, x, y);
  if (plan.words.chunks > 0 && kernels::word_picks_fast()) {
    kernels::word_picked_yuv_bytes(from.rows, plan.words, from.limits, ys, us, vs);
    return plan.words.outputs * plan.words.chunks;
  }
  if (plan.chunks == 0) return 0;
  kernels::shuffled_yuv_bytes(from.rows, plan.streams.data(), from.limits, plan.slots.data(), plan.chunks, ys, us, vs);
  return 8 * plan.chunks;
}

// How many outputs planned_bytes gives for `plan` (where it is built for the source's format).
int64_t planned_outputs(const SamplePlan& plan) {
  return plan.words.chunks > 0 && kernels::word_picks_fast() ? plan.words.outputs * plan.words.chunks : 8 * plan.chunks;
}

// Whether the plan's shuffle chunks serve `src` (its own format, and no word picks
// to take instead): the one-pass kernels' condition.
bool shuffles_serve(const ImageRef& src, const SamplePlan& plan) {
  return plan.format == src.format && plan.chunks > 0 && !(plan.words.chunks > 0 && kernels::word_picks_fast());
}

// The one-pass kernels' `ahead`: how far row next_y's bytes lie from row y's in each of the
// plan's streams (into `ahead`); null where next_y < 0.
const int64_t* rows_ahead(const ImageRef& src, int64_t x, int64_t next_y, const PlanRows& from, int64_t* ahead) {
  if (next_y < 0) return nullptr;
  const PlanRows next = plan_rows(src, x, next_y);
  for (int s = 0; s < 2; ++s) {
    ahead[s] = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(next.rows[s]) -
                                    reinterpret_cast<std::uintptr_t>(from.rows[s]));
  }
  return ahead;
}

// A one-pass kernel over row y of `plan` where its shuffle chunks serve src:
// kernel(rows, limits, ahead), its outputs returned (0 elsewhere).
template <class Kernel>
int64_t one_pass(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const SamplePlan& plan,
                 const Kernel& kernel) {
  if (!shuffles_serve(src, plan)) return 0;
  const PlanRows from = plan_rows(src, x, y);
  int64_t ahead[2];
  return kernel(from.rows, from.limits, rows_ahead(src, x, next_y, from, ahead));
}

// read_row_planned and read_row_planned_half in one pass where the kernels can (AVX2).
template <typename T>
int64_t planned_normalised(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const ColorCoeffs& coeffs,
                           const SamplePlan& plan, const float* affine, T* r, T* g, T* b) {
  if (affine == nullptr) return 0;
  return one_pass(
      src, x, y, next_y, plan, [&](const uint8_t* const* rows, const int64_t* limits, const int64_t* ahead) {
        // Picked straight into 32-bit lanes where the kernels can (AVX2), else from the pairs.
        const int64_t done = kernels::lane_yuv_to_planar(rows, plan.lanes, limits, ahead, coeffs, affine, r, g, b);
        return done > 0 ? done
                        : kernels::shuffled_yuv_to_planar(rows, plan.streams.data(), limits, ahead, plan.slots.data(),
                                                          plan.chunks, coeffs, affine, r, g, b);
      });
}

}  // namespace

bool planned_rows_prefetch(const ImageRef& src, const SamplePlan& plan) {
  return shuffles_serve(src, plan) && kernels::shuffles_in_one_pass() && !plan.streams[0].pair_base.empty();
}

int64_t read_row_planned(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const ColorCoeffs& coeffs,
                         const SamplePlan& plan, const float* affine, float* r, float* g, float* b, uint8_t* staging) {
  if (const int64_t done = planned_normalised(src, x, y, next_y, coeffs, plan, affine, r, g, b); done > 0) {
    return done;
  }
  const int64_t n = planned_outputs(plan);
  if (planned_bytes(src, x, y, plan, staging, staging + n, staging + 2 * n) == 0) return 0;
  kernels::planar_yuv_to_rgb(staging, staging + n, staging + 2 * n, n, coeffs, r, g, b, affine);
  return n;
}

int64_t read_row_planned_pixels(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const SamplePlan& plan,
                                const kernels::FixedCoeffs& coeffs, const int* order, int channels, uint8_t flip,
                                uint8_t* out) {
  return one_pass(
      src, x, y, next_y, plan, [&](const uint8_t* const* rows, const int64_t* limits, const int64_t* ahead) {
        return kernels::shuffled_yuv_to_8bit_pixels(rows, plan.streams.data(), limits, ahead, plan.slots.data(),
                                                    plan.chunks, coeffs, order, channels, flip, out);
      });
}

int64_t read_row_planned_planes(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const SamplePlan& plan,
                                const kernels::FixedCoeffs& coeffs, uint8_t flip, uint8_t* r, uint8_t* g, uint8_t* b) {
  return one_pass(src, x, y, next_y, plan,
                  [&](const uint8_t* const* rows, const int64_t* limits, const int64_t* ahead) {
                    return kernels::shuffled_yuv_to_8bit_planes(rows, plan.streams.data(), limits, ahead,
                                                                plan.slots.data(), plan.chunks, coeffs, flip, r, g, b);
                  });
}

int64_t read_row_planned_half(const ImageRef& src, int64_t x, int64_t y, int64_t next_y, const ColorCoeffs& coeffs,
                              const SamplePlan& plan, const float* affine, uint16_t* const* out, uint8_t* staging) {
  if (const int64_t done = planned_normalised(src, x, y, next_y, coeffs, plan, affine, out[0], out[1], out[2]);
      done > 0) {
    return done;
  }
  const int64_t n = planned_outputs(plan);
  if (planned_bytes(src, x, y, plan, staging, staging + n, staging + 2 * n) == 0) return 0;
  kernels::planar_yuv_to_half(staging, staging + n, staging + 2 * n, n, coeffs, out[0], out[1], out[2], affine);
  return n;
}

void read_row_sampled(const ImageRef& src, int64_t x, int64_t y, const int32_t* index, int64_t n,
                      const ColorCoeffs& coeffs, bool alpha, const RgbaRows& out, uint8_t* staging,
                      const SamplePlan& plan) {
  const auto& p = src.planes;
  auto row_ptr = [&](int plane, int64_t px, int64_t py) {
    return reinterpret_cast<const uint8_t*>(p[plane].base + py * p[plane].row + px * p[plane].pixel);
  };
  uint8_t* ys = staging;
  uint8_t* us = staging + n;
  uint8_t* vs = staging + 2 * n;
  // x is even for subsampled formats (the crop is chroma-aligned), so pixel x + i shares its
  // chroma with x + (i & ~1).
  float* r = out.channel(0);
  float* g = out.channel(1);
  float* b = out.channel(2);
  // The plan's chunks first; the rest (and everything without a plan) by the gather kernels.
  const int64_t done = read_row_planned(src, x, y, -1, coeffs, plan, nullptr, r, g, b, staging);
  switch (src.format) {
    case PixelFormat::Nv12:
    case PixelFormat::Nv21:
    case PixelFormat::Nv16: {
      const int64_t cy = src.format == PixelFormat::Nv16 ? y : y >> 1;
      // The kernel reads 4 bytes per sample; the last ones of the image row go byte by byte.
      const auto limit = static_cast<int32_t>(src.width - x - 4);
      kernels::sampled_semi_planar_to_rgb(row_ptr(0, x, y), row_ptr(1, x >> 1, cy), offsets_of(src.format)[0] == 1,
                                          index + done, n - done, limit, coeffs, r + done, g + done, b + done);
      return;
    }
    case PixelFormat::Nv24: {
      const uint8_t* luma = row_ptr(0, x, y);
      const uint8_t* chroma = row_ptr(1, x, y);
      for (int64_t i = 0; i < n; ++i) {
        ys[i] = luma[index[i]];
        us[i] = chroma[2 * index[i]];
        vs[i] = chroma[2 * index[i] + 1];
      }
      break;
    }
    case PixelFormat::I420: {
      const uint8_t* luma = row_ptr(0, x, y);
      const uint8_t* u = row_ptr(1, x >> 1, y >> 1);
      const uint8_t* v = row_ptr(2, x >> 1, y >> 1);
      for (int64_t i = 0; i < n; ++i) {
        ys[i] = luma[index[i]];
        us[i] = u[index[i] >> 1];
        vs[i] = v[index[i] >> 1];
      }
      break;
    }
    case PixelFormat::Yuyv:
    case PixelFormat::Uyvy:
    case PixelFormat::Vyuy: {
      kernels::sampled_packed_422_to_rgb(row_ptr(0, x, y),
                                         src.format == PixelFormat::Yuyv   ? 0
                                         : src.format == PixelFormat::Uyvy ? 1
                                                                           : 2,
                                         index + done, n - done, coeffs, r + done, g + done, b + done);
      return;
    }
    default: {
      const int channels = pixel_format_info(src.format)->plane_bytes_per_pixel[0];
      const auto off = offsets_of(src.format);
      const uint8_t* row = row_ptr(0, x, y);
      const bool has_alpha = alpha && channels == 4;
      for (int c = 0; c < (has_alpha ? 4 : 3); ++c) {
        float* ch = out.channel(c);
        for (int64_t i = 0; i < n; ++i) ch[i] = row[index[i] * channels + off[c]];
      }
      if (alpha && !has_alpha) std::fill(out.channel(3), out.channel(3) + n, 255.0f);
      return;
    }
  }
  kernels::planar_yuv_to_rgb(ys, us, vs, n, coeffs, r, g, b);
}

bool q6_readable(const ImageRef& src) {
  const auto& p = src.planes;
  switch (src.format) {
    case PixelFormat::Nv12:
    case PixelFormat::Nv21:
    case PixelFormat::Nv16: return p[0].pixel == 1 && p[1].pixel == 2 && p[1].comp == 1;
    case PixelFormat::Nv24: return p[0].pixel == 1 && p[1].pixel == 2 && p[1].comp == 1;
    case PixelFormat::I420: return p[0].pixel == 1 && p[1].pixel == 1 && p[2].pixel == 1;
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba: {
      for (int i = 0; i < src.plane_count; ++i) {
        if (p[i].pixel != 1) return false;
      }
      return true;
    }
    default: return sampled_rows_supported(src);
  }
}

namespace {

// Y, U and V bytes of pixels at(i), i in [from, n), by `fetch(pixel, &y, &u, &v)`.
template <class Fetch>
void gather_yuv(const int32_t* index, int64_t from, int64_t n, uint8_t* ys, uint8_t* us, uint8_t* vs, Fetch&& fetch) {
  if (index == nullptr) {
    for (int64_t i = from; i < n; ++i) fetch(i, ys + i, us + i, vs + i);
    return;
  }
  for (int64_t i = from; i < n; ++i) fetch(index[i], ys + i, us + i, vs + i);
}

}  // namespace

YuvBytes read_row_yuv_bytes(const ImageRef& src, int64_t x, int64_t y, const int32_t* index, int64_t n,
                            uint8_t* staging, const SamplePlan& plan) {
  const auto& p = src.planes;
  auto row_ptr = [&](int plane, int64_t px, int64_t py) {
    return reinterpret_cast<const uint8_t*>(p[plane].base + py * p[plane].row + px * p[plane].pixel);
  };
  const auto pos = offsets_of(src.format);
  uint8_t* ys = staging;
  uint8_t* us = staging + n;
  uint8_t* vs = staging + 2 * n;
  const uint8_t* luma_bytes = ys;  // where the decode takes Y from
  switch (src.format) {
    case PixelFormat::Nv12:
    case PixelFormat::Nv21:
    case PixelFormat::Nv16:
    case PixelFormat::Yuyv:
    case PixelFormat::Uyvy:
    case PixelFormat::Vyuy: {
      // The plan's outputs first, as read_row_planned, stopping at the picked bytes.
      const int64_t done = index != nullptr ? planned_bytes(src, x, y, plan, ys, us, vs) : 0;
      if (semi_planar_subsampled(src.format)) {
        const SemiPlanarLine line = semi_planar_line(src, x, y);
        if (index == nullptr) {
          // Every pixel (area downscales): Y in place, the chroma pairs split in vectors.
          luma_bytes = line.y;
          kernels::split_chroma_pairs(line.uv, line.vu, n, us, vs);
          break;
        }
        const int uo = line.vu ? 1 : 0, vo = 1 - uo;
        gather_yuv(index, done, n, ys, us, vs, [&](int64_t px, uint8_t* yy, uint8_t* uu, uint8_t* vv) {
          const uint8_t* pair = line.uv + (px & ~int64_t{1});
          *yy = line.y[px], *uu = pair[uo], *vv = pair[vo];
        });
      } else {
        const uint8_t* row = row_ptr(0, x, y);
        if (index == nullptr) {
          // Every pixel (area downscales): the macropixels de-interleaved in vectors (4K YUYV ->
          // 640x640 rgb u8 with Area took 7.6 ms picking them one by one, NV12 1.4 ms).
          kernels::split_packed_422(row, pos.data(), n, ys, us, vs);
          break;
        }
        gather_yuv(index, done, n, ys, us, vs, [&](int64_t px, uint8_t* yy, uint8_t* uu, uint8_t* vv) {
          const uint8_t* macro = row + 4 * (px >> 1);
          *yy = macro[pos[(px & 1) ? 2 : 0]], *uu = macro[pos[1]], *vv = macro[pos[3]];
        });
      }
      break;
    }
    case PixelFormat::Nv24: {
      const uint8_t* luma = row_ptr(0, x, y);
      const uint8_t* chroma = row_ptr(1, x, y);
      const int uo = pos[0], vo = pos[1];
      gather_yuv(index, 0, n, ys, us, vs, [&](int64_t px, uint8_t* yy, uint8_t* uu, uint8_t* vv) {
        *yy = luma[px], *uu = chroma[2 * px + uo], *vv = chroma[2 * px + vo];
      });
      break;
    }
    case PixelFormat::I420: {
      const uint8_t* luma = row_ptr(0, x, y);
      const uint8_t* u = row_ptr(1, x >> 1, y >> 1);
      const uint8_t* v = row_ptr(2, x >> 1, y >> 1);
      gather_yuv(index, 0, n, ys, us, vs, [&](int64_t px, uint8_t* yy, uint8_t* uu, uint8_t* vv) {
        *yy = luma[px], *uu = u[px >> 1], *vv = v[px >> 1];
      });
      break;
    }
    default: return {};
  }
  return {luma_bytes, us, vs};
}

SemiPlanarLine semi_planar_line(const ImageRef& src, int64_t x, int64_t y) {
  const auto& p = src.planes;
  const int64_t cy = src.format == PixelFormat::Nv16 ? y : y >> 1;
  const auto pos = offsets_of(src.format);
  return {reinterpret_cast<const uint8_t*>(p[0].base + y * p[0].row + x * p[0].pixel),
          reinterpret_cast<const uint8_t*>(p[1].base + cy * p[1].row + (x >> 1) * p[1].pixel), pos[1] < pos[0]};
}

Packed422Line packed_422_line(const ImageRef& src, int64_t x, int64_t y) {
  if (!packed_422(src.format)) return {};
  const PlaneRef& p = src.planes[0];
  return {reinterpret_cast<const uint8_t*>(p.base + y * p.row + x * p.pixel), offsets_of(src.format)};
}

void read_row_q6(const ImageRef& src, int64_t x, int64_t y, const int32_t* index, int64_t n,
                 const kernels::FixedCoeffs& coeffs, bool alpha, const Q6Rows& out, uint8_t* staging,
                 const SamplePlan& plan) {
  if (const YuvBytes bytes = read_row_yuv_bytes(src, x, y, index, n, staging, plan); bytes.y != nullptr) {
    kernels::yuv_to_rgb_q6(bytes.y, bytes.u, bytes.v, n, coeffs, out.channel(0), out.channel(1), out.channel(2));
    if (alpha) std::fill(out.channel(3), out.channel(3) + n, int16_t{255 * 64});
    return;
  }
  const auto& p = src.planes;
  auto row_ptr = [&](int plane, int64_t px, int64_t py) {
    return reinterpret_cast<const uint8_t*>(p[plane].base + py * p[plane].row + px * p[plane].pixel);
  };
  const auto at = [index](int64_t i) -> int64_t { return index != nullptr ? index[i] : i; };
  const auto pos = offsets_of(src.format);
  switch (src.format) {
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba: {
      const bool has = has_alpha(src.format) && alpha;
      for (int c = 0; c < (has ? 4 : 3); ++c) {
        const uint8_t* in = row_ptr(c, x, y);
        int16_t* o = out.channel(c);
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int16_t>(in[at(i)] << 6);
      }
      if (alpha && !has) std::fill(out.channel(3), out.channel(3) + n, int16_t{255 * 64});
      return;
    }
    default: {
      const int channels = pixel_format_info(src.format)->plane_bytes_per_pixel[0];
      const uint8_t* row = row_ptr(0, x, y);
      const bool has = alpha && channels == 4;
      for (int c = 0; c < (has ? 4 : 3); ++c) {
        int16_t* o = out.channel(c);
        const uint8_t* in = row + pos[c];
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int16_t>(in[at(i) * channels] << 6);
      }
      if (alpha && !has) std::fill(out.channel(3), out.channel(3) + n, int16_t{255 * 64});
      return;
    }
  }
}

}  // namespace memhal::detail
