// Destination side of pixel_io.hpp: float RGBA rows to every output format and dtype.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "image/cpu/kernels.hpp"
#include "image/cpu/pixel_io.hpp"

namespace memhal::detail {
namespace {

inline uint8_t round_u8(float v) {
  return static_cast<uint8_t>(std::lrintf(std::min(std::max(v, 0.0f), 255.0f)));
}

// One element of any output dtype from a 0..255 value.
inline void put(std::byte* p, DType dtype, float v, float scale, float bias) {
  switch (dtype) {
    case DType::U8: *reinterpret_cast<uint8_t*>(p) = round_u8(v); return;
    case DType::I8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(round_u8(v) ^ 0x80u); return;
    case DType::F16: {
      const uint16_t h = kernels::half_from_float(v * scale + bias);
      std::memcpy(p, &h, sizeof h);
      return;
    }
    case DType::F32: {
      const float f = v * scale + bias;
      std::memcpy(p, &f, sizeof f);
      return;
    }
    default: return;
  }
}

void write_channel(const PlaneRef& plane, int64_t y, int64_t comp, DType dtype, const float* in, int64_t n, float scale,
                   float bias, bool stream) {
  std::byte* row = plane.base + y * plane.row + comp * plane.comp;
  const auto esize = static_cast<int64_t>(size_of(dtype));
  if (plane.pixel == esize) {
    if (dtype == DType::U8 || dtype == DType::I8) {
      kernels::store_8bit(in, dtype == DType::I8 ? -128 : 0, reinterpret_cast<uint8_t*>(row), n);
      return;
    }
    if (dtype == DType::F32) {
      kernels::store_f32(in, scale, bias, reinterpret_cast<float*>(row), n, stream);
      return;
    }
    if (dtype == DType::F16) {
      kernels::store_f16(in, scale, bias, reinterpret_cast<uint16_t*>(row), n);
      return;
    }
  }
  for (int64_t x = 0; x < n; ++x) put(row + x * plane.pixel, dtype, in[x], scale, bias);
}

void write_interleaved(const ImageRef& dst, int64_t y, const RgbaRows& rows, const WriteParams& params,
                       float* scratch) {
  const PlaneRef& plane = dst.planes[0];
  const int channels = params.channels;
  const float* in[4] = {};
  for (int j = 0; j < channels; ++j) in[j] = rows.channel(params.order[j]);
  const bool eight_bit = dst.dtype == DType::U8 || dst.dtype == DType::I8;
  if (eight_bit && plane.comp == 1 && plane.pixel == channels) {
    kernels::store_8bit_interleaved(in, channels, dst.dtype == DType::I8 ? -128 : 0,
                                    reinterpret_cast<uint8_t*>(scratch),
                                    reinterpret_cast<uint8_t*>(plane.base + y * plane.row), dst.width);
    return;
  }
  for (int j = 0; j < channels; ++j) {
    write_channel(plane, y, j, dst.dtype, in[j], dst.width, params.scale[j], params.bias[j], params.stream);
  }
}

// Full-range luma of RGB, the grey a model sees.
void luma_row(const RgbaRows& rows, int64_t n, const ColorCoeffs& c, float* out) {
  const float* r = rows.channel(0);
  const float* g = rows.channel(1);
  const float* b = rows.channel(2);
  for (int64_t x = 0; x < n; ++x) out[x] = c.kr * r[x] + c.kg * g[x] + c.kb * b[x];
}

struct Yuv {
  float y, u, v;
};

Yuv encode(float r, float g, float b, const ColorCoeffs& c) {
  const float luma = c.kr * r + c.kg * g + c.kb * b;
  return {c.y_offset + luma / c.y_scale, 128.0f + (b - luma) / (2.0f * (1.0f - c.kb)) / c.c_scale,
          128.0f + (r - luma) / (2.0f * (1.0f - c.kr)) / c.c_scale};
}

// Mean of the RGB pixels [x, x + count) of each row in `rows`, encoded.
Yuv encode_mean(const RgbaRows* const* rows, int row_count, int64_t x, int count, const ColorCoeffs& c) {
  float sum[3] = {0, 0, 0};
  for (int i = 0; i < row_count; ++i) {
    for (int k = 0; k < count; ++k) {
      for (int ch = 0; ch < 3; ++ch) sum[ch] += rows[i]->channel(ch)[x + k];
    }
  }
  const float n = static_cast<float>(row_count * count);
  return encode(sum[0] / n, sum[1] / n, sum[2] / n, c);
}

void write_yuv(const ImageRef& dst, int64_t y, const RgbaRows& rows, const RgbaRows* second, const ColorCoeffs& c) {
  const auto& p = dst.planes;
  auto at = [](const PlaneRef& plane, int64_t px, int64_t py, int64_t comp) {
    return reinterpret_cast<uint8_t*>(plane.base + py * plane.row + px * plane.pixel + comp * plane.comp);
  };
  if (dst.format == PixelFormat::Yuyv) {
    const RgbaRows* both[1] = {&rows};
    for (int64_t x = 0; x < dst.width; x += 2) {
      const Yuv mean = encode_mean(both, 1, x, 2, c);
      *at(p[0], x, y, 0) = round_u8(encode(rows.channel(0)[x], rows.channel(1)[x], rows.channel(2)[x], c).y);
      *at(p[0], x, y, 1) = round_u8(mean.u);
      *at(p[0], x + 1, y, 0) =
          round_u8(encode(rows.channel(0)[x + 1], rows.channel(1)[x + 1], rows.channel(2)[x + 1], c).y);
      *at(p[0], x + 1, y, 1) = round_u8(mean.v);
    }
    return;
  }
  const RgbaRows* pair[2] = {&rows, second};
  for (int i = 0; i < 2; ++i) {
    for (int64_t x = 0; x < dst.width; ++x) {
      const RgbaRows& r = *pair[i];
      *at(p[0], x, y + i, 0) = round_u8(encode(r.channel(0)[x], r.channel(1)[x], r.channel(2)[x], c).y);
    }
  }
  for (int64_t x = 0; x < dst.width; x += 2) {
    const Yuv mean = encode_mean(pair, 2, x, 2, c);
    if (dst.format == PixelFormat::I420) {
      *at(p[1], x / 2, y / 2, 0) = round_u8(mean.u);
      *at(p[2], x / 2, y / 2, 0) = round_u8(mean.v);
    } else {
      *at(p[1], x / 2, y / 2, 0) = round_u8(mean.u);
      *at(p[1], x / 2, y / 2, 1) = round_u8(mean.v);
    }
  }
}

}  // namespace

bool rows_copyable(const ImageRef& dst) {
  if (dst.format == PixelFormat::Nv12 || dst.format == PixelFormat::I420) return false;
  for (int i = 0; i < dst.plane_count; ++i) {
    const PlaneRef& p = dst.planes[i];
    const int64_t channels = dst.plane_count == 1 ? pixel_format_info(dst.format)->plane_bytes_per_pixel[0] : 1;
    const auto esize = static_cast<int64_t>(size_of(dst.dtype));
    if (p.pixel != channels * esize || (channels > 1 && p.comp != esize)) return false;
  }
  return true;
}

void copy_row(const ImageRef& dst, int64_t from, int64_t to, bool stream) {
  for (int i = 0; i < dst.plane_count; ++i) {
    const PlaneRef& p = dst.planes[i];
    if (stream) {
      kernels::stream_copy(reinterpret_cast<const uint8_t*>(p.base + from * p.row),
                           reinterpret_cast<uint8_t*>(p.base + to * p.row), dst.width * p.pixel);
      continue;
    }
    std::memcpy(p.base + to * p.row, p.base + from * p.row, static_cast<std::size_t>(dst.width * p.pixel));
  }
}

bool fill_rows_like(const ImageRef& dst, int64_t from, int64_t to, int64_t end) {
  struct Fill {
    uint32_t value = 0;
    int size = 1;
  };
  std::array<Fill, 4> fills{};
  const auto esize = static_cast<int>(size_of(dst.dtype));
  for (int i = 0; i < dst.plane_count; ++i) {
    const PlaneRef& p = dst.planes[i];
    const auto* row = reinterpret_cast<const uint8_t*>(p.base + from * p.row);
    const auto bytes = static_cast<std::size_t>(dst.width * p.pixel);
    const auto pixel = static_cast<std::size_t>(p.pixel);
    // One pixel repeated along the row, and that pixel one element (or one byte) repeated.
    if (bytes > pixel && std::memcmp(row, row + pixel, bytes - pixel) != 0) return false;
    const auto alike = [&](std::size_t size) {
      for (std::size_t b = size; b < pixel; b += size) {
        if (std::memcmp(row, row + b, size) != 0) return false;
      }
      return true;
    };
    const int size = (esize == 2 || esize == 4) && alike(static_cast<std::size_t>(esize)) ? esize : 1;
    if (size == 1 && !alike(1)) return false;
    std::memcpy(&fills[i].value, row, static_cast<std::size_t>(size));
    fills[i].size = size;
  }
  for (int i = 0; i < dst.plane_count; ++i) {
    const PlaneRef& p = dst.planes[i];
    const int64_t elements = dst.width * p.pixel / fills[i].size;
    if (p.row == dst.width * p.pixel) {  // the rows are one run of bytes
      kernels::fill_repeated(p.base + to * p.row, &fills[i].value, fills[i].size, elements * (end - to));
      continue;
    }
    for (int64_t y = to; y < end; ++y) {
      kernels::fill_repeated(p.base + y * p.row, &fills[i].value, fills[i].size, elements);
    }
  }
  return true;
}

bool writable(PixelFormat format, DType dtype) {
  const bool any_dtype = dtype == DType::U8 || dtype == DType::I8 || dtype == DType::F16 || dtype == DType::F32;
  switch (format) {
    case PixelFormat::Rgb:
    case PixelFormat::Bgr:
    case PixelFormat::Rgba:
    case PixelFormat::Bgra:
    case PixelFormat::Grey:
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba: return any_dtype;
    case PixelFormat::Nv12:
    case PixelFormat::I420:
    case PixelFormat::Yuyv: return dtype == DType::U8;
    default: return false;
  }
}

void write_rows(const ImageRef& dst, int64_t y, const RgbaRows& rows, const RgbaRows* second, const WriteParams& params,
                float* scratch) {
  switch (dst.format) {
    case PixelFormat::Rgb:
    case PixelFormat::Bgr:
    case PixelFormat::Rgba:
    case PixelFormat::Bgra: write_interleaved(dst, y, rows, params, scratch); return;
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba:
      for (int j = 0; j < params.channels; ++j) {
        write_channel(dst.planes[j], y, 0, dst.dtype, rows.channel(params.order[j]), dst.width, params.scale[j],
                      params.bias[j], params.stream);
      }
      return;
    case PixelFormat::Grey:
      luma_row(rows, dst.width, params.coeffs, scratch);
      write_channel(dst.planes[0], y, 0, dst.dtype, scratch, dst.width, params.scale[0], params.bias[0], params.stream);
      return;
    default: write_yuv(dst, y, rows, second, params.coeffs); return;
  }
}

}  // namespace memhal::detail
