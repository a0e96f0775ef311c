#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memhal/pixel_format.hpp>
#include <sstream>
#include <utility>

namespace memhal::reference {
namespace {

struct Rgba {
  double c[4];
};

struct Coeffs {
  double kr, kb, kg;
  bool limited;
};

Coeffs coeffs(const ConvertOptions& o) {
  Coeffs k{};
  k.kr = o.matrix == ColorMatrix::Bt709 ? 0.2126 : 0.299;
  k.kb = o.matrix == ColorMatrix::Bt709 ? 0.0722 : 0.114;
  k.kg = 1.0 - k.kr - k.kb;
  k.limited = o.range == ColorRange::Limited;
  return k;
}

double clamp255(double v) {
  return std::min(255.0, std::max(0.0, v));
}

Rgba decode_yuv(double y, double u, double v, const Coeffs& k) {
  const double luma = k.limited ? (y - 16.0) * 255.0 / 219.0 : y;
  const double cb = (u - 128.0) * (k.limited ? 255.0 / 224.0 : 1.0);
  const double cr = (v - 128.0) * (k.limited ? 255.0 / 224.0 : 1.0);
  const double r = luma + 2.0 * (1.0 - k.kr) * cr;
  const double b = luma + 2.0 * (1.0 - k.kb) * cb;
  const double g = (luma - k.kr * r - k.kb * b) / k.kg;  // from luma = kr R + kg G + kb B
  return {{clamp255(r), clamp255(g), clamp255(b), 255.0}};
}

uint8_t byte(const std::byte* p) {
  return static_cast<uint8_t>(*p);
}

// Source pixel (x, y) of a mapped image.
Rgba pixel(const TensorMap& map, PixelFormat format, int64_t x, int64_t y, const Coeffs& k) {
  const Layout& l = map.layout();
  const auto s = l.strides();
  const std::byte* d = map.data();
  switch (format) {
    case PixelFormat::Rgb:
    case PixelFormat::Rgba:
    case PixelFormat::Bgr:
    case PixelFormat::Bgra: {
      auto at = [&](int c) { return double(byte(d + y * s[0] + x * s[1] + c * s[2])); };
      const bool bgr = format == PixelFormat::Bgr || format == PixelFormat::Bgra;
      const bool alpha = format == PixelFormat::Rgba || format == PixelFormat::Bgra;
      return {{at(bgr ? 2 : 0), at(1), at(bgr ? 0 : 2), alpha ? at(3) : 255.0}};
    }
    case PixelFormat::Grey: {
      const double g = byte(d + y * s[0] + x * s[1]);
      return {{g, g, g, 255.0}};
    }
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba: {
      auto at = [&](int c) { return double(byte(d + c * s[0] + y * s[1] + x * s[2])); };
      return {{at(0), at(1), at(2), format == PixelFormat::PlanarRgba ? at(3) : 255.0}};
    }
    case PixelFormat::Yuyv:
    case PixelFormat::Uyvy:
    case PixelFormat::Vyuy: {
      const std::byte* macro = d + y * s[0] + (x / 2) * 2 * s[1];
      double y0 = 0, y1 = 0, u = 0, v = 0;
      if (format == PixelFormat::Yuyv) y0 = byte(macro), u = byte(macro + 1), y1 = byte(macro + 2), v = byte(macro + 3);
      if (format == PixelFormat::Uyvy) u = byte(macro), y0 = byte(macro + 1), v = byte(macro + 2), y1 = byte(macro + 3);
      if (format == PixelFormat::Vyuy) v = byte(macro), y0 = byte(macro + 1), u = byte(macro + 2), y1 = byte(macro + 3);
      return decode_yuv(x % 2 ? y1 : y0, u, v, k);
    }
    default: break;
  }
  const auto planes = l.planes();
  const double luma = byte(map.plane(0) + y * planes[0].pitch + x);
  switch (format) {
    case PixelFormat::Nv12:
    case PixelFormat::Nv21: {
      const std::byte* c = map.plane(1) + (y / 2) * planes[1].pitch + (x / 2) * 2;
      const bool vu = format == PixelFormat::Nv21;
      return decode_yuv(luma, byte(c + (vu ? 1 : 0)), byte(c + (vu ? 0 : 1)), k);
    }
    case PixelFormat::Nv16: {
      const std::byte* c = map.plane(1) + y * planes[1].pitch + (x / 2) * 2;
      return decode_yuv(luma, byte(c), byte(c + 1), k);
    }
    case PixelFormat::Nv24: {
      const std::byte* c = map.plane(1) + y * planes[1].pitch + x * 2;
      return decode_yuv(luma, byte(c), byte(c + 1), k);
    }
    case PixelFormat::I420:
      return decode_yuv(luma, byte(map.plane(1) + (y / 2) * planes[1].pitch + x / 2),
                        byte(map.plane(2) + (y / 2) * planes[2].pitch + x / 2), k);
    default: return {{0, 0, 0, 0}};
  }
}

// Source taps (oriented index, weight) of output `o` along an axis of `in` oriented pixels.
std::vector<std::pair<int64_t, double>> taps(int64_t o, int64_t out, int64_t in, Interpolation mode) {
  const double scale = double(in) / double(out);
  if (mode == Interpolation::Nearest) {
    return {{std::min<int64_t>(in - 1, int64_t(std::floor((o + 0.5) * scale))), 1.0}};
  }
  if (mode == Interpolation::Area && scale > 1.0) {
    std::vector<std::pair<int64_t, double>> result;
    const double begin = o * scale;
    const double end = (o + 1) * scale;
    for (int64_t i = 0; i < in; ++i) {
      const double overlap = std::min(end, i + 1.0) - std::max(begin, double(i));
      if (overlap > 0) result.push_back({i, overlap / scale});
    }
    return result;
  }
  const double f = std::clamp((o + 0.5) * scale - 0.5, 0.0, double(in - 1));
  const auto i0 = int64_t(std::floor(f));
  const int64_t i1 = std::min(i0 + 1, in - 1);
  return {{i0, 1.0 - (f - i0)}, {i1, f - i0}};
}

struct Source {
  const TensorMap& map;
  PixelFormat format;
  Rect crop;
  const ConvertOptions& options;
  Coeffs k;

  // Oriented (after crop, flip, clockwise rotation) dimensions.
  bool swapped() const { return options.rotation == Rotation::Cw90 || options.rotation == Rotation::Cw270; }
  int64_t width() const { return swapped() ? crop.height : crop.width; }
  int64_t height() const { return swapped() ? crop.width : crop.height; }

  Rgba at(int64_t ox, int64_t oy) const {
    const int64_t w = crop.width, h = crop.height;
    int64_t fx = ox, fy = oy;  // in the flipped (not yet rotated) image
    switch (options.rotation) {
      case Rotation::None: break;
      case Rotation::Cw90: fx = oy, fy = h - 1 - ox; break;
      case Rotation::Cw180: fx = w - 1 - ox, fy = h - 1 - oy; break;
      case Rotation::Cw270: fx = w - 1 - oy, fy = ox; break;
    }
    const bool fh = options.flip == Flip::Horizontal || options.flip == Flip::Both;
    const bool fv = options.flip == Flip::Vertical || options.flip == Flip::Both;
    const int64_t sx = fh ? w - 1 - fx : fx;
    const int64_t sy = fv ? h - 1 - fy : fy;
    return pixel(map, format, crop.x + sx, crop.y + sy, k);
  }
};

// The destination image in RGBA, before encoding into the output format.
std::vector<Rgba> render(const Source& src, int64_t dw, int64_t dh) {
  const auto& o = src.options;
  Rect box{0, 0, dw, dh};
  if (o.resize == ResizeMode::Letterbox) {
    const double scale = std::min(double(dw) / src.width(), double(dh) / src.height());
    box.width = std::clamp<int64_t>(std::llround(src.width() * scale), 1, dw);
    box.height = std::clamp<int64_t>(std::llround(src.height() * scale), 1, dh);
    box.x = (dw - box.width) / 2;
    box.y = (dh - box.height) / 2;
  }
  std::vector<Rgba> out(dw * dh, Rgba{{double(o.pad[0]), double(o.pad[1]), double(o.pad[2]), double(o.pad[3])}});
  for (int64_t y = 0; y < box.height; ++y) {
    const auto ty = taps(y, box.height, src.height(), o.interpolation);
    for (int64_t x = 0; x < box.width; ++x) {
      const auto tx = taps(x, box.width, src.width(), o.interpolation);
      Rgba sum{{0, 0, 0, 0}};
      for (auto [iy, wy] : ty) {
        for (auto [ix, wx] : tx) {
          const Rgba p = src.at(ix, iy);
          for (int c = 0; c < 4; ++c) sum.c[c] += wx * wy * p.c[c];
        }
      }
      out[(box.y + y) * dw + box.x + x] = sum;
    }
  }
  return out;
}

double luma(const Rgba& p, const Coeffs& k) {
  return k.kr * p.c[0] + k.kg * p.c[1] + k.kb * p.c[2];
}

double half_to_float(uint16_t h) {
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

double element(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::U8: return static_cast<uint8_t>(*p);
    case DType::I8: return static_cast<int8_t>(*p);
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    }
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    default: return NAN;
  }
}

}  // namespace

PixelFormat output_format(const Tensor& dst, const ConvertOptions& options) {
  if (dst.pixel_format()) return *dst.pixel_format();
  if (options.dst_format) return *options.dst_format;
  auto shape = dst.shape();
  if (shape.size() == 4) shape = shape.subspan(1);
  if (shape.size() == 2 || shape[2] == 1) return PixelFormat::Grey;
  if (shape[2] == 3) return PixelFormat::Rgb;
  if (shape[2] == 4) return PixelFormat::Rgba;
  return shape[0] == 3 ? PixelFormat::PlanarRgb : PixelFormat::PlanarRgba;
}

std::vector<Mismatch> compare(const Tensor& src, const Tensor& dst, const ConvertOptions& options, std::size_t limit,
                              double tolerance_steps) {
  auto in = *src.map(CpuAccess::Read);
  auto out = *dst.map(CpuAccess::Read);
  const PixelFormat format = output_format(dst, options);
  const bool planar_src =
      *src.pixel_format() == PixelFormat::PlanarRgb || *src.pixel_format() == PixelFormat::PlanarRgba;
  const int64_t sw = src.layout().is_multi_plane() ? src.shape()[1] : src.shape()[planar_src ? 2 : 1];
  const int64_t sh = src.shape()[planar_src ? 1 : 0];
  const Source source{in, *src.pixel_format(), options.crop.value_or(Rect{0, 0, sw, sh}), options, coeffs(options)};

  auto shape = dst.shape();
  auto strides = dst.strides();
  if (!dst.layout().is_multi_plane() && shape.size() == 4) shape = shape.subspan(1), strides = strides.subspan(1);
  const bool planar = format == PixelFormat::PlanarRgb || format == PixelFormat::PlanarRgba;
  const int64_t dw = dst.layout().is_multi_plane() ? shape[1] : shape[planar ? 2 : 1];
  const int64_t dh = shape[planar ? 1 : 0];
  const std::vector<Rgba> image = render(source, dw, dh);
  const Coeffs& k = source.k;
  const DType dtype = dst.dtype();
  const bool is_float = dtype == DType::F16 || dtype == DType::F32;

  std::vector<Mismatch> bad;
  auto check = [&](double actual, double value, int channel, int64_t x, int64_t y) {
    double expected = value;
    double tolerance = tolerance_steps;
    if (is_float) {
      expected = (value / 255.0 - options.mean[channel]) / options.std[channel];
      tolerance = tolerance_steps / 255.0 / std::abs(options.std[channel]) + 1e-4;
      if (dtype == DType::F16) tolerance += std::abs(expected) * 1e-3;
    } else {
      expected = std::round(clamp255(value)) - (dtype == DType::I8 ? 128.0 : 0.0);
    }
    if (std::abs(actual - expected) > tolerance && bad.size() < limit) {
      std::ostringstream where;
      where << to_string(format) << " " << to_string(dtype) << " pixel (" << x << ", " << y << ") channel " << channel;
      bad.push_back({where.str(), actual, expected});
    }
  };
  const std::byte* d = out.data();
  if (format == PixelFormat::Nv12 || format == PixelFormat::I420 || format == PixelFormat::Yuyv) {
    const bool yuyv = format == PixelFormat::Yuyv;
    auto encode_chroma = [&](const Rgba& m, double* u, double* v) {
      const double l = luma(m, k);
      const double cs = k.limited ? 224.0 / 255.0 : 1.0;
      *u = 128.0 + (m.c[2] - l) / (2.0 * (1.0 - k.kb)) * cs;
      *v = 128.0 + (m.c[0] - l) / (2.0 * (1.0 - k.kr)) * cs;
    };
    for (int64_t y = 0; y < dh; ++y) {
      for (int64_t x = 0; x < dw; ++x) {
        const double yv = (k.limited ? 16.0 + luma(image[y * dw + x], k) * 219.0 / 255.0 : luma(image[y * dw + x], k));
        const std::byte* p = yuyv ? d + y * strides[0] + x * 2 : out.plane(0) + y * dst.layout().planes()[0].pitch + x;
        check(element(p, DType::U8), yv, 0, x, y);
      }
    }
    const int64_t cy_step = yuyv ? 1 : 2;
    for (int64_t y = 0; y < dh; y += cy_step) {
      // The chroma sample's 2x1 (YUYV) or 2x2 pixels, every read unconditional and in bounds:
      // a 2x1 block is its row counted twice. (GCC 12 at -O3 if-converted the former
      // `j < cy_step` loop into an unconditional read of row y + 1, past the image on the
      // last YUYV row.)
      const Rgba* rows[2] = {&image[y * dw], &image[std::min(y + cy_step - 1, dh - 1) * dw]};
      for (int64_t x = 0; x < dw; x += 2) {
        Rgba m{{0, 0, 0, 0}};
        for (const Rgba* row : rows) {
          for (const int64_t i : {x, std::min(x + 1, dw - 1)}) {
            for (int c = 0; c < 3; ++c) m.c[c] += row[i].c[c] / 4.0;
          }
        }
        double u = 0, v = 0;
        encode_chroma(m, &u, &v);
        const std::byte *pu = nullptr, *pv = nullptr;
        if (yuyv) {
          pu = d + y * strides[0] + x * 2 + 1;
          pv = pu + 2;
        } else if (format == PixelFormat::Nv12) {
          pu = out.plane(1) + (y / 2) * dst.layout().planes()[1].pitch + x;
          pv = pu + 1;
        } else {
          pu = out.plane(1) + (y / 2) * dst.layout().planes()[1].pitch + x / 2;
          pv = out.plane(2) + (y / 2) * dst.layout().planes()[2].pitch + x / 2;
        }
        check(element(pu, DType::U8), u, 1, x, y);
        check(element(pv, DType::U8), v, 2, x, y);
      }
    }
    return bad;
  }
  std::vector<int> order = {0, 1, 2};
  if (format == PixelFormat::Bgr) order = {2, 1, 0};
  if (format == PixelFormat::Rgba || format == PixelFormat::PlanarRgba) order = {0, 1, 2, 3};
  if (format == PixelFormat::Bgra) order = {2, 1, 0, 3};
  if (options.swap_rb) {
    for (int& c : order) c = c == 0 ? 2 : c == 2 ? 0 : c;
  }
  for (int64_t y = 0; y < dh; ++y) {
    for (int64_t x = 0; x < dw; ++x) {
      const Rgba& p = image[y * dw + x];
      if (format == PixelFormat::Grey) {
        const std::byte* e = d + y * strides[0] + x * strides[1];
        check(element(e, dtype), luma(p, k), 0, x, y);
        continue;
      }
      for (std::size_t j = 0; j < order.size(); ++j) {
        const std::byte* e = planar ? d + j * strides[0] + y * strides[1] + x * strides[2]
                                    : d + y * strides[0] + x * strides[1] + j * strides[2];
        check(element(e, dtype), p.c[order[j]], int(j), x, y);
      }
    }
  }
  return bad;
}

}  // namespace memhal::reference
