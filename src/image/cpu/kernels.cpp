// Highway kernels of the CPU image backend; see kernels.hpp. This file is compiled once per
// target by foreach_target.h, so each function below exists in every instruction set.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "image/cpu/kernels.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "image/cpu/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace memhal::detail::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

inline float clamp255(float v) {
  return std::min(std::max(v, 0.0f), 255.0f);
}

inline void yuv_scalar(float y, float u, float v, const ColorCoeffs& c, float* r, float* g, float* b) {
  const float yl = (y - c.y_offset) * c.y_scale;
  const float uc = u - 128.0f;
  const float vc = v - 128.0f;
  *r = clamp255(yl + c.rv * vc);
  *g = clamp255(yl - c.gu * uc - c.gv * vc);
  *b = clamp255(yl + c.bu * uc);
}

// R, G and B of Y, U and V, clamped to 0..255.
template <class D, class V>
HWY_INLINE void yuv_clamped(D df, V y, V u, V v, const ColorCoeffs& c, V& r, V& g, V& b) {
  const auto zero = hn::Zero(df);
  const auto top = hn::Set(df, 255.0f);
  const auto yl = hn::Mul(hn::Sub(y, hn::Set(df, c.y_offset)), hn::Set(df, c.y_scale));
  const auto uc = hn::Sub(u, hn::Set(df, 128.0f));
  const auto vc = hn::Sub(v, hn::Set(df, 128.0f));
  r = hn::Min(hn::Max(hn::MulAdd(hn::Set(df, c.rv), vc, yl), zero), top);
  g = hn::Min(hn::Max(hn::NegMulAdd(hn::Set(df, c.gu), uc, hn::NegMulAdd(hn::Set(df, c.gv), vc, yl)), zero), top);
  b = hn::Min(hn::Max(hn::MulAdd(hn::Set(df, c.bu), uc, yl), zero), top);
}

template <class D, class V>
HWY_INLINE void yuv_vector(D df, V y, V u, V v, const ColorCoeffs& c, float* HWY_RESTRICT r, float* HWY_RESTRICT g,
                           float* HWY_RESTRICT b) {
  V rr, gg, bb;
  yuv_clamped(df, y, u, v, c, rr, gg, bb);
  hn::StoreU(rr, df, r);
  hn::StoreU(gg, df, g);
  hn::StoreU(bb, df, b);
}

template <class D>
HWY_INLINE auto load_u8_as_f32(D df, const uint8_t* p) {
  const hn::Rebind<uint8_t, D> d8;
  const hn::RebindToSigned<D> di;
  return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, p)));
}

// Whether `p` is aligned for a full vector of `lanes` elements of T (what Stream needs).
template <class T>
bool vector_aligned(const T* p, int64_t lanes) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * static_cast<std::size_t>(lanes)) == 0;
}

// Plain loads, not vector gathers: on AMD Zen and several Intel cores a gather is slower than
// the scalar loads it replaces, and these loops run at two loads a cycle.
void Resample2Tap(const float* HWY_RESTRICT in, const int32_t* HWY_RESTRICT index, const float* HWY_RESTRICT weight,
                  float* HWY_RESTRICT out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = in[index[i]];
    out[i] = a + weight[i] * (in[index[i] + 1] - a);
  }
}

void ResamplePairs(const float* HWY_RESTRICT in, const float* HWY_RESTRICT weight, float* HWY_RESTRICT out, int64_t n) {
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<DF> a, b;
    hn::LoadInterleaved2(df, in + 2 * i, a, b);
    hn::StoreU(hn::MulAdd(hn::LoadU(df, weight + i), hn::Sub(b, a), a), df, out + i);
  }
#endif
  for (; i < n; ++i) out[i] = in[2 * i] + weight[i] * (in[2 * i + 1] - in[2 * i]);
}

void Resample1Tap(const float* HWY_RESTRICT in, const int32_t* HWY_RESTRICT index, float* HWY_RESTRICT out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = in[index[i]];
}

// `out` may be `a` or `b`: each element is read before it is written.
void Blend2(const float* a, const float* b, float wb, float* out, int64_t n) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto w = hn::Set(df, wb);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto va = hn::LoadU(df, a + i);
    hn::StoreU(hn::MulAdd(w, hn::Sub(hn::LoadU(df, b + i), va), va), df, out + i);
  }
  for (; i < n; ++i) out[i] = a[i] + wb * (b[i] - a[i]);
}

#if HWY_TARGET != HWY_SCALAR
// Four outputs' 32-bit partial sums (pair sums, or float products), output i's four in each
// 128-bit block of p_i, reduced to block-wise totals: lane i of each block is the sum of p_i's
// lanes in that block.
template <class D32, class V32>
HWY_INLINE V32 block_totals(D32 d32, V32 p0, V32 p1, V32 p2, V32 p3) {
  const hn::Repartition<int64_t, D32> d64;
  const auto s01 = hn::Add(hn::InterleaveLower(d32, p0, p1), hn::InterleaveUpper(d32, p0, p1));
  const auto s23 = hn::Add(hn::InterleaveLower(d32, p2, p3), hn::InterleaveUpper(d32, p2, p3));
  const auto lo = hn::InterleaveLower(d64, hn::BitCast(d64, s01), hn::BitCast(d64, s23));
  const auto hi = hn::InterleaveUpper(d64, hn::BitCast(d64, s01), hn::BitCast(d64, s23));
  return hn::Add(hn::BitCast(d32, lo), hn::BitCast(d32, hi));
}
#endif

// Each output's eight inputs times its eight weights in one or two vectors, four outputs'
// products reduced together (block_totals): no gathers (eight of them a vector of outputs were
// a quarter of a 4K -> 640x640 float area downscale) and no horizontal sum per output.
void ResampleWindow(const float* HWY_RESTRICT in, const int32_t* HWY_RESTRICT start, const float* HWY_RESTRICT window,
                    float* HWY_RESTRICT out, int64_t n) {
  int64_t o = 0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  {
    // Two blocks: an output's first four products in block 0, its last four in block 1.
    const hn::FixedTag<float, 8> d;
    const auto products = [&](int64_t k) { return hn::Mul(hn::LoadU(d, in + start[k]), hn::LoadU(d, window + 8 * k)); };
    for (; o + 8 <= n; o += 8) {
      // Block j of each totals vector: lane i is output o + i's (or o + 4 + i's) block j.
      const auto a = block_totals(d, products(o), products(o + 1), products(o + 2), products(o + 3));
      const auto b = block_totals(d, products(o + 4), products(o + 5), products(o + 6), products(o + 7));
      hn::StoreU(hn::Add(hn::ConcatLowerLower(d, b, a), hn::ConcatUpperUpper(d, b, a)), d, out + o);
    }
  }
#endif
#if HWY_TARGET != HWY_SCALAR
  const hn::CappedTag<float, 4> d;  // one block (on SVE, blocks are the whole vector)
  if (hn::Lanes(d) == 4) {
    const auto products = [&](int64_t k) {
      const float* at = in + start[k];
      const float* w = window + 8 * k;
      return hn::MulAdd(hn::LoadU(d, at + 4), hn::LoadU(d, w + 4), hn::Mul(hn::LoadU(d, at), hn::LoadU(d, w)));
    };
    for (; o + 4 <= n; o += 4) {
      hn::StoreU(block_totals(d, products(o), products(o + 1), products(o + 2), products(o + 3)), d, out + o);
    }
  }
#endif
  for (; o < n; ++o) {
    float sum = 0.0f;
    for (int k = 0; k < 8; ++k) sum += window[8 * o + k] * in[start[o] + k];
    out[o] = sum;
  }
}

void Accumulate(const float* HWY_RESTRICT in, float w, float* HWY_RESTRICT out, int64_t n, bool first) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vw = hn::Set(df, w);
  int64_t i = 0;
  if (first) {
    for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(vw, hn::LoadU(df, in + i)), df, out + i);
    for (; i < n; ++i) out[i] = w * in[i];
    return;
  }
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::MulAdd(vw, hn::LoadU(df, in + i), hn::LoadU(df, out + i)), df, out + i);
  }
  for (; i < n; ++i) out[i] += w * in[i];
}

void SemiPlanarToRgb(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT uv, bool vu, int64_t n,
                     const ColorCoeffs& c, float* HWY_RESTRICT r, float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  const DF df;
  [[maybe_unused]] const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  // Lane i of the chroma load is byte i of the UV row: even lanes U, odd lanes V of the pair
  // that pixels i & ~1 and i | 1 share, so duplicating evens and odds gives per-pixel U and V.
  for (; i + lanes <= n; i += lanes) {
    const auto vy = load_u8_as_f32(df, y + i);
    const auto vc = load_u8_as_f32(df, uv + i);
    const auto first = hn::DupEven(vc);
    const auto second = hn::DupOdd(vc);
    yuv_vector(df, vy, vu ? second : first, vu ? first : second, c, r + i, g + i, b + i);
  }
#endif
  for (; i < n; ++i) {
    const uint8_t* pair = uv + (i & ~int64_t{1});
    yuv_scalar(y[i], pair[vu ? 1 : 0], pair[vu ? 0 : 1], c, r + i, g + i, b + i);
  }
}

// The pairs kernels (downscales by 2 or more of YUV lines, a row in one pass) take each line's
// pixel bytes from semi-planar lines, where pixels 2i and 2i + 1 share chroma pair i, or from
// picked per-pixel Y, U and V rows. One pixel's bytes, for the scalar ends of rows:
struct SemiPlanarPixels {
  const uint8_t* y[2];
  const uint8_t* uv[2];
  bool vu;
  void operator()(int l, int64_t p, int* yy, int* u, int* v) const {
    const uint8_t* pair = uv[l] + (p & ~int64_t{1});
    *yy = y[l][p], *u = pair[vu ? 1 : 0], *v = pair[vu ? 0 : 1];
  }
};
struct PickedPixels {
  const uint8_t* const* yuv[2];
  void operator()(int l, int64_t p, int* yy, int* u, int* v) const {
    *yy = yuv[l][0][p], *u = yuv[l][1][p], *v = yuv[l][2][p];
  }
};
// Packed 4:2:2 lines; pos: a macropixel's Y0, U, Y1 and V byte offsets.
struct PackedPixels {
  const uint8_t* row[2];
  const int* pos;
  void operator()(int l, int64_t p, int* yy, int* u, int* v) const {
    const uint8_t* macro = row[l] + 4 * (p >> 1);
    *yy = macro[pos[(p & 1) ? 2 : 0]], *u = macro[pos[1]], *v = macro[pos[3]];
  }
};

// The float pairs kernels' outputs [i, n), pixel by pixel: decoded as yuv_scalar, the lines
// blended by wv, then each output's pair by weight[i] (the float path's order).
template <class Pixels>
void PairsTail(const Pixels& pixels, int64_t i, int64_t n, const float* HWY_RESTRICT weight, float wv,
               const ColorCoeffs& c, float* HWY_RESTRICT r, float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  for (; i < n; ++i) {
    float q[2][2][3];  // line, pixel, channel
    for (int l = 0; l < 2; ++l) {
      for (int k = 0; k < 2; ++k) {
        int y, u, v;
        pixels(l, 2 * i + k, &y, &u, &v);
        yuv_scalar(static_cast<float>(y), static_cast<float>(u), static_cast<float>(v), c, &q[l][k][0], &q[l][k][1],
                   &q[l][k][2]);
      }
    }
    float* const out[3] = {r + i, g + i, b + i};
    for (int j = 0; j < 3; ++j) {
      const float m0 = q[0][0][j] + wv * (q[1][0][j] - q[0][0][j]);
      const float m1 = q[0][1][j] + wv * (q[1][1][j] - q[0][1][j]);
      *out[j] = m0 + weight[i] * (m1 - m0);
    }
  }
}

#if HWY_TARGET != HWY_SCALAR  // one lane has no byte pairs
// Bytes 2i and 2i + 1 of `p`, for the vector's outputs i, as floats.
HWY_INLINE void byte_pairs(DF df, const uint8_t* HWY_RESTRICT p, hn::Vec<DF>& even, hn::Vec<DF>& odd) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> d16;
  const auto w = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p)));
  even = hn::ConvertTo(df, hn::BitCast(di, hn::And(w, hn::Set(du, 0xFFu))));
  odd = hn::ConvertTo(df, hn::BitCast(di, hn::ShiftRight<8>(w)));
}

// The float pairs kernels' vectors: decode(l, i, ...) gives line l's even and odd pixels' R, G
// and B for outputs i..; the lines are blended by wv (as Blend2), then each pair by its weight
// (as ResamplePairs). Returns where the vectors stopped.
template <class Decode>
int64_t PairVectors(const Decode& decode, const float* HWY_RESTRICT weight, float wv, int64_t n, float* HWY_RESTRICT r,
                    float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vw = hn::Set(df, wv);
  const auto blend = [&](hn::Vec<DF> a0, hn::Vec<DF> a1, hn::Vec<DF> b0, hn::Vec<DF> b1, hn::Vec<DF> w) {
    const auto m0 = hn::MulAdd(vw, hn::Sub(b0, a0), a0);
    const auto m1 = hn::MulAdd(vw, hn::Sub(b1, a1), a1);
    return hn::MulAdd(w, hn::Sub(m1, m0), m0);
  };
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<DF> ra0, ga0, ba0, ra1, ga1, ba1, rb0, gb0, bb0, rb1, gb1, bb1;
    decode(0, i, ra0, ga0, ba0, ra1, ga1, ba1);
    decode(1, i, rb0, gb0, bb0, rb1, gb1, bb1);
    const auto w = hn::LoadU(df, weight + i);
    hn::StoreU(blend(ra0, ra1, rb0, rb1, w), df, r + i);
    hn::StoreU(blend(ga0, ga1, gb0, gb1, w), df, g + i);
    hn::StoreU(blend(ba0, ba1, bb0, bb1, w), df, b + i);
  }
  return i;
}
#endif

// The float path's 2:1 downscale of semi-planar lines with halved chroma: pixels 2i and 2i + 1
// of each line (sharing chroma pair i) decoded as SemiPlanarToRgb does, blended in registers.
void SemiPlanarPairs(const uint8_t* HWY_RESTRICT ya, const uint8_t* HWY_RESTRICT uva, const uint8_t* HWY_RESTRICT yb,
                     const uint8_t* HWY_RESTRICT uvb, bool vu, const float* HWY_RESTRICT weight, float wv, int64_t n,
                     const ColorCoeffs& c, float* HWY_RESTRICT r, float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  const ColorCoeffs coeffs = c;
  const SemiPlanarPixels pixels{{ya, yb}, {uva, uvb}, vu};
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const auto decode = [&](int l, int64_t at, hn::Vec<DF>& r0, hn::Vec<DF>& g0, hn::Vec<DF>& b0, hn::Vec<DF>& r1,
                          hn::Vec<DF>& g1, hn::Vec<DF>& b1) {
    hn::Vec<DF> y0, y1, first, second;
    byte_pairs(df, pixels.y[l] + 2 * at, y0, y1);
    byte_pairs(df, pixels.uv[l] + 2 * at, first, second);
    const auto u = vu ? second : first;
    const auto v = vu ? first : second;
    yuv_clamped(df, y0, u, v, coeffs, r0, g0, b0);
    yuv_clamped(df, y1, u, v, coeffs, r1, g1, b1);
  };
  i = PairVectors(decode, weight, wv, n, r, g, b);
#endif
  PairsTail(pixels, i, n, weight, wv, coeffs, r, g, b);
}

// SemiPlanarPairs from picked per-pixel bytes, each pixel with its own chroma (a downscale by
// more than 2).
void YuvPairs(const uint8_t* const* HWY_RESTRICT a, const uint8_t* const* HWY_RESTRICT b,
              const float* HWY_RESTRICT weight, float wv, int64_t n, const ColorCoeffs& c, float* HWY_RESTRICT r,
              float* HWY_RESTRICT g, float* HWY_RESTRICT bl) {
  const ColorCoeffs coeffs = c;
  const PickedPixels pixels{{a, b}};
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const auto decode = [&](int l, int64_t at, hn::Vec<DF>& r0, hn::Vec<DF>& g0, hn::Vec<DF>& b0, hn::Vec<DF>& r1,
                          hn::Vec<DF>& g1, hn::Vec<DF>& b1) {
    hn::Vec<DF> y0, y1, u0, u1, v0, v1;
    byte_pairs(df, pixels.yuv[l][0] + 2 * at, y0, y1);
    byte_pairs(df, pixels.yuv[l][1] + 2 * at, u0, u1);
    byte_pairs(df, pixels.yuv[l][2] + 2 * at, v0, v1);
    yuv_clamped(df, y0, u0, v0, coeffs, r0, g0, b0);
    yuv_clamped(df, y1, u1, v1, coeffs, r1, g1, b1);
  };
  i = PairVectors(decode, weight, wv, n, r, g, bl);
#endif
  PairsTail(pixels, i, n, weight, wv, coeffs, r, g, bl);
}

// SemiPlanarPairs of packed 4:2:2 lines (YUYV, UYVY, VYUY): output i is macropixel i, its two
// pixels and their chroma in one 32-bit lane, so the bytes need no split or picks.
void Packed422Pairs(const uint8_t* HWY_RESTRICT a, const uint8_t* HWY_RESTRICT b, const int* pos,
                    const float* HWY_RESTRICT weight, float wv, int64_t n, const ColorCoeffs& c, float* HWY_RESTRICT r,
                    float* HWY_RESTRICT g, float* HWY_RESTRICT bl) {
  const ColorCoeffs coeffs = c;
  const PackedPixels pixels{{a, b}, pos};
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const int y0s = 8 * pos[0], us = 8 * pos[1], y1s = 8 * pos[2], vs = 8 * pos[3];
  const auto decode = [&](int l, int64_t at, hn::Vec<DF>& r0, hn::Vec<DF>& g0, hn::Vec<DF>& b0, hn::Vec<DF>& r1,
                          hn::Vec<DF>& g1, hn::Vec<DF>& b1) {
    const auto m = hn::LoadU(du, reinterpret_cast<const uint32_t*>(pixels.row[l] + 4 * at));
    const auto byte = [&](int shift) {
      return hn::ConvertTo(df, hn::BitCast(di, hn::And(hn::ShiftRightSame(m, shift), hn::Set(du, 0xFFu))));
    };
    const auto u = byte(us), v = byte(vs);
    yuv_clamped(df, byte(y0s), u, v, coeffs, r0, g0, b0);
    yuv_clamped(df, byte(y1s), u, v, coeffs, r1, g1, b1);
  };
  i = PairVectors(decode, weight, wv, n, r, g, bl);
#endif
  PairsTail(pixels, i, n, weight, wv, coeffs, r, g, bl);
}

// f32 -> f16 rounded to nearest even, in registers for lanes whose half is normal (2^-14 <=
// |x| < 65536, where the f32 bits map onto the f16 ones by one rounding add and a rebias);
// a vector holding any other lane (zero, subnormal, overflow, NaN) goes through the scalar
// conversion. Highway's own demotion truncates on targets without F16C. One vector of floats
// as IEEE halves at `out`, as half_from_float rounds them.
HWY_INLINE void StoreHalves(DF df, hn::Vec<DF> v, uint16_t* HWY_RESTRICT out) {
#if (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && !defined(HWY_DISABLE_F16C)
  // F16C's vcvtps2ph, rounding to nearest even by its immediate: one instruction per vector
  // where the path below spends a dozen (it was 28% of the cold f16 job).
  const hn::Rebind<hwy::float16_t, DF> dh;
  hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(out));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> d16;
  const auto bits = hn::BitCast(du, v);
  const auto abs = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto signed_abs = hn::BitCast(di, abs);  // below 2^31: compares as signed
  if (!hn::AllTrue(di, hn::And(hn::Not(hn::Lt(signed_abs, hn::Set(di, 0x38800000))),
                               hn::Lt(signed_abs, hn::Set(di, 0x47800000))))) {
    // Subnormal, zero, too large or not a number somewhere: lane by lane.
    HWY_ALIGN float lanes[hn::MaxLanes(df)];
    hn::Store(v, df, lanes);
    for (std::size_t k = 0; k < hn::Lanes(df); ++k) out[k] = half_from_float(lanes[k]);
    return;
  }
  const auto one = hn::Set(du, 1u);
  const auto rounded = hn::Add(abs, hn::Add(hn::Set(du, 0xFFFu), hn::And(hn::ShiftRight<13>(abs), one)));
  const auto half = hn::Or(hn::Sub(hn::ShiftRight<13>(rounded), hn::Set(du, 112u << 10)),
                           hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u)));
  hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, half)), d16, out);
#endif
}

// Normalised outputs of per-pixel Y, U and V rows: clamp, then scale and bias (affine: R, G, B
// scales, then biases); stored as floats or as halves.
HWY_INLINE void StoreNormalised(DF df, hn::Vec<DF> v, float* HWY_RESTRICT out) {
  hn::StoreU(v, df, out);
}
HWY_INLINE void StoreNormalised(DF df, hn::Vec<DF> v, uint16_t* HWY_RESTRICT out) {
  StoreHalves(df, v, out);
}
inline float normalised_scalar(float v, float*) {
  return v;
}
inline uint16_t normalised_scalar(float v, uint16_t*) {
  return half_from_float(v);
}

// Each normalised output is clamp(R) * scale + bias, where R is y, u and v times the decode's
// factors plus a constant: so y, u and v times those factors scaled, plus a constant scaled and
// biased, clamped to where 0 and 255 go (two or three multiply-adds a channel, not five).
struct NormalisedFactors {
  float ky[3], ku[3], kv[3], k0[3], lo[3], hi[3];
  NormalisedFactors(const ColorCoeffs& c, const float* affine) {
    const float cu[3] = {0.0f, -c.gu, c.bu}, cv[3] = {c.rv, -c.gv, 0.0f};
    for (int ch = 0; ch < 3; ++ch) {
      const float s = affine[ch], t = affine[3 + ch];
      ky[ch] = c.y_scale * s, ku[ch] = cu[ch] * s, kv[ch] = cv[ch] * s;
      k0[ch] = (-c.y_offset * c.y_scale - 128.0f * (cu[ch] + cv[ch])) * s + t;
      lo[ch] = std::min(t, 255.0f * s + t), hi[ch] = std::max(t, 255.0f * s + t);
    }
  }
  template <class D, class V>
  HWY_INLINE V channel(D d, int ch, V y, V u, V v) const {
    auto x = hn::MulAdd(y, hn::Set(d, ky[ch]), hn::Set(d, k0[ch]));
    if (ch != 0) x = hn::MulAdd(u, hn::Set(d, ku[ch]), x);
    if (ch != 2) x = hn::MulAdd(v, hn::Set(d, kv[ch]), x);
    return hn::Min(hn::Max(x, hn::Set(d, lo[ch])), hn::Set(d, hi[ch]));
  }
  // The three channels of y, u, v stored at r, g and b.
  template <class D, typename T>
  HWY_INLINE void store(D d, hn::Vec<D> y, hn::Vec<D> u, hn::Vec<D> v, T* r, T* g, T* b) const {
    StoreNormalised(d, channel(d, 0, y, u, v), r);
    StoreNormalised(d, channel(d, 1, y, u, v), g);
    StoreNormalised(d, channel(d, 2, y, u, v), b);
  }
  float channel(int ch, uint8_t y, uint8_t u, uint8_t v) const {
    float x = std::fma(static_cast<float>(y), ky[ch], k0[ch]);
    if (ch != 0) x = std::fma(static_cast<float>(u), ku[ch], x);
    if (ch != 2) x = std::fma(static_cast<float>(v), kv[ch], x);
    return std::min(std::max(x, lo[ch]), hi[ch]);
  }
};

template <typename T>
HWY_INLINE void PlanarYuvNormalised(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u,
                                    const uint8_t* HWY_RESTRICT v, int64_t n, const ColorCoeffs& c, const float* affine,
                                    T* HWY_RESTRICT r, T* HWY_RESTRICT g, T* HWY_RESTRICT b) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const NormalisedFactors f(c, affine);
  T* const out[3] = {r, g, b};
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    f.store(df, load_u8_as_f32(df, y + i), load_u8_as_f32(df, u + i), load_u8_as_f32(df, v + i), r + i, g + i, b + i);
  }
  for (; i < n; ++i) {
    for (int ch = 0; ch < 3; ++ch) out[ch][i] = normalised_scalar(f.channel(ch, y[i], u[i], v[i]), out[ch]);
  }
}

void PlanarYuvToRgb(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u, const uint8_t* HWY_RESTRICT v,
                    int64_t n, const ColorCoeffs& c, float* HWY_RESTRICT r, float* HWY_RESTRICT g,
                    float* HWY_RESTRICT b, const float* affine) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  if (affine == nullptr) {
    for (; i + lanes <= n; i += lanes) {
      yuv_vector(df, load_u8_as_f32(df, y + i), load_u8_as_f32(df, u + i), load_u8_as_f32(df, v + i), c, r + i, g + i,
                 b + i);
    }
    for (; i < n; ++i) yuv_scalar(y[i], u[i], v[i], c, r + i, g + i, b + i);
    return;
  }
  PlanarYuvNormalised(y, u, v, n, c, affine, r, g, b);
}

// PlanarYuvToRgb then Accumulate of each channel, the decoded values kept in registers (a float
// area downscale sums every decoded source line into its output row).
void YuvToRgbAccumulate(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u, const uint8_t* HWY_RESTRICT v,
                        int64_t n, const ColorCoeffs& c, float w, float* HWY_RESTRICT r, float* HWY_RESTRICT g,
                        float* HWY_RESTRICT b, bool first) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const ColorCoeffs coeffs = c;
  const auto vw = hn::Set(df, w);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<DF> rr, gg, bl;
    yuv_clamped(df, load_u8_as_f32(df, y + i), load_u8_as_f32(df, u + i), load_u8_as_f32(df, v + i), coeffs, rr, gg,
                bl);
    if (first) {
      rr = hn::Mul(vw, rr), gg = hn::Mul(vw, gg), bl = hn::Mul(vw, bl);
    } else {
      rr = hn::MulAdd(vw, rr, hn::LoadU(df, r + i)), gg = hn::MulAdd(vw, gg, hn::LoadU(df, g + i));
      bl = hn::MulAdd(vw, bl, hn::LoadU(df, b + i));
    }
    hn::StoreU(rr, df, r + i);
    hn::StoreU(gg, df, g + i);
    hn::StoreU(bl, df, b + i);
  }
  for (; i < n; ++i) {
    float rgb[3];
    yuv_scalar(y[i], u[i], v[i], coeffs, rgb, rgb + 1, rgb + 2);
    float* const out[3] = {r + i, g + i, b + i};
    for (int j = 0; j < 3; ++j) *out[j] = first ? w * rgb[j] : *out[j] + w * rgb[j];
  }
}

// PlanarYuvToRgb's normalised outputs as IEEE halves: the f16 rows straight from the picked
// bytes, no float row between.
void PlanarYuvToHalf(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u, const uint8_t* HWY_RESTRICT v,
                     int64_t n, const ColorCoeffs& c, uint16_t* HWY_RESTRICT r, uint16_t* HWY_RESTRICT g,
                     uint16_t* HWY_RESTRICT b, const float* affine) {
  PlanarYuvNormalised(y, u, v, n, c, affine, r, g, b);
}

void SemiPlanar444ToRgb(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT uv, int64_t n, const ColorCoeffs& c,
                        float* HWY_RESTRICT r, float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  const DF df;
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    // Little-endian: the low byte of each 16-bit pair is U.
    const auto pairs = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(uv + 2 * i)));
    const auto u = hn::ConvertTo(df, hn::BitCast(di, hn::And(pairs, hn::Set(du, 0xFFu))));
    const auto v = hn::ConvertTo(df, hn::BitCast(di, hn::ShiftRight<8>(pairs)));
    yuv_vector(df, load_u8_as_f32(df, y + i), u, v, c, r + i, g + i, b + i);
  }
  for (; i < n; ++i) yuv_scalar(y[i], uv[2 * i], uv[2 * i + 1], c, r + i, g + i, b + i);
}

void Packed422ToRgb(const uint8_t* HWY_RESTRICT p, int order, int64_t n, const ColorCoeffs& c, float* HWY_RESTRICT r,
                    float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  // Byte positions within a 4-byte macropixel: Y0, U, Y1, V.
  static constexpr int kPos[3][4] = {{0, 1, 2, 3}, {1, 0, 3, 2}, {1, 2, 3, 0}};
  const int* pos = kPos[order];
  const DF df;
  [[maybe_unused]] const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const bool y_low = pos[0] == 0;
  const bool u_even = order != 2;
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<DF> low, high;
    byte_pairs(df, p + 2 * i, low, high);
    const auto chroma = y_low ? high : low;
    const auto even = hn::DupEven(chroma);
    const auto odd = hn::DupOdd(chroma);
    yuv_vector(df, y_low ? low : high, u_even ? even : odd, u_even ? odd : even, c, r + i, g + i, b + i);
  }
#endif
  for (; i < n; ++i) {
    const uint8_t* macro = p + 4 * (i >> 1);
    yuv_scalar(macro[pos[(i & 1) ? 2 : 0]], macro[pos[1]], macro[pos[3]], c, r + i, g + i, b + i);
  }
}

// Nearest sampling along a row: one 4-byte vector gather per plane and sample, luma at its
// index and the chroma pair at the even index below it (the bytes after ride along unused).
// A chunk holding an index above `limit` (whose 4 bytes would run past the row) goes scalar.
void SampledSemiPlanarToRgb(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT uv, bool vu,
                            const int32_t* HWY_RESTRICT index, int64_t n, [[maybe_unused]] int32_t limit,
                            const ColorCoeffs& c, float* HWY_RESTRICT r, float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  const auto scalar = [&](int64_t from, int64_t to) {
    for (int64_t i = from; i < to; ++i) {
      const uint8_t* pair = uv + (index[i] & ~1);
      yuv_scalar(y[index[i]], pair[vu ? 1 : 0], pair[vu ? 0 : 1], c, r + i, g + i, b + i);
    }
  };
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const hn::RebindToSigned<DF> di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto* y32 = reinterpret_cast<const int32_t*>(y);
  const auto* uv32 = reinterpret_cast<const int32_t*>(uv);
  const auto low = hn::Set(di, 0xFF);
  const auto even = hn::Set(di, ~1);
  const auto top = hn::Set(di, limit);
  for (; i + lanes <= n; i += lanes) {
    const auto at = hn::LoadU(di, index + i);
    if (!hn::AllFalse(di, hn::Gt(at, top))) {
      scalar(i, i + lanes);
      continue;
    }
    const auto luma = hn::ConvertTo(df, hn::And(hn::GatherOffset(di, y32, at), low));
    const auto pair = hn::GatherOffset(di, uv32, hn::And(at, even));
    const auto first = hn::ConvertTo(df, hn::And(pair, low));
    const auto second = hn::ConvertTo(df, hn::And(hn::ShiftRight<8>(pair), low));
    yuv_vector(df, luma, vu ? second : first, vu ? first : second, c, r + i, g + i, b + i);
  }
#endif
  scalar(i, n);
}

// As above for packed 4:2:2: one gather of the 4-byte macropixel holding each sample.
void SampledPacked422ToRgb(const uint8_t* HWY_RESTRICT p, int order, const int32_t* HWY_RESTRICT index, int64_t n,
                           const ColorCoeffs& c, float* HWY_RESTRICT r, float* HWY_RESTRICT g, float* HWY_RESTRICT b) {
  // Byte positions within a 4-byte macropixel: Y0, U, Y1, V (Y1 is always Y0 + 2).
  static constexpr int kPos[3][4] = {{0, 1, 2, 3}, {1, 0, 3, 2}, {1, 2, 3, 0}};
  const int* pos = kPos[order];
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::RebindToUnsigned<DF> du;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto* p32 = reinterpret_cast<const int32_t*>(p);
  const auto low = hn::Set(du, 0xFFu);
  const auto one = hn::Set(du, 1u);
  const auto y0_shift = hn::Set(du, static_cast<uint32_t>(8 * pos[0]));
  const auto to_float = [&](auto v) { return hn::ConvertTo(df, hn::BitCast(di, hn::And(v, low))); };
  for (; i + lanes <= n; i += lanes) {
    const auto at = hn::BitCast(du, hn::LoadU(di, index + i));
    const auto macro = hn::ShiftLeft<1>(hn::AndNot(one, at));
    const auto px = hn::BitCast(du, hn::GatherOffset(di, p32, hn::BitCast(di, macro)));
    const auto luma = hn::Shr(px, hn::Add(y0_shift, hn::ShiftLeft<4>(hn::And(at, one))));
    yuv_vector(df, to_float(luma), to_float(hn::ShiftRightSame(px, 8 * pos[1])),
               to_float(hn::ShiftRightSame(px, 8 * pos[3])), c, r + i, g + i, b + i);
  }
#endif
  for (; i < n; ++i) {
    const uint8_t* macro = p + 4 * (index[i] >> 1);
    yuv_scalar(macro[pos[(index[i] & 1) ? 2 : 0]], macro[pos[1]], macro[pos[3]], c, r + i, g + i, b + i);
  }
}

// The 16 slots of one stream of one chunk (see ShuffleStream), from W windows.
template <int W>
HWY_INLINE void pick(const uint8_t* HWY_RESTRICT from, const uint8_t* HWY_RESTRICT control, uint8_t* HWY_RESTRICT out) {
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<uint8_t> d8;
  auto v = hn::TableLookupBytesOr0(hn::LoadU(d8, from), hn::LoadU(d8, control));
  for (int w = 1; w < W; ++w) {
    v = hn::Or(v, hn::TableLookupBytesOr0(hn::LoadU(d8, from + 16 * w), hn::LoadU(d8, control + 16 * w)));
  }
  hn::Store(v, d8, out);
#else
  std::memset(out, 0, 16);
  for (int w = 0; w < W; ++w) {
    for (int slot = 0; slot < 16; ++slot) {
      const uint8_t at = control[16 * w + slot];
      if (at < 16) out[slot] = from[16 * w + at];
    }
  }
#endif
}

HWY_INLINE void pick(const uint8_t* HWY_RESTRICT from, const uint8_t* HWY_RESTRICT control, int windows,
                     uint8_t* HWY_RESTRICT out) {
  switch (windows) {
    case 1: return pick<1>(from, control, out);
    case 2: return pick<2>(from, control, out);
    case 3: return pick<3>(from, control, out);
    default: return pick<4>(from, control, out);
  }
}

void BytesToRgb(const uint8_t* HWY_RESTRICT p, int channels, const int* offsets, int64_t n, float* HWY_RESTRICT r,
                float* HWY_RESTRICT g, float* HWY_RESTRICT b, float* HWY_RESTRICT a) {
  const int ro = offsets[0], go = offsets[1], bo = offsets[2];
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* px = p + i * channels;
    r[i] = px[ro];
    g[i] = px[go];
    b[i] = px[bo];
  }
  if (a != nullptr) {
    for (int64_t i = 0; i < n; ++i) a[i] = p[i * channels + offsets[3]];
  }
}

void StoreF32(const float* HWY_RESTRICT in, float scale, float bias, float* HWY_RESTRICT out, int64_t n, bool stream) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vs = hn::Set(df, scale);
  const auto vb = hn::Set(df, bias);
  int64_t i = 0;
  if (stream) {
    for (; i < n && !vector_aligned(out + i, lanes); ++i) out[i] = in[i] * scale + bias;
    for (; i + lanes <= n; i += lanes) hn::Stream(hn::MulAdd(hn::LoadU(df, in + i), vs, vb), df, out + i);
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::MulAdd(hn::LoadU(df, in + i), vs, vb), df, out + i);
  for (; i < n; ++i) out[i] = in[i] * scale + bias;
}

void StoreF16(const float* HWY_RESTRICT in, float scale, float bias, uint16_t* HWY_RESTRICT out, int64_t n) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vs = hn::Set(df, scale);
  const auto vb = hn::Set(df, bias);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) StoreHalves(df, hn::MulAdd(hn::LoadU(df, in + i), vs, vb), out + i);
  for (; i < n; ++i) out[i] = half_from_float(in[i] * scale + bias);
}

void StreamCopy(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, int64_t n) {
  const hn::ScalableTag<uint8_t> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d8));
  int64_t i = 0;
  for (; i < n && !vector_aligned(out + i, lanes); ++i) out[i] = in[i];
  for (; i + lanes <= n; i += lanes) hn::Stream(hn::LoadU(d8, in + i), d8, out + i);
  for (; i < n; ++i) out[i] = in[i];
}

template <typename T>
void FillLanes(T* HWY_RESTRICT out, T value, int64_t count) {
  const hn::ScalableTag<T> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto v = hn::Set(d, value);
  int64_t i = 0;
  for (; i + lanes <= count; i += lanes) hn::StoreU(v, d, out + i);
  for (; i < count; ++i) out[i] = value;
}

void FillRepeated(void* out, uint32_t value, int size, int64_t count) {
  if (size == 1) return FillLanes(static_cast<uint8_t*>(out), static_cast<uint8_t>(value), count);
  if (reinterpret_cast<uintptr_t>(out) % static_cast<uintptr_t>(size) != 0) {  // no element type fits
    for (int64_t i = 0; i < count; ++i) std::memcpy(static_cast<uint8_t*>(out) + i * size, &value, size);
    return;
  }
  if (size == 2) return FillLanes(static_cast<uint16_t*>(out), static_cast<uint16_t>(value), count);
  FillLanes(static_cast<uint32_t*>(out), value, count);
}

// Adding 1.5 * 2^23 to a value in [0, 255] rounds it to the nearest integer (ties to even, as
// lrintf) into the low mantissa bits; less the constant's own bits, that is the integer. An
// add, a subtract and a byte pick instead of NearestInt's overflow fix-ups and a two-step
// saturating demotion.
HWY_INLINE auto to_u8(DF df, const float* in) {
  const hn::RebindToUnsigned<DF> du;
  const auto magic = hn::Set(df, 12582912.0f);
  const auto clamped = hn::Min(hn::Max(hn::LoadU(df, in), hn::Zero(df)), hn::Set(df, 255.0f));
  return hn::U8FromU32(hn::Sub(hn::BitCast(du, hn::Add(clamped, magic)), hn::BitCast(du, magic)));
}

inline uint8_t to_u8_scalar(float v, int bias) {
  return static_cast<uint8_t>(static_cast<int>(std::lrintf(clamp255(v))) ^ (bias != 0 ? 0x80 : 0));
}

void Store8Bit(const float* HWY_RESTRICT in, int bias, uint8_t* HWY_RESTRICT out, int64_t n) {
  const DF df;
  const hn::Rebind<uint8_t, DF> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  // x - 128 in two's complement is x with its top bit flipped.
  const auto flip = hn::Set(d8, static_cast<uint8_t>(bias != 0 ? 0x80 : 0));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Xor(to_u8(df, in + i), flip), d8, out + i);
  for (; i < n; ++i) out[i] = to_u8_scalar(in[i], bias);
}

// Two passes, both at full vector width: each channel to a planar byte row (`staging`, 4 *
// n bytes), then 16 pixels at a time interleaved with full 128-bit vectors. Interleaving
// straight from the float rows would use partial vectors, several times slower on x86.
void Store8BitInterleaved(const float* const* in, int channels, int bias, uint8_t* HWY_RESTRICT staging,
                          uint8_t* HWY_RESTRICT out, int64_t n) {
  for (int ch = 0; ch < channels; ++ch) Store8Bit(in[ch], bias, staging + ch * n, n);
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<uint8_t> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d8));
  const uint8_t* r = staging;
  const uint8_t* g = staging + n;
  const uint8_t* b = staging + 2 * n;
  const uint8_t* a = staging + 3 * n;
  if (channels == 3) {
    for (; i + lanes <= n; i += lanes) {
      hn::StoreInterleaved3(hn::LoadU(d8, r + i), hn::LoadU(d8, g + i), hn::LoadU(d8, b + i), d8, out + 3 * i);
    }
  } else if (channels == 4) {
    for (; i + lanes <= n; i += lanes) {
      hn::StoreInterleaved4(hn::LoadU(d8, r + i), hn::LoadU(d8, g + i), hn::LoadU(d8, b + i), hn::LoadU(d8, a + i), d8,
                            out + 4 * i);
    }
  }
#endif
  for (; i < n; ++i) {
    for (int ch = 0; ch < channels; ++ch) out[i * channels + ch] = staging[ch * n + i];
  }
}

// ---- Integer path (Q6 int16) ----

using D16 = hn::ScalableTag<int16_t>;

inline int16_t mulhigh_scalar(int32_t a, int32_t b) {
  return static_cast<int16_t>((a * b) >> 16);  // arithmetic shift, as the vector MulHigh
}

inline int16_t clamp_q6(int32_t v) {
  return static_cast<int16_t>(std::min(std::max(v, 0), 255 * 64));
}

inline void yuv_q6_scalar(int32_t y, int32_t u, int32_t v, const FixedCoeffs& c, int16_t* r, int16_t* g, int16_t* b) {
  const int32_t yl = static_cast<int32_t>((static_cast<uint32_t>(y * 257) * c.y_mul) >> 16) - c.y_sub;
  const int32_t uc = (u - 128) * 256, vc = (v - 128) * 256;
  *r = clamp_q6(yl + mulhigh_scalar(vc, c.rv));
  *g = clamp_q6(yl - mulhigh_scalar(uc, c.gu) - mulhigh_scalar(vc, c.gv));
  *b = clamp_q6(yl + (u - 128) * 64 + mulhigh_scalar(uc, c.bu_minus_1));
}

// The chroma terms of one pixel's (or several pixels' shared) U and V, 16-bit lanes holding
// the bytes: what yuv_q6_apply adds to each pixel's luma. (Five vectors, not a struct of them:
// SVE vectors are sizeless.)
template <class D, class V>
HWY_INLINE void chroma_q6(D d, V u16, V v16, const FixedCoeffs& c, V& rv, V& gu, V& gv, V& u6, V& bu) {
  const auto k128 = hn::Set(d, 128);
  const auto uc = hn::Sub(u16, k128);
  const auto vc = hn::Sub(v16, k128);
  const auto u8 = hn::ShiftLeft<8>(uc);
  const auto v8 = hn::ShiftLeft<8>(vc);
  rv = hn::MulHigh(v8, hn::Set(d, c.rv));
  gu = hn::MulHigh(u8, hn::Set(d, c.gu));
  gv = hn::MulHigh(v8, hn::Set(d, c.gv));
  u6 = hn::ShiftLeft<6>(uc);
  bu = hn::MulHigh(u8, hn::Set(d, c.bu_minus_1));
}

// Q6 luma of Y bytes in 16-bit lanes.
template <class D, class V>
HWY_INLINE V luma_q6(D d, V y16, const FixedCoeffs& c) {
  const hn::RebindToUnsigned<D> du;
  const auto y = hn::BitCast(du, y16);
  return hn::Sub(hn::BitCast(d, hn::MulHigh(hn::Or(hn::ShiftLeft<8>(y), y), hn::Set(du, c.y_mul))),
                 hn::Set(d, c.y_sub));
}

// Q6 R, G and B of a luma and its chroma terms, clamped. The sums stay within int16 for every
// matrix and range but a few extreme ones (B of full range, where Y + 2.1 U reaches 35000):
// saturating adds clamp those as the final clamp would.
template <class D, class V>
HWY_INLINE void yuv_q6_apply(D d, V yl, V rv, V gu, V gv, V u6, V bu, V& r, V& g, V& b) {
  const auto zero = hn::Zero(d);
  const auto top = hn::Set(d, 255 * 64);
  r = hn::Min(hn::Max(hn::SaturatedAdd(yl, rv), zero), top);
  g = hn::Min(hn::Max(hn::SaturatedSub(hn::SaturatedSub(yl, gu), gv), zero), top);
  b = hn::Min(hn::Max(hn::SaturatedAdd(hn::SaturatedAdd(yl, u6), bu), zero), top);
}

template <class D, class V>
HWY_INLINE void yuv_q6_vector(D d, const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u,
                              const uint8_t* HWY_RESTRICT v, const FixedCoeffs& c, V& r, V& g, V& b) {
  const hn::Rebind<uint8_t, D> d8;
  const auto widen = [&](const uint8_t* p) {
    return hn::BitCast(d, hn::PromoteTo(hn::RebindToUnsigned<D>(), hn::LoadU(d8, p)));
  };
  V rv, gu, gv, u6, bu;
  chroma_q6(d, widen(u), widen(v), c, rv, gu, gv, u6, bu);
  yuv_q6_apply(d, luma_q6(d, widen(y), c), rv, gu, gv, u6, bu, r, g, b);
}

void YuvToRgbQ6(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u, const uint8_t* HWY_RESTRICT v, int64_t n,
                const FixedCoeffs& c, int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT b) {
  const D16 d;
  const FixedCoeffs coeffs = c;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<D16> rr, gg, bb;
    yuv_q6_vector(d, y + i, u + i, v + i, coeffs, rr, gg, bb);
    hn::StoreU(rr, d, r + i);
    hn::StoreU(gg, d, g + i);
    hn::StoreU(bb, d, b + i);
  }
  for (; i < n; ++i) yuv_q6_scalar(y[i], u[i], v[i], coeffs, r + i, g + i, b + i);
}

// yuv_to_rgb_q6 then accumulate_q6 of each channel, the decoded values kept in registers (an
// area downscale sums every decoded source line into its output row).
// The accumulate kernels' last step: Q6 R, G and B weighted by w (Q15), stored at r, g and b
// (first) or added to what is there; vectors, and one pixel.
HWY_INLINE void add_weighted_q6(D16 d, hn::Vec<D16> rr, hn::Vec<D16> gg, hn::Vec<D16> bb, hn::Vec<D16> vw, bool first,
                                int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT b) {
  rr = hn::MulFixedPoint15(rr, vw), gg = hn::MulFixedPoint15(gg, vw), bb = hn::MulFixedPoint15(bb, vw);
  if (!first) rr = hn::Add(rr, hn::LoadU(d, r)), gg = hn::Add(gg, hn::LoadU(d, g)), bb = hn::Add(bb, hn::LoadU(d, b));
  hn::StoreU(rr, d, r);
  hn::StoreU(gg, d, g);
  hn::StoreU(bb, d, b);
}
inline void add_weighted_q6(const int16_t* q, int16_t w, bool first, int16_t* r, int16_t* g, int16_t* b) {
  int16_t* const out[3] = {r, g, b};
  for (int j = 0; j < 3; ++j) {
    const auto weighted = static_cast<int16_t>((q[j] * w + 16384) >> 15);
    *out[j] = static_cast<int16_t>(first ? weighted : *out[j] + weighted);
  }
}

void YuvToRgbQ6Accumulate(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u, const uint8_t* HWY_RESTRICT v,
                          int64_t n, const FixedCoeffs& c, int16_t w, int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g,
                          int16_t* HWY_RESTRICT b, bool first) {
  const D16 d;
  const FixedCoeffs coeffs = c;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vw = hn::Set(d, w);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<D16> rr, gg, bb;
    yuv_q6_vector(d, y + i, u + i, v + i, coeffs, rr, gg, bb);
    add_weighted_q6(d, rr, gg, bb, vw, first, r + i, g + i, b + i);
  }
  for (; i < n; ++i) {
    int16_t q[3];
    yuv_q6_scalar(y[i], u[i], v[i], coeffs, q, q + 1, q + 2);
    add_weighted_q6(q, w, first, r + i, g + i, b + i);
  }
}

// YuvToRgbQ6Accumulate straight from a packed 4:2:2 row (pos: the macropixel's Y0, U, Y1, V
// bytes; Y1 is 2 bytes after Y0): each macropixel a 32-bit lane, so that its two pixels' Y
// are its 16-bit halves' low bytes (shifted by Y0's position) and its U or V, copied into both
// halves, is each pixel's. An area downscale of 4K YUYV spent a third of its time splitting
// the bytes into rows first.
void Packed422ToRgbQ6Accumulate(const uint8_t* HWY_RESTRICT row, const int* pos, int64_t n, const FixedCoeffs& c,
                                int16_t w, int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT b,
                                bool first) {
  const FixedCoeffs coeffs = c;
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR  // one 16-bit lane holds no macropixel
  const D16 d;
  const hn::Repartition<uint32_t, D16> d32;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vw = hn::Set(d, w);
  const auto low = hn::Set(d32, 0xFFu);
  const int ys = 8 * pos[0], us = 8 * pos[1], vs = 8 * pos[3];
  const auto both = [&](hn::Vec<decltype(d32)> v) { return hn::BitCast(d, hn::Or(v, hn::ShiftLeft<16>(v))); };
  for (; i + lanes <= n; i += lanes) {
    const auto m = hn::LoadU(d32, reinterpret_cast<const uint32_t*>(row + 2 * i));
    const auto y16 = hn::BitCast(d, hn::And(hn::ShiftRightSame(m, ys), hn::Set(d32, 0x00FF00FFu)));
    hn::Vec<D16> rv, gu, gv, u6, bu, rr, gg, bb;
    chroma_q6(d, both(hn::And(hn::ShiftRightSame(m, us), low)), both(hn::And(hn::ShiftRightSame(m, vs), low)), coeffs,
              rv, gu, gv, u6, bu);
    yuv_q6_apply(d, luma_q6(d, y16, coeffs), rv, gu, gv, u6, bu, rr, gg, bb);
    add_weighted_q6(d, rr, gg, bb, vw, first, r + i, g + i, b + i);
  }
#endif
  for (; i < n; ++i) {
    const uint8_t* macro = row + 4 * (i >> 1);
    int16_t q[3];
    yuv_q6_scalar(macro[pos[(i & 1) ? 2 : 0]], macro[pos[1]], macro[pos[3]], coeffs, q, q + 1, q + 2);
    add_weighted_q6(q, w, first, r + i, g + i, b + i);
  }
}

// The Q6 pairs kernels' outputs [i, n), pixel by pixel: decoded as yuv_q6_scalar, each line's
// pair blended by weight[i], then the lines by wv (the integer path's order).
template <class Pixels>
void PairsQ6Tail(const Pixels& pixels, int64_t i, int64_t n, const int16_t* HWY_RESTRICT weight, int16_t wv,
                 const FixedCoeffs& c, int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT b) {
  for (; i < n; ++i) {
    int16_t q[2][2][3];  // line, pixel, channel
    for (int l = 0; l < 2; ++l) {
      for (int k = 0; k < 2; ++k) {
        int y, u, v;
        pixels(l, 2 * i + k, &y, &u, &v);
        yuv_q6_scalar(y, u, v, c, &q[l][k][0], &q[l][k][1], &q[l][k][2]);
      }
    }
    int16_t* const out[3] = {r + i, g + i, b + i};
    for (int j = 0; j < 3; ++j) {
      int32_t h[2];
      for (int l = 0; l < 2; ++l) h[l] = q[l][0][j] + (((q[l][1][j] - q[l][0][j]) * weight[i]) >> 15);
      *out[j] = static_cast<int16_t>(h[0] + mulhigh_scalar((h[1] - h[0]) * 2, wv));
    }
  }
}

#if HWY_TARGET != HWY_SCALAR  // one 16-bit lane has no byte pairs
// The pairs kernels decode four source pixels for each output, so most of their work is the
// clamp: yuv_q6_apply's add, Max and Min for each channel (two adds for G and B). They hold
// each channel as its complement instead, 255 * 64 - clamp_q6(v) in unsigned 16-bit lanes,
// which is Min(SaturatedSub(l, q), 255 * 64): l from the luma alone (the pixel's), q from the
// chroma alone (shared by the pixels of a pair or a box), the lower clamp the saturation's.
// Two operations a channel, not three or four; and the blend of two halves is one rounding
// average (ceil((ca + cb) / 2) is the complement of floor((a + b) / 2)), any other blend
// as dear as lerp_q6 was. Exact to yuv_q6_scalar: the values fit the lanes, as below.
constexpr int kTopQ6 = 255 * 64;
// l = kLumaBase - MulHigh(y * 257, y_mul), q = kLumaBase - 255 * 64 - y_sub + the channel's
// term, so l - q = 255 * 64 - (luma + term). MulHigh is at most 19002 (limited range), y_sub
// 1192 and a term within +-17304 (B of BT.709 limited range: 2.112 * 128 * 64), so l stays
// within 21958..40960 and q within 6144..41944 (every code is tested).
constexpr int kLumaBase = 40960;
using DU16 = hn::RebindToUnsigned<D16>;
using VU16 = hn::Vec<DU16>;

// Byte shuffles that put the even (low) or odd (high) byte of each 16-bit lane in both its
// halves: the byte times 257.
alignas(16) constexpr uint8_t kEvenBytes257[16] = {0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14};
alignas(16) constexpr uint8_t kOddBytes257[16] = {1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15};

// Y bytes 2i and 2i + 1 of `p`, each times 257 (the byte in both halves of a 16-bit lane), for
// the vector's outputs i: one byte shuffle each, not a mask or shift, a shift and an Or.
HWY_INLINE void luma_pairs_257(const uint8_t* HWY_RESTRICT p, VU16& even, VU16& odd) {
  const DU16 du;
  const hn::Repartition<uint8_t, DU16> d8;
  const auto bytes = hn::LoadU(d8, p);
  even = hn::BitCast(du, hn::TableLookupBytes(bytes, hn::LoadDup128(d8, kEvenBytes257)));
  odd = hn::BitCast(du, hn::TableLookupBytes(bytes, hn::LoadDup128(d8, kOddBytes257)));
}

// Bytes 2i and 2i + 1 of `p`, for the vector's outputs i, in 16-bit lanes.
HWY_INLINE void byte_pairs_q6(const uint8_t* HWY_RESTRICT p, hn::Vec<D16>& even, hn::Vec<D16>& odd) {
  const D16 d;
  const DU16 du;
  const auto w = hn::LoadU(du, reinterpret_cast<const uint16_t*>(p));
  even = hn::BitCast(d, hn::And(w, hn::Set(du, 0xFF)));
  odd = hn::BitCast(d, hn::ShiftRight<8>(w));
}

// The complements' l of lumas times 257.
HWY_INLINE VU16 luma_c(VU16 y257, const FixedCoeffs& c) {
  const DU16 du;
  return hn::Sub(hn::Set(du, kLumaBase), hn::MulHigh(y257, hn::Set(du, c.y_mul)));
}

// The complements' q of U and V bytes in 16-bit lanes, for R, G and B.
HWY_INLINE void chroma_c(hn::Vec<D16> u16, hn::Vec<D16> v16, const FixedCoeffs& c, VU16& qr, VU16& qg, VU16& qb) {
  const D16 d;
  const DU16 du;
  hn::Vec<D16> rv, gu, gv, u6, bu;
  chroma_q6(d, u16, v16, c, rv, gu, gv, u6, bu);
  const auto base = hn::Set(d, static_cast<int16_t>(kLumaBase - kTopQ6 - c.y_sub));
  qr = hn::BitCast(du, hn::Add(base, rv));
  qg = hn::BitCast(du, hn::Sub(hn::Sub(base, gu), gv));
  qb = hn::BitCast(du, hn::Add(hn::Add(base, u6), bu));
}

HWY_INLINE VU16 channel_c(VU16 l, VU16 q) {
  return hn::Min(hn::SaturatedSub(l, q), hn::Set(DU16(), kTopQ6));
}

// a + (b - a) * w in Q15 (as BlendQ6 and ResamplePairsQ6 do it) of complements: their b - a is
// ca - cb, so the complement of the blend is ca - MulHigh(2 (ca - cb), w). Where every weight
// is 1/2 (`halves`: a bilinear downscale by an even factor, 2:1 or 4K's 6:1, weighs its taps
// and its two lines so), the blend is a + floor(2 (b - a) / 4) = floor((a + b) / 2), whose
// complement is the rounding average of ca and cb.
HWY_INLINE VU16 lerp_c(VU16 ca, VU16 cb, hn::Vec<D16> w, bool halves) {
  const D16 d;
  if (halves) return hn::AverageRound(ca, cb);
  const auto a = hn::BitCast(d, ca);
  return hn::BitCast(DU16(), hn::Sub(a, hn::MulHigh(hn::ShiftLeft<1>(hn::Sub(a, hn::BitCast(d, cb))), w)));
}

// Whether every pair weight and the line weight are 1/2 (lerp_c with `halves` then gives what
// it gives by the weights).
HWY_INLINE bool all_halves(const int16_t* HWY_RESTRICT weight, int16_t wv, int64_t n) {
  if (wv != 16384) return false;
  const D16 d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto half = hn::Set(d, 16384);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    if (!hn::AllTrue(d, hn::Eq(hn::LoadU(d, weight + i), half))) return false;
  }
  return std::all_of(weight + i, weight + n, [](int16_t w) { return w == 16384; });
}

// One line's complements from pixel pairs (lumas times 257 y0, y1) that share the chroma's q
// (chroma_c): both pixels decoded, then blended by w.
HWY_INLINE void decoded_pair_c(VU16 y0, VU16 y1, VU16 qr, VU16 qg, VU16 qb, const FixedCoeffs& c, hn::Vec<D16> w,
                               bool halves, VU16& cr, VU16& cg, VU16& cb) {
  const auto l0 = luma_c(y0, c), l1 = luma_c(y1, c);
  cr = lerp_c(channel_c(l0, qr), channel_c(l1, qr), w, halves);
  cg = lerp_c(channel_c(l0, qg), channel_c(l1, qg), w, halves);
  cb = lerp_c(channel_c(l0, qb), channel_c(l1, qb), w, halves);
}

// The Q6 pairs kernels' vectors: lines(halves, i, w, ra, ga, ba, rb, gb, bb) gives lines a's
// and b's complements for outputs i.., each pair already blended by its weights w (as
// ResamplePairsQ6; `halves`, a constant in each instance, says that every weight is 1/2); the
// lines are blended by wv (as BlendQ6) and stored as Q6 values. Returns where the vectors stopped.
template <bool kHalves, class Lines>
int64_t PairVectorsQ6(const Lines& lines, const int16_t* HWY_RESTRICT weight, int16_t wv, int64_t n,
                      int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT b) {
  const D16 d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vw = hn::Set(d, wv);
  const auto top = hn::Set(d, kTopQ6);
  const auto store = [&](VU16 ca, VU16 cb, int16_t* HWY_RESTRICT to) {
    hn::StoreU(hn::Sub(top, hn::BitCast(d, lerp_c(ca, cb, vw, kHalves))), d, to);
  };
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    // No weights loaded that the halves leave unused: GCC 12 crashes (an internal compiler error)
    // compiling such a load for SVE.
    const auto w = kHalves ? vw : hn::LoadU(d, weight + i);
    VU16 ra, ga, ba, rb, gb, bb;
    lines(kHalves, i, w, ra, ga, ba, rb, gb, bb);
    store(ra, rb, r + i);
    store(ga, gb, g + i);
    store(ba, bb, b + i);
  }
  return i;
}
template <class Lines>
int64_t PairVectorsQ6(const Lines& lines, const int16_t* HWY_RESTRICT weight, int16_t wv, int64_t n,
                      int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT b) {
  return all_halves(weight, wv, n) ? PairVectorsQ6<true>(lines, weight, wv, n, r, g, b)
                                   : PairVectorsQ6<false>(lines, weight, wv, n, r, g, b);
}

// PairVectorsQ6's lines from one line at a time: line(halves, l, i, w, rr, gg, bb) gives line l's.
template <class Line>
auto EachLine(const Line& line) {
  return [&line](bool halves, int64_t at, hn::Vec<D16> w, VU16& ra, VU16& ga, VU16& ba, VU16& rb, VU16& gb, VU16& bb) {
    line(halves, 0, at, w, ra, ga, ba);
    line(halves, 1, at, w, rb, gb, bb);
  };
}
#endif

// A 2:1 downscale of semi-planar lines with halved chroma, in one pass: output i blends pixels
// 2i and 2i + 1 (which share chroma pair i) of line a by weight[i], the same of line b, then
// the two by wv; each pixel decoded as yuv_to_rgb_q6 does and blended as resample_pairs_q6 and
// blend_q6 do, so the result is theirs to the bit. The pairs' chroma terms are worked out once
// for both pixels (for all four where both lines are on one chroma line, as a 4:2:0 source's
// 2:1 has them: 9 % less time), and nothing goes through memory between the steps.
void SemiPlanarPairsQ6(const uint8_t* HWY_RESTRICT ya, const uint8_t* HWY_RESTRICT uva, const uint8_t* HWY_RESTRICT yb,
                       const uint8_t* HWY_RESTRICT uvb, bool vu, const int16_t* HWY_RESTRICT weight, int16_t wv,
                       int64_t n, const FixedCoeffs& c, int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g,
                       int16_t* HWY_RESTRICT b) {
  const FixedCoeffs coeffs = c;
  const SemiPlanarPixels pixels{{ya, yb}, {uva, uvb}, vu};
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const auto chroma = [&](const uint8_t* HWY_RESTRICT uv, VU16& qr, VU16& qg, VU16& qb) {
    hn::Vec<D16> first, second;
    byte_pairs_q6(uv, first, second);
    chroma_c(vu ? second : first, vu ? first : second, coeffs, qr, qg, qb);
  };
  const auto line = [&](bool halves, int l, int64_t at, hn::Vec<D16> w, VU16& cr, VU16& cg, VU16& cb) {
    VU16 y0, y1, qr, qg, qb;
    luma_pairs_257(pixels.y[l] + 2 * at, y0, y1);
    chroma(pixels.uv[l] + 2 * at, qr, qg, qb);
    decoded_pair_c(y0, y1, qr, qg, qb, coeffs, w, halves, cr, cg, cb);
  };
  // Both lines on one chroma line, as a 4:2:0 source's 2:1 has them: the chroma terms once for
  // the four pixels of each output.
  const auto box = [&](bool halves, int64_t at, hn::Vec<D16> w, VU16& ra, VU16& ga, VU16& ba, VU16& rb, VU16& gb,
                       VU16& bb) {
    VU16 y0a, y1a, y0b, y1b, qr, qg, qb;
    luma_pairs_257(ya + 2 * at, y0a, y1a);
    luma_pairs_257(yb + 2 * at, y0b, y1b);
    chroma(uva + 2 * at, qr, qg, qb);
    decoded_pair_c(y0a, y1a, qr, qg, qb, coeffs, w, halves, ra, ga, ba);
    decoded_pair_c(y0b, y1b, qr, qg, qb, coeffs, w, halves, rb, gb, bb);
  };
  i = uva == uvb ? PairVectorsQ6(box, weight, wv, n, r, g, b) : PairVectorsQ6(EachLine(line), weight, wv, n, r, g, b);
#endif
  PairsQ6Tail(pixels, i, n, weight, wv, coeffs, r, g, b);
}

// SemiPlanarPairsQ6 from picked per-pixel bytes, each pixel with its own chroma (a downscale
// by more than 2); exact to yuv_to_rgb_q6, resample_pairs_q6 and blend_q6 likewise.
void YuvPairsQ6(const uint8_t* const* HWY_RESTRICT a, const uint8_t* const* HWY_RESTRICT b,
                const int16_t* HWY_RESTRICT weight, int16_t wv, int64_t n, const FixedCoeffs& c,
                int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT bl) {
  const FixedCoeffs coeffs = c;
  const PickedPixels pixels{{a, b}};
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const auto line = [&](bool halves, int l, int64_t at, hn::Vec<D16> w, VU16& cr, VU16& cg, VU16& cb) {
    VU16 y0, y1, qr0, qg0, qb0, qr1, qg1, qb1;
    hn::Vec<D16> u0, u1, v0, v1;
    luma_pairs_257(pixels.yuv[l][0] + 2 * at, y0, y1);
    byte_pairs_q6(pixels.yuv[l][1] + 2 * at, u0, u1);
    byte_pairs_q6(pixels.yuv[l][2] + 2 * at, v0, v1);
    chroma_c(u0, v0, coeffs, qr0, qg0, qb0);
    chroma_c(u1, v1, coeffs, qr1, qg1, qb1);
    const auto l0 = luma_c(y0, coeffs), l1 = luma_c(y1, coeffs);
    cr = lerp_c(channel_c(l0, qr0), channel_c(l1, qr1), w, halves);
    cg = lerp_c(channel_c(l0, qg0), channel_c(l1, qg1), w, halves);
    cb = lerp_c(channel_c(l0, qb0), channel_c(l1, qb1), w, halves);
  };
  i = PairVectorsQ6(EachLine(line), weight, wv, n, r, g, bl);
#endif
  PairsQ6Tail(pixels, i, n, weight, wv, coeffs, r, g, bl);
}

// SemiPlanarPairsQ6 of packed 4:2:2 lines (YUYV, UYVY, VYUY): output i is macropixel i, whose
// 16-bit halves hold Y0 with one chroma byte and Y1 with the other (Y in the same byte of
// both), so the even and odd halves of two vectors are the outputs' pixels in order; exact to
// yuv_to_rgb_q6 of the split bytes, resample_pairs_q6 and blend_q6 likewise.
void Packed422PairsQ6(const uint8_t* HWY_RESTRICT a, const uint8_t* HWY_RESTRICT b, const int* pos,
                      const int16_t* HWY_RESTRICT weight, int16_t wv, int64_t n, const FixedCoeffs& c,
                      int16_t* HWY_RESTRICT r, int16_t* HWY_RESTRICT g, int16_t* HWY_RESTRICT bl) {
  const FixedCoeffs coeffs = c;
  const PackedPixels pixels{{a, b}, pos};
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const D16 d;
  const DU16 du;
  const hn::Repartition<uint8_t, DU16> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const bool y_high = (pos[0] & 1) != 0;  // Y is each half's high byte (UYVY, VYUY)
  const bool u_first = pos[1] < 2;        // U shares the first half with Y0 (YUYV, UYVY)
  // Y times 257 from a half by one byte shuffle, as luma_pairs_257.
  const auto y_bytes = hn::LoadDup128(d8, y_high ? kOddBytes257 : kEvenBytes257);
  const auto line = [&](bool halves, int l, int64_t at, hn::Vec<D16> w, VU16& cr, VU16& cg, VU16& cb) {
    const auto* m = reinterpret_cast<const uint16_t*>(pixels.row[l] + 4 * at);
    const auto lo = hn::LoadU(du, m);
    const auto hi = hn::LoadU(du, m + lanes);
    const auto first = hn::ConcatEven(du, hi, lo);
    const auto second = hn::ConcatOdd(du, hi, lo);
    const auto y257 = [&](VU16 h) { return hn::BitCast(du, hn::TableLookupBytes(hn::BitCast(d8, h), y_bytes)); };
    const auto chroma_byte = [&](VU16 h) {
      return hn::BitCast(d, y_high ? hn::And(h, hn::Set(du, 0xFF)) : hn::ShiftRight<8>(h));
    };
    const auto c0 = chroma_byte(first), c1 = chroma_byte(second);
    VU16 qr, qg, qb;
    chroma_c(u_first ? c0 : c1, u_first ? c1 : c0, coeffs, qr, qg, qb);
    decoded_pair_c(y257(first), y257(second), qr, qg, qb, coeffs, w, halves, cr, cg, cb);
  };
  i = PairVectorsQ6(EachLine(line), weight, wv, n, r, g, bl);
#endif
  PairsQ6Tail(pixels, i, n, weight, wv, coeffs, r, g, bl);
}

// The Q6 values never leave registers: rounded, narrowed and interleaved where they are made.
#if HWY_TARGET == HWY_AVX2
// R, G and B of 16 pixels from their Y, U and V bytes in 16-bit lanes, rounded to 8 bits
// but not clamped (vpackuswb saturates them as the clamp would).
HWY_INLINE void rounded_rgb_q6(const FixedCoeffs& c, __m256i y16, __m256i u16, __m256i v16, __m256i& r, __m256i& g,
                               __m256i& b) {
  const D16 d;
  const auto half = hn::Set(d, 32);
  hn::Vec<D16> rv, gu, gv, u6, bu;
  chroma_q6(d, hn::Vec<D16>{u16}, hn::Vec<D16>{v16}, c, rv, gu, gv, u6, bu);
  const auto yl = luma_q6(d, hn::Vec<D16>{y16}, c);
  const auto round = [&](hn::Vec<D16> q) { return hn::ShiftRight<6>(hn::SaturatedAdd(q, half)).raw; };
  r = round(hn::SaturatedAdd(yl, rv));
  g = round(hn::SaturatedSub(hn::SaturatedSub(yl, gu), gv));
  b = round(hn::SaturatedAdd(hn::SaturatedAdd(yl, u6), bu));
}

// YuvTo8BitPixels' pixels for RGB, BGR, RGBA and BGRA on AVX2, 16 at a time: no clamps (the
// rounded values are saturated to bytes by vpackuswb, which is what clamping to 0..255 * 64
// first gives), and the pixels interleaved from the packed bytes by in-lane shuffles, where
// the general loop narrows each channel across lanes and interleaves them after (a third of
// its time in shuffles, and spills of the channel order it picks from at run time).
template <int kChannels, bool kBgr>
class Avx2Pixels {
 public:
  Avx2Pixels(const FixedCoeffs& c, uint8_t flip) : coeffs_(c), vflip_(_mm256_set1_epi8(static_cast<char>(flip))) {}

  // 16 pixels from their Y, U and V bytes in 16-bit lanes.
  HWY_INLINE void put(__m256i y16, __m256i u16, __m256i v16, uint8_t* HWY_RESTRICT o) const {
    __m256i r, g, b;
    rounded_rgb_q6(coeffs_, y16, u16, v16, r, g, b);
    put_rounded(r, g, b, o);
  }

  // 16 pixels from their R, G and B rounded to 8 bits in 16-bit lanes (saturated to bytes).
  HWY_INLINE void put_rounded(__m256i r, __m256i g, __m256i b, uint8_t* HWY_RESTRICT o) const {
    const __m256i first = kBgr ? b : r, third = kBgr ? r : b;
    // Lane k: pixels 8k .. 8k + 7, first channel bytes 0..7 and G 8..15.
    const __m256i fg = _mm256_xor_si256(_mm256_packus_epi16(first, g), vflip_);
    // Per 128-bit lane, from 8 pixels' first-channel bytes 0..7 and second-channel bytes 8..15
    // (fg) and third-channel bytes 0..7: 3 channels, the first 16 bytes and the last 8.
    constexpr char X = -128;
    if constexpr (kChannels == 3) {
      const __m256i ab_head = _mm256_setr_epi8(0, 8, X, 1, 9, X, 2, 10, X, 3, 11, X, 4, 12, X, 5,  //
                                               0, 8, X, 1, 9, X, 2, 10, X, 3, 11, X, 4, 12, X, 5);
      const __m256i c_head = _mm256_setr_epi8(X, X, 0, X, X, 1, X, X, 2, X, X, 3, X, X, 4, X,  //
                                              X, X, 0, X, X, 1, X, X, 2, X, X, 3, X, X, 4, X);
      const __m256i ab_tail = _mm256_setr_epi8(13, X, 6, 14, X, 7, 15, X, X, X, X, X, X, X, X, X,  //
                                               13, X, 6, 14, X, 7, 15, X, X, X, X, X, X, X, X, X);
      const __m256i c_tail = _mm256_setr_epi8(X, 5, X, X, 6, X, X, 7, X, X, X, X, X, X, X, X,  //
                                              X, 5, X, X, 6, X, X, 7, X, X, X, X, X, X, X, X);
      const __m256i tt = _mm256_xor_si256(_mm256_packus_epi16(third, third), vflip_);
      const __m256i head = _mm256_or_si256(_mm256_shuffle_epi8(fg, ab_head), _mm256_shuffle_epi8(tt, c_head));
      const __m256i tail = _mm256_or_si256(_mm256_shuffle_epi8(fg, ab_tail), _mm256_shuffle_epi8(tt, c_tail));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm256_castsi256_si128(head));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(o + 16), _mm256_castsi256_si128(tail));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 24), _mm256_extracti128_si256(head, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(o + 40), _mm256_extracti128_si256(tail, 1));
    } else {
      // Bytes 0..7 and 8..15 of a lane as pairs; alpha opaque before the flip, as the general
      // loop writes it.
      const __m256i pairs = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15,  //
                                             0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
      const __m256i ta = _mm256_xor_si256(_mm256_packus_epi16(third, _mm256_set1_epi16(255)), vflip_);
      const __m256i p01 = _mm256_shuffle_epi8(fg, pairs), p23 = _mm256_shuffle_epi8(ta, pairs);
      const __m256i lo = _mm256_unpacklo_epi16(p01, p23);  // pixels 0..3 | 8..11
      const __m256i hi = _mm256_unpackhi_epi16(p01, p23);  // pixels 4..7 | 12..15
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }

 private:
  const FixedCoeffs coeffs_;
  const __m256i vflip_;
};

// YuvTo8BitPixels for RGB, BGR, RGBA and BGRA on AVX2, 16 pixels a step (Avx2Pixels).
template <int kChannels, bool kBgr>
int64_t YuvTo8BitPixelsAvx2(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u, const uint8_t* HWY_RESTRICT v,
                            int64_t n, const FixedCoeffs& c, uint8_t flip, uint8_t* HWY_RESTRICT out) {
  const Avx2Pixels<kChannels, kBgr> pixels(c, flip);
  const auto widen = [](const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) pixels.put(widen(y + i), widen(u + i), widen(v + i), out + kChannels * i);
  return i;
}

// f(channels, swapped) for the pixel layouts Avx2Pixels writes (RGB, BGR, RGBA, BGRA: `order`
// as YuvTo8BitPixels takes it), as std::integral_constant and std::bool_constant; -1 for any
// other layout.
template <class F>
int64_t with_avx2_pixels(const int* order, int channels, const F& f) {
  const bool rgb = order[0] == 0 && order[1] == 1 && order[2] == 2;
  const bool bgr = order[0] == 2 && order[1] == 1 && order[2] == 0;
  if (!(rgb || bgr) || (channels != 3 && channels != 4) || (channels == 4 && order[3] != 3)) return -1;
  if (channels == 3) {
    return bgr ? f(std::integral_constant<int, 3>{}, std::true_type{})
               : f(std::integral_constant<int, 3>{}, std::false_type{});
  }
  return bgr ? f(std::integral_constant<int, 4>{}, std::true_type{})
             : f(std::integral_constant<int, 4>{}, std::false_type{});
}
#endif

// Q6 values rounded to bytes (as q6_to_8bit), XOR `vflip`.
template <class D8>
HWY_INLINE hn::Vec<D8> q6_bytes(D8 d8, hn::Vec<D16> q, hn::Vec<D8> vflip) {
  return hn::Xor(hn::DemoteTo(d8, hn::ShiftRight<6>(hn::Add(q, hn::Set(D16(), 32)))), vflip);
}

#if HWY_TARGET != HWY_SCALAR
// One vector of pixels from their R, G, B and A bytes: byte j of a pixel is the channel
// order[j] names (0 R, 1 G, 2 B, 3 A), `channels` 3 or 4.
template <class D8, class V8>
HWY_INLINE void store_8bit_pixels(D8 d8, V8 r8, V8 g8, V8 b8, V8 a8, const int* order, int channels,
                                  uint8_t* HWY_RESTRICT out) {
  const auto pick = [&](int o) { return o == 0 ? r8 : o == 1 ? g8 : o == 2 ? b8 : a8; };
  if (channels == 3) {
    hn::StoreInterleaved3(pick(order[0]), pick(order[1]), pick(order[2]), d8, out);
  } else {
    hn::StoreInterleaved4(pick(order[0]), pick(order[1]), pick(order[2]), pick(order[3]), d8, out);
  }
}
#endif
// One pixel likewise from its Q6 R, G, B and A, rounded to bytes XOR `flip`.
inline void store_8bit_pixel(const int16_t* q, const int* order, int channels, uint8_t flip, uint8_t* out) {
  for (int j = 0; j < channels; ++j) out[j] = static_cast<uint8_t>(((q[order[j]] + 32) >> 6) ^ flip);
}

// Q6 R, G and B rows (and A, or opaque where `a` is null) rounded to bytes, XOR `flip`, and
// interleaved as YuvTo8BitPixels writes them: Q6To8Bit of each channel and Interleave8Bit in
// one pass, no bytes through memory between them (the rows of a 720p or 4K frame's downscale
// spent a quarter of their time in those two).
void Q6To8BitPixels(const int16_t* HWY_RESTRICT r, const int16_t* HWY_RESTRICT g, const int16_t* HWY_RESTRICT b,
                    const int16_t* HWY_RESTRICT a, int64_t n, const int* order, int channels, uint8_t flip,
                    uint8_t* HWY_RESTRICT out) {
  int64_t i = 0;
#if HWY_TARGET == HWY_AVX2
  if (a == nullptr) {
    i = std::max<int64_t>(0, with_avx2_pixels(order, channels, [&](auto channel_count, auto swapped) {
                            const Avx2Pixels<decltype(channel_count)::value, decltype(swapped)::value> pixels(
                                FixedCoeffs{}, flip);
                            const auto rounded = [](const int16_t* p) {
                              const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
                              return _mm256_srai_epi16(_mm256_add_epi16(q, _mm256_set1_epi16(32)), 6);
                            };
                            int64_t k = 0;
                            for (; k + 16 <= n; k += 16) {
                              pixels.put_rounded(rounded(r + k), rounded(g + k), rounded(b + k), out + channels * k);
                            }
                            return k;
                          }));
  }
#endif
#if HWY_TARGET != HWY_SCALAR
  const D16 d;
  const hn::Rebind<uint8_t, D16> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vflip = hn::Set(d8, flip);
  const auto opaque = hn::Set(d8, static_cast<uint8_t>(255 ^ flip));
  const auto bytes = [&](const int16_t* q) { return q6_bytes(d8, hn::LoadU(d, q), vflip); };
  for (; i + lanes <= n; i += lanes) {
    store_8bit_pixels(d8, bytes(r + i), bytes(g + i), bytes(b + i), a == nullptr ? opaque : bytes(a + i), order,
                      channels, out + channels * i);
  }
#endif
  for (; i < n; ++i) {
    const int16_t q[4] = {r[i], g[i], b[i], a == nullptr ? int16_t{255 * 64} : a[i]};
    store_8bit_pixel(q, order, channels, flip, out + channels * i);
  }
}

void YuvTo8BitPixels(const uint8_t* HWY_RESTRICT y, const uint8_t* HWY_RESTRICT u, const uint8_t* HWY_RESTRICT v,
                     int64_t n, const FixedCoeffs& c, const int* order, int channels, uint8_t flip,
                     uint8_t* HWY_RESTRICT out) {
  const FixedCoeffs coeffs = c;
  int64_t i = 0;
#if HWY_TARGET == HWY_AVX2
  const int64_t done = with_avx2_pixels(order, channels, [&](auto channel_count, auto swapped) {
    return YuvTo8BitPixelsAvx2<decltype(channel_count)::value, decltype(swapped)::value>(y, u, v, n, c, flip, out);
  });
  if (done > 0) y += done, u += done, v += done, out += channels * done, n -= done;
#endif
#if HWY_TARGET != HWY_SCALAR
  const D16 d;
  const hn::Rebind<uint8_t, D16> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vflip = hn::Set(d8, flip);
  const auto opaque = hn::Set(d8, static_cast<uint8_t>(255 ^ flip));
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<D16> rr, gg, bb;
    yuv_q6_vector(d, y + i, u + i, v + i, coeffs, rr, gg, bb);
    store_8bit_pixels(d8, q6_bytes(d8, rr, vflip), q6_bytes(d8, gg, vflip), q6_bytes(d8, bb, vflip), opaque, order,
                      channels, out + channels * i);
  }
#endif
  for (; i < n; ++i) {
    int16_t q[4] = {0, 0, 0, 255 * 64};
    yuv_q6_scalar(y[i], u[i], v[i], coeffs, q, q + 1, q + 2);
    store_8bit_pixel(q, order, channels, flip, out + channels * i);
  }
}

#if HWY_TARGET != HWY_SCALAR
// One stream's 16 slots of one chunk (see ShuffleStream) in a register; a chunk whose windows
// pass its row's end picks from a zero-padded copy of what is there.
HWY_INLINE hn::Vec<hn::Full128<uint8_t>> chunk_picks(const uint8_t* row, int64_t at, int64_t limit,
                                                     const uint8_t* control, int windows) {
  const hn::Full128<uint8_t> d;
  HWY_ALIGN uint8_t edge[64];
  const uint8_t* from = row + at;
  if (HWY_UNLIKELY(at + 16 * windows > limit)) {
    std::memset(edge, 0, sizeof edge);
    std::memcpy(edge, from, static_cast<std::size_t>(limit - at));
    from = edge;
  }
  auto v = hn::TableLookupBytesOr0(hn::LoadU(d, from), hn::LoadU(d, control));
  for (int w = 1; w < windows; ++w) {
    v = hn::Or(v, hn::TableLookupBytesOr0(hn::LoadU(d, from + 16 * w), hn::LoadU(d, control + 16 * w)));
  }
  return v;
}

#if HWY_ARCH_X86 && HWY_CAP_GE256
// One stream's picks of pair p (see ShuffleStream) in a 256-bit register, the lower block's
// windows from `from` and the upper block's from `upper` (null: 16 bytes past `from`, one
// 32-byte load a window); kWindows 0: `windows`. kSplit 1: upper is not null, 0: it is, -1:
// either.
template <int kWindows, int kSplit>
HWY_INLINE hn::Vec<hn::Full256<uint8_t>> pair_picks(const uint8_t* from, const uint8_t* upper, const uint8_t* control,
                                                    int windows) {
  const hn::Full256<uint8_t> d32;
  const hn::Full128<uint8_t> d16;
  const int count = kWindows > 0 ? kWindows : windows;
  const bool split = kSplit < 0 ? upper != nullptr : kSplit > 0;
  const auto window = [&](int w) {
    return !split ? hn::LoadU(d32, from + 16 * w)
                  : hn::Combine(d32, hn::LoadU(d16, upper + 16 * w), hn::LoadU(d16, from + 16 * w));
  };
  auto v = hn::TableLookupBytesOr0(window(0), hn::LoadU(d32, control));
  for (int w = 1; w < count; ++w) v = hn::Or(v, hn::TableLookupBytesOr0(window(w), hn::LoadU(d32, control + 32 * w)));
  return v;
}

// The pairs of a shuffle plan as 16 Y, U and V bytes each, in registers: sink(ys, us, vs,
// first output) takes them. A pair that does not fit goes to miss(p), which returns whether to
// go on. Returns the outputs done (16 a pair).
template <bool kSemi, int kW, int kSplit, bool kShared, class Sink, class Miss>
HWY_INLINE int64_t PairedYuv(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                             const int64_t* ahead, int64_t pairs, const Sink& sink, const Miss& miss) {
  const uint8_t* const row0 = rows[0];
  const uint8_t* const row1 = kShared ? row0 : rows[1];
  const int32_t* const pair0 = streams[0].pair_base.data();
  const int32_t* const pair1 = kShared ? pair0 : streams[1].pair_base.data();
  const int32_t* const upper0 = kSplit != 0 && streams[0].pair_split ? streams[0].pair_upper.data() : nullptr;
  const int32_t* const upper1 = kShared                                ? upper0
                                : kSplit != 0 && streams[1].pair_split ? streams[1].pair_upper.data()
                                                                       : nullptr;
  const uint8_t* control0 = streams[0].pair_control.data();
  const uint8_t* control1 = streams[1].pair_control.data();
  const int windows0 = kW > 0 ? kW : streams[0].pair_windows;
  const int windows1 = kW > 0 ? kW : streams[1].pair_windows;
  // The last base whose windows stay within the row: a 32-byte load at 16 (windows - 1), or
  // 16-byte ones at 16 (windows - 1) from either block's base.
  const int64_t last0 = limits[0] - 16 * (windows0 + (upper0 ? 0 : 1));
  const int64_t last1 = limits[1] - 16 * (windows1 + (upper1 ? 0 : 1));
  // A stream whose slots 8..15 go unused has its upper block's outputs there: OR the blocks.
  // Else its 64-bit lanes are chunk 2p's channel a, its b, chunk 2p + 1's a, its b: permuted,
  // the lower block is the 16 outputs of a, the upper those of b.
  const auto either_half = [](hn::Vec<hn::Full256<uint8_t>> v) {
    return _mm_or_si128(_mm256_castsi256_si128(v.raw), _mm256_extracti128_si256(v.raw, 1));
  };
  const auto halves = [](hn::Vec<hn::Full256<uint8_t>> v) {
    return _mm256_permute4x64_epi64(v.raw, _MM_SHUFFLE(3, 1, 2, 0));
  };
  for (int64_t p = 0; p < pairs; ++p, control0 += 32 * windows0, control1 += 32 * windows1) {
    const int64_t at0 = pair0[p], at1 = pair1[p];
    const int64_t top0 = upper0 ? std::max<int64_t>(at0, upper0[p]) : at0;
    const int64_t top1 = upper1 ? std::max<int64_t>(at1, upper1[p]) : at1;
    if (HWY_UNLIKELY(at0 < 0 || at1 < 0 || top0 > last0 || top1 > last1)) {
      if (miss(p)) continue;
      return 16 * p;
    }
    if (ahead != nullptr) {
      // The next row's lines under this pair: each block's first line, which leaves none out
      // where the pairs advance by at most 64 bytes (the 3:1 letterbox of 1080p NV12: 48) or
      // are split (a block's bytes then span at most 64).
      __builtin_prefetch(row0 + at0 + ahead[0]);
      if (upper0) __builtin_prefetch(row0 + upper0[p] + ahead[0]);
      if (!kShared) {
        __builtin_prefetch(row1 + at1 + ahead[1]);
        if (upper1) __builtin_prefetch(row1 + upper1[p] + ahead[1]);
      }
    }
    const auto a = pair_picks<kW, kSplit>(row0 + at0, upper0 ? row0 + upper0[p] : nullptr, control0, windows0);
    const auto b = pair_picks<kW, kSplit>(row1 + at1, upper1 ? row1 + upper1[p] : nullptr, control1, windows1);
    if (kSemi) {
      const __m256i uv = halves(b);
      sink(either_half(a), _mm256_castsi256_si128(uv), _mm256_extracti128_si256(uv, 1), 16 * p);
    } else {
      const __m256i yu = halves(a);
      sink(_mm256_castsi256_si128(yu), _mm256_extracti128_si256(yu, 1), either_half(b), 16 * p);
    }
  }
  return 16 * pairs;
}

// PairedYuv over a plan's pairs, with the windows taken apart where they are the 3:1 letterbox
// of 1080p's: two a stream, one load each (semi-planar), or three from two loads each (packed
// 4:2:2; 7-9% off cold YUYV 1080p -> 640x640 rgb u8 and f32 on Zen 3).
template <bool kSemi, class Sink, class Miss>
int64_t PairedYuvTo(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                    const int64_t* ahead, int64_t chunks, const Sink& sink, const Miss& miss) {
  const int64_t pairs = std::min<int64_t>(chunks / 2, static_cast<int64_t>(streams[0].pair_base.size()));
  const auto alike = [&](bool split, int windows) {
    return streams[0].pair_split == split && streams[1].pair_split == split && streams[0].pair_windows == windows &&
           streams[1].pair_windows == windows;
  };
  if (alike(false, 2)) return PairedYuv<kSemi, 2, 0, false>(rows, streams, limits, ahead, pairs, sink, miss);
  if constexpr (!kSemi) {
    if (alike(true, 3) && streams[1].pair_shared) {
      return PairedYuv<kSemi, 3, 1, true>(rows, streams, limits, ahead, pairs, sink, miss);
    }
    if (alike(true, 3)) return PairedYuv<kSemi, 3, 1, false>(rows, streams, limits, ahead, pairs, sink, miss);
  }
  return PairedYuv<kSemi, 0, -1, false>(rows, streams, limits, ahead, pairs, sink, miss);
}

// PairedYuvTo for a semi-planar or a packed plan (`semi`), up to the first pair that does not
// fit: the one-pass kernels' call.
template <class Sink>
HWY_INLINE int64_t PairedYuvToSink(bool semi, const uint8_t* const* rows, const ShuffleStream* streams,
                                   const int64_t* limits, const int64_t* ahead, int64_t chunks, const Sink& sink) {
  const auto stop = [](int64_t) { return false; };
  return semi ? PairedYuvTo<true>(rows, streams, limits, ahead, chunks, sink, stop)
              : PairedYuvTo<false>(rows, streams, limits, ahead, chunks, sink, stop);
}

// Whether a plan's streams have pairs in the layout PairedYuv takes: semi-planar (slots 0, 16,
// 24) Y alone | U, V; packed (slots 0, 8, 16) Y, U | V alone. *semi: which of the two.
bool paired_layout(const ShuffleStream* streams, const int* slots, bool* semi) {
  *semi = slots[0] == 0 && slots[1] == 16 && slots[2] == 24;
  const bool packed = slots[0] == 0 && slots[1] == 8 && slots[2] == 16;
  return (*semi || packed) && streams[0].pair_packed == *semi && streams[1].pair_packed == !*semi;
}
#endif

// ShuffledYuvBytes for SamplePlan's two slot layouts, the picks kept in registers and stored
// from there: semi-planar Y | unused, U | V (slots 0, 16, 24); packed Y | U, V | unused (slots
// 0, 8, 16). Through a stack buffer read back 8 bytes at a time, as the general loop below
// does, every chunk waited on store forwarding (the stores after those reads held a third of
// its samples in a profile of the cold 1080p rgb u8 job on AVX2).
template <bool kSemi>
void ShuffledYuvBytesInRegisters(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                 const int* slots, int64_t chunks, uint8_t* HWY_RESTRICT y, uint8_t* HWY_RESTRICT u,
                                 uint8_t* HWY_RESTRICT v) {
  const hn::Full64<uint8_t> d8;
  const uint8_t* const row0 = rows[0];
  const uint8_t* const row1 = rows[1];
  const int32_t* const base0 = streams[0].base.data();
  const int32_t* const base1 = streams[1].base.data();
  const uint8_t* const control0 = streams[0].control.data();
  const uint8_t* const control1 = streams[1].control.data();
  const int windows0 = streams[0].windows, windows1 = streams[1].windows;
  const int64_t bytes0 = 16 * windows0, bytes1 = 16 * windows1;
  const int64_t limit0 = limits[0], limit1 = limits[1];
  const auto one_chunk = [&](int64_t k) {
    const auto a = chunk_picks(row0, base0[k], limit0, control0 + k * bytes0, windows0);
    const auto b = chunk_picks(row1, base1[k], limit1, control1 + k * bytes1, windows1);
    hn::StoreU(hn::LowerHalf(d8, a), d8, y + 8 * k);
    hn::StoreU(kSemi ? hn::LowerHalf(d8, b) : hn::UpperHalf(d8, a), d8, u + 8 * k);
    hn::StoreU(kSemi ? hn::UpperHalf(d8, b) : hn::LowerHalf(d8, b), d8, v + 8 * k);
  };
  int64_t k = 0;
#if HWY_ARCH_X86 && HWY_CAP_GE256
  bool semi = false;
  if (paired_layout(streams, slots, &semi) && semi == kSemi) {
    const hn::Full128<uint8_t> d16;
    const auto sink = [&](__m128i ys, __m128i us, __m128i vs, int64_t i) {
      hn::StoreU(hn::Vec<decltype(d16)>{ys}, d16, y + i);
      hn::StoreU(hn::Vec<decltype(d16)>{us}, d16, u + i);
      hn::StoreU(hn::Vec<decltype(d16)>{vs}, d16, v + i);
    };
    const auto miss = [&](int64_t p) {
      one_chunk(2 * p);
      one_chunk(2 * p + 1);
      return true;
    };
    k = PairedYuvTo<kSemi>(rows, streams, limits, nullptr, chunks, sink, miss) / 8;
  }
#else
  (void)slots;  // one layout or the other alike: pairs are for 256-bit vectors
#endif
  for (; k < chunks; ++k) one_chunk(k);
}
#endif

void ShuffledYuvBytes(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits, const int* slots,
                      int64_t chunks, uint8_t* HWY_RESTRICT y, uint8_t* HWY_RESTRICT u, uint8_t* HWY_RESTRICT v) {
#if HWY_TARGET != HWY_SCALAR
  if (slots[0] == 0 && slots[1] == 16 && slots[2] == 24) {
    return ShuffledYuvBytesInRegisters<true>(rows, streams, limits, slots, chunks, y, u, v);
  }
  if (slots[0] == 0 && slots[1] == 8 && slots[2] == 16) {
    return ShuffledYuvBytesInRegisters<false>(rows, streams, limits, slots, chunks, y, u, v);
  }
#endif
  // The scalar target, and any other slot layout: through a buffer.
  const int32_t* base[2] = {streams[0].base.data(), streams[1].base.data()};
  const uint8_t* control[2] = {streams[0].control.data(), streams[1].control.data()};
  const int windows[2] = {streams[0].windows, streams[1].windows};
  const int64_t limit[2] = {limits[0], limits[1]};
  HWY_ALIGN uint8_t picked[32];
  HWY_ALIGN uint8_t edge[64];
  for (int64_t k = 0; k < chunks; ++k) {
    for (int s = 0; s < 2; ++s) {
      const int64_t at = base[s][k];
      const int64_t bytes = 16 * windows[s];
      const uint8_t* from = rows[s] + at;
      if (HWY_UNLIKELY(at + bytes > limit[s])) {
        std::memset(edge, 0, sizeof edge);
        std::memcpy(edge, from, static_cast<std::size_t>(limit[s] - at));
        from = edge;
      }
      pick(from, control[s] + k * bytes, windows[s], picked + 16 * s);
    }
    std::memcpy(y + 8 * k, picked + slots[0], 8);
    std::memcpy(u + 8 * k, picked + slots[1], 8);
    std::memcpy(v + 8 * k, picked + slots[2], 8);
  }
}

#if HWY_TARGET == HWY_AVX2
template <int kChannels, bool kBgr>
int64_t PairedPixels(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                     const int64_t* ahead, int64_t chunks, bool semi, const FixedCoeffs& c, uint8_t flip,
                     uint8_t* out) {
  const Avx2Pixels<kChannels, kBgr> pixels(c, flip);
  const auto sink = [&](__m128i ys, __m128i us, __m128i vs, int64_t i) {
    pixels.put(_mm256_cvtepu8_epi16(ys), _mm256_cvtepu8_epi16(us), _mm256_cvtepu8_epi16(vs), out + kChannels * i);
  };
  return PairedYuvToSink(semi, rows, streams, limits, ahead, chunks, sink);
}

// Planar 8-bit rows (R, G, B to r, g, b; XOR `flip`) straight from a plan's pairs.
int64_t PairedPlanes(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                     const int64_t* ahead, int64_t chunks, bool semi, const FixedCoeffs& c, uint8_t flip, uint8_t* r,
                     uint8_t* g, uint8_t* b) {
  const FixedCoeffs coeffs = c;
  const __m256i vflip = _mm256_set1_epi8(static_cast<char>(flip));
  const auto sink = [&](__m128i ys, __m128i us, __m128i vs, int64_t i) {
    __m256i rr, gg, bb;
    rounded_rgb_q6(coeffs, _mm256_cvtepu8_epi16(ys), _mm256_cvtepu8_epi16(us), _mm256_cvtepu8_epi16(vs), rr, gg, bb);
    // Lanes: R 0..7, G 0..7 | R 8..15, G 8..15; then B twice. Permuted: R 0..15 | G 0..15.
    const __m256i rg =
        _mm256_xor_si256(_mm256_permute4x64_epi64(_mm256_packus_epi16(rr, gg), _MM_SHUFFLE(3, 1, 2, 0)), vflip);
    const __m256i b2 =
        _mm256_xor_si256(_mm256_permute4x64_epi64(_mm256_packus_epi16(bb, bb), _MM_SHUFFLE(3, 1, 2, 0)), vflip);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(r + i), _mm256_castsi256_si128(rg));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(g + i), _mm256_extracti128_si256(rg, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i), _mm256_castsi256_si128(b2));
  };
  return PairedYuvToSink(semi, rows, streams, limits, ahead, chunks, sink);
}

// Normalised planar rows (floats or halves) straight from a plan's pairs, as PairedPixels.
template <typename T>
int64_t PairedNormalised(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                         const int64_t* ahead, int64_t chunks, bool semi, const ColorCoeffs& c, const float* affine,
                         T* r, T* g, T* b) {
  const hn::Full256<float> df;
  const NormalisedFactors f(c, affine);
  const auto sink = [&](__m128i ys, __m128i us, __m128i vs, int64_t i) {
    for (int h = 0; h < 2; ++h) {
      const auto floats = [&](__m128i x) {
        return hn::Vec<hn::Full256<float>>{_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(h ? _mm_srli_si128(x, 8) : x))};
      };
      f.store(df, floats(ys), floats(us), floats(vs), r + i + 8 * h, g + i + 8 * h, b + i + 8 * h);
    }
  };
  return PairedYuvToSink(semi, rows, streams, limits, ahead, chunks, sink);
}

// Halves [from, to) of a LanePicks plan (semi-planar: Y from rows[0], U and V from rows[1];
// packed: all from rows[0]) as Y, U and V in 32-bit lanes: sink(y, u, v, first output) takes
// them. kW: the plan's windows (0: any); kContiguous: one 32-byte load a window.
template <int kW, bool kContiguous, bool kSemi, class Sink>
HWY_INLINE void LaneHalves(const uint8_t* const* rows, const LanePicks& plan, const int64_t* ahead, int64_t from,
                           int64_t to, const Sink& sink) {
  const int windows = kW > 0 ? kW : plan.windows;
  const int64_t bytes = 32 * windows;
  const uint8_t* const row0 = rows[0];
  const uint8_t* const row1 = kSemi ? rows[1] : rows[0];
  const int32_t* const lower0 = plan.lower[0].data();
  const int32_t* const upper0 = plan.upper[0].data();
  const int32_t* const lower1 = kSemi ? plan.lower[1].data() : lower0;
  const int32_t* const upper1 = kSemi ? plan.upper[1].data() : upper0;
  const uint8_t* cy = plan.control[0].data() + from * bytes;
  const uint8_t* cu = plan.control[1].data() + from * bytes;
  const uint8_t* cv = plan.control[2].data() + from * bytes;
  const auto load = [](const uint8_t* row, int64_t lower, int64_t upper, int w) {
    if (kContiguous) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + lower + 16 * w));
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + lower + 16 * w))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + upper + 16 * w)), 1);
  };
  const auto pick = [](__m256i window, const uint8_t* control) {
    return _mm256_shuffle_epi8(window, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(control)));
  };
  for (int64_t h = from; h < to; ++h, cy += bytes, cu += bytes, cv += bytes) {
    if (ahead != nullptr) {
      // The next row's line under this half's lower block in each stream: every line where
      // halves advance by at most a line (the 3:1 letterbox of 1080p: NV12 24 bytes of Y and
      // 24 of chroma, YUYV 48), one in two or more beyond 4:1.
      __builtin_prefetch(row0 + lower0[h] + ahead[0]);
      if (kSemi) __builtin_prefetch(row1 + lower1[h] + ahead[1]);
    }
    const __m256i a = load(row0, lower0[h], upper0[h], 0);
    const __m256i b = kSemi ? load(row1, lower1[h], upper1[h], 0) : a;
    __m256i y = pick(a, cy), u = pick(b, cu), v = pick(b, cv);
    for (int w = 1; w < windows; ++w) {
      const __m256i aw = load(row0, lower0[h], upper0[h], w);
      const __m256i bw = kSemi ? load(row1, lower1[h], upper1[h], w) : aw;
      y = _mm256_or_si256(y, pick(aw, cy + 32 * w));
      u = _mm256_or_si256(u, pick(bw, cu + 32 * w));
      v = _mm256_or_si256(v, pick(bw, cv + 32 * w));
    }
    sink(y, u, v, 8 * h);
  }
}

// A LanePicks plan's halves from the first on while their loads stay within limits, through
// `sink` as LaneHalves; returns the outputs done.
template <class Sink>
HWY_INLINE int64_t LaneYuv(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits,
                           const int64_t* ahead, const Sink& sink) {
  const bool semi = plan.stream[1] == 1;
  int64_t to = plan.halves;
  for (int s = 0; s < (semi ? 2 : 1); ++s) {
    const auto& reach = plan.reach[s];
    to = std::upper_bound(reach.begin(), reach.begin() + to, limits[s]) - reach.begin();
  }
  const int64_t split = std::min(plan.contiguous_from, to);
  const auto run = [&](auto windows, auto is_semi) {
    constexpr int kW = decltype(windows)::value;
    constexpr bool kSemi = decltype(is_semi)::value;
    LaneHalves<kW, false, kSemi>(rows, plan, ahead, 0, split, sink);
    LaneHalves<kW, true, kSemi>(rows, plan, ahead, split, to, sink);
  };
  const auto with_windows = [&](auto is_semi) {
    if (plan.windows == 1) return run(std::integral_constant<int, 1>{}, is_semi);
    if (plan.windows == 2) return run(std::integral_constant<int, 2>{}, is_semi);
    run(std::integral_constant<int, 0>{}, is_semi);
  };
  if (semi) {
    with_windows(std::true_type{});
  } else {
    with_windows(std::false_type{});
  }
  return 8 * to;
}

// Normalised planar rows (floats or halves) straight from a LanePicks plan.
template <typename T>
int64_t LaneNormalised(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits, const int64_t* ahead,
                       const ColorCoeffs& c, const float* affine, T* r, T* g, T* b) {
  const hn::Full256<float> df;
  const NormalisedFactors f(c, affine);
  const auto sink = [&](__m256i y, __m256i u, __m256i v, int64_t i) {
    const auto floats = [](__m256i x) { return hn::Vec<hn::Full256<float>>{_mm256_cvtepi32_ps(x)}; };
    f.store(df, floats(y), floats(u), floats(v), r + i, g + i, b + i);
  };
  return LaneYuv(rows, plan, limits, ahead, sink);
}
#endif

template <typename T>
int64_t LaneYuvNormalised(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits,
                          const int64_t* ahead, const ColorCoeffs& c, const float* affine, T* r, T* g, T* b) {
#if HWY_TARGET == HWY_AVX2
  if (plan.halves == 0) return 0;
  return LaneNormalised(rows, plan, limits, ahead, c, affine, r, g, b);
#else
  (void)rows, (void)plan, (void)limits, (void)ahead, (void)c, (void)affine, (void)r, (void)g, (void)b;
  return 0;
#endif
}
int64_t LaneYuvToPlanar(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits, const int64_t* ahead,
                        const ColorCoeffs& c, const float* affine, float* r, float* g, float* b) {
  return LaneYuvNormalised(rows, plan, limits, ahead, c, affine, r, g, b);
}
int64_t LaneYuvToPlanarHalf(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits,
                            const int64_t* ahead, const ColorCoeffs& c, const float* affine, uint16_t* r, uint16_t* g,
                            uint16_t* b) {
  return LaneYuvNormalised(rows, plan, limits, ahead, c, affine, r, g, b);
}

int64_t ShuffledYuvTo8BitPixels(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                const int64_t* ahead, const int* slots, int64_t chunks, const FixedCoeffs& c,
                                const int* order, int channels, uint8_t flip, uint8_t* HWY_RESTRICT out) {
#if HWY_TARGET == HWY_AVX2
  bool semi = false;
  if (!paired_layout(streams, slots, &semi)) return 0;
  return std::max<int64_t>(0, with_avx2_pixels(order, channels, [&](auto channel_count, auto swapped) {
                             return PairedPixels<decltype(channel_count)::value, decltype(swapped)::value>(
                                 rows, streams, limits, ahead, chunks, semi, c, flip, out);
                           }));
#else
  (void)rows, (void)streams, (void)limits, (void)ahead, (void)slots, (void)chunks, (void)c, (void)order, (void)channels,
      (void)flip, (void)out;
  return 0;
#endif
}

int64_t ShuffledYuvTo8BitPlanes(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                const int64_t* ahead, const int* slots, int64_t chunks, const FixedCoeffs& c,
                                uint8_t flip, uint8_t* r, uint8_t* g, uint8_t* b) {
#if HWY_TARGET == HWY_AVX2
  bool semi = false;
  if (!paired_layout(streams, slots, &semi)) return 0;
  return PairedPlanes(rows, streams, limits, ahead, chunks, semi, c, flip, r, g, b);
#else
  (void)rows, (void)streams, (void)limits, (void)ahead, (void)slots, (void)chunks, (void)c, (void)flip, (void)r,
      (void)g, (void)b;
  return 0;
#endif
}

template <typename T>
int64_t ShuffledYuvNormalised(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                              const int64_t* ahead, const int* slots, int64_t chunks, const ColorCoeffs& c,
                              const float* affine, T* r, T* g, T* b) {
#if HWY_TARGET == HWY_AVX2
  bool semi = false;
  if (!paired_layout(streams, slots, &semi)) return 0;
  return PairedNormalised(rows, streams, limits, ahead, chunks, semi, c, affine, r, g, b);
#else
  (void)rows, (void)streams, (void)limits, (void)ahead, (void)slots, (void)chunks, (void)c, (void)affine, (void)r,
      (void)g, (void)b;
  return 0;
#endif
}
int64_t ShuffledYuvToPlanar(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                            const int64_t* ahead, const int* slots, int64_t chunks, const ColorCoeffs& c,
                            const float* affine, float* r, float* g, float* b) {
  return ShuffledYuvNormalised(rows, streams, limits, ahead, slots, chunks, c, affine, r, g, b);
}
int64_t ShuffledYuvToPlanarHalf(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                const int64_t* ahead, const int* slots, int64_t chunks, const ColorCoeffs& c,
                                const float* affine, uint16_t* r, uint16_t* g, uint16_t* b) {
  return ShuffledYuvNormalised(rows, streams, limits, ahead, slots, chunks, c, affine, r, g, b);
}

// The byte of a 128-byte window that word-pick control word `w` names (kernels.hpp).
inline uint8_t picked_byte(const uint8_t* window, uint16_t w) {
  return window[2 * (w & 63) + ((w >> 11) & 1)];
}

bool WordPicksFast() {
  return HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL;
}

bool ShufflesInOnePass() {
  return HWY_TARGET == HWY_AVX2;
}

// One vpermt2w picks the 32 words of a chunk's op from its 128-byte window, a variable shift
// by 8 moves the odd bytes down, and vpmovwb keeps the low bytes: about a dozen instructions for
// 16 outputs' Y, U and V, against four window shuffles per 8 outputs and stream.
void WordPickedYuvBytes(const uint8_t* const* rows, const WordPicks& plan, const int64_t* limits,
                        uint8_t* HWY_RESTRICT y, uint8_t* HWY_RESTRICT u, uint8_t* HWY_RESTRICT v) {
  // Everything in locals: the byte stores below may alias any memory the plan lives in.
  uint8_t* const out[3] = {y, u, v};
  const uint8_t* const row0 = rows[plan.stream[0]];
  const uint8_t* const row1 = rows[plan.stream[1]];
  const int64_t end0 = limits[plan.stream[0]] - 128, end1 = limits[plan.stream[1]] - 128;
  const int32_t* const base0 = plan.base[0].data();
  const int32_t* const base1 = plan.base[1].data();
  const uint16_t* const control0 = plan.control[0].data();
  const uint16_t* const control1 = plan.control[1].data();
  uint8_t* const lo0 = out[plan.lo[0]];
  uint8_t* const lo1 = out[plan.lo[1]];
  uint8_t* const hi0 = plan.hi[0] < 0 ? nullptr : out[plan.hi[0]];
  uint8_t* const hi1 = plan.hi[1] < 0 ? nullptr : out[plan.hi[1]];
  const int64_t chunks = plan.chunks;
  HWY_ALIGN uint8_t edges[2][128];
  // Op o's window, or a copy of what is left of the row where it ends inside the window.
  const auto window = [&edges](int o, const uint8_t* row, int64_t at, int64_t end) {
    if (HWY_LIKELY(at <= end)) return row + at;
    std::memset(edges[o], 0, sizeof edges[o]);
    std::memcpy(edges[o], row + at, static_cast<std::size_t>(end + 128 - at));
    return static_cast<const uint8_t*>(edges[o]);
  };
  if (plan.macropixels) {
    const int u_byte = plan.u_byte, v_byte = plan.v_byte;
    for (int64_t k = 0; k < chunks; ++k) {
      const uint8_t* from = window(0, row0, base0[k], end0);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      const __m512i picks = _mm512_loadu_si512(control0 + 32 * k);
      const __m512i macro = _mm512_permutex2var_epi32(_mm512_loadu_si512(from), picks, _mm512_loadu_si512(from + 64));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(lo0 + 16 * k),
                       _mm512_cvtepi32_epi8(_mm512_srlv_epi32(macro, _mm512_srli_epi32(picks, 16))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(u + 16 * k),
                       _mm512_cvtepi32_epi8(_mm512_srl_epi32(macro, _mm_cvtsi32_si128(8 * u_byte))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(v + 16 * k),
                       _mm512_cvtepi32_epi8(_mm512_srl_epi32(macro, _mm_cvtsi32_si128(8 * v_byte))));
#else
      for (int l = 0; l < 16; ++l) {
        const uint8_t* macro = from + 4 * (control0[32 * k + 2 * l] & 31);
        lo0[16 * k + l] = macro[(control0[32 * k + 2 * l + 1] >> 3) & 3];
        u[16 * k + l] = macro[u_byte];
        v[16 * k + l] = macro[v_byte];
      }
#endif
    }
    return;
  }
  if (plan.outputs == 32) {
    for (int64_t k = 0; k < chunks; ++k) {
      const uint8_t* luma = window(0, row0, base0[k], end0);
      const uint8_t* pairs = window(1, row1, base1[k], end1);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      const __m512i ys = _mm512_loadu_si512(control0 + 32 * k);
      const __m512i y16 = _mm512_permutex2var_epi16(_mm512_loadu_si512(luma), ys, _mm512_loadu_si512(luma + 64));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo0 + 32 * k),
                          _mm512_cvtepi16_epi8(_mm512_srlv_epi16(y16, _mm512_srli_epi16(ys, 8))));
      const __m512i uv = _mm512_permutex2var_epi16(_mm512_loadu_si512(pairs), _mm512_loadu_si512(control1 + 32 * k),
                                                   _mm512_loadu_si512(pairs + 64));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo1 + 32 * k), _mm512_cvtepi16_epi8(uv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi1 + 32 * k), _mm512_cvtepi16_epi8(_mm512_srli_epi16(uv, 8)));
#else
      for (int l = 0; l < 32; ++l) {
        lo0[32 * k + l] = picked_byte(luma, control0[32 * k + l]);
        lo1[32 * k + l] = pairs[2 * (control1[32 * k + l] & 63)];
        hi1[32 * k + l] = pairs[2 * (control1[32 * k + l] & 63) + 1];
      }
#endif
    }
    return;
  }
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const auto op = [](const uint8_t* from, const uint16_t* control, uint8_t* lo, uint8_t* hi) {
    const __m512i words = _mm512_loadu_si512(control);
    const __m512i picked = _mm512_permutex2var_epi16(_mm512_loadu_si512(from), words, _mm512_loadu_si512(from + 64));
    const __m256i bytes = _mm512_cvtepi16_epi8(_mm512_srlv_epi16(picked, _mm512_srli_epi16(words, 8)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(lo), _mm256_castsi256_si128(bytes));
    if (hi != nullptr) _mm_storeu_si128(reinterpret_cast<__m128i*>(hi), _mm256_extracti128_si256(bytes, 1));
  };
#else
  const auto op = [](const uint8_t* from, const uint16_t* c, uint8_t* lo, uint8_t* hi) {
    for (int l = 0; l < 16; ++l) lo[l] = picked_byte(from, c[l]);
    for (int l = 0; hi != nullptr && l < 16; ++l) hi[l] = picked_byte(from, c[16 + l]);
  };
#endif
  for (int64_t k = 0; k < chunks; ++k) {
    op(window(0, row0, base0[k], end0), control0 + 32 * k, lo0 + 16 * k, hi0 == nullptr ? nullptr : hi0 + 16 * k);
    op(window(1, row1, base1[k], end1), control1 + 32 * k, lo1 + 16 * k, hi1 == nullptr ? nullptr : hi1 + 16 * k);
  }
}

// `out` may be `a` or `b`: each element is read before it is written.
void BlendQ6(const int16_t* a, const int16_t* b, int16_t w, int16_t* out, int64_t n) {
  const D16 d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vw = hn::Set(d, w);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto va = hn::LoadU(d, a + i);
    hn::StoreU(hn::Add(va, hn::MulHigh(hn::ShiftLeft<1>(hn::Sub(hn::LoadU(d, b + i), va)), vw)), d, out + i);
  }
  for (; i < n; ++i) out[i] = static_cast<int16_t>(a[i] + mulhigh_scalar((b[i] - a[i]) * 2, w));
}

void Resample2TapQ6(const int16_t* HWY_RESTRICT in, const int32_t* HWY_RESTRICT index,
                    const int16_t* HWY_RESTRICT weight, int16_t* HWY_RESTRICT out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t a = in[index[i]];
    out[i] = static_cast<int16_t>(a + (((in[index[i] + 1] - a) * weight[i]) >> 15));
  }
}

// The taps arrive interleaved (a0 b0 a1 b1 ...): one de-interleaving load, then BlendQ6's
// arithmetic ((b - a) * 2 * w >> 16 is (b - a) * w >> 15, the scalar loop's floor).
void ResamplePairsQ6(const int16_t* HWY_RESTRICT in, const int16_t* HWY_RESTRICT weight, int16_t* HWY_RESTRICT out,
                     int64_t n) {
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const D16 d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (; i + lanes <= n; i += lanes) {
    hn::Vec<D16> a, b;
    hn::LoadInterleaved2(d, in + 2 * i, a, b);
    hn::StoreU(hn::Add(a, hn::MulHigh(hn::ShiftLeft<1>(hn::Sub(b, a)), hn::LoadU(d, weight + i))), d, out + i);
  }
#endif
  for (; i < n; ++i) {
    const int32_t a = in[2 * i];
    out[i] = static_cast<int16_t>(a + (((in[2 * i + 1] - a) * weight[i]) >> 15));
  }
}

// The Y, U and V bytes of each pixel of a packed 4:2:2 row (pos: the macropixel's Y0, U, Y1, V
// bytes), de-interleaved in vectors: an area downscale decodes every pixel.
void SplitPacked422(const uint8_t* HWY_RESTRICT row, const int* pos, int64_t n, uint8_t* HWY_RESTRICT y,
                    uint8_t* HWY_RESTRICT u, uint8_t* HWY_RESTRICT v) {
  const hn::ScalableTag<uint8_t> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    hn::Vec<decltype(d)> b0, b1, b2, b3;  // not an array: SVE vectors are sizeless
    hn::LoadInterleaved4(d, row + 2 * i, b0, b1, b2, b3);
    const auto byte = [&](int k) { return k == 0 ? b0 : k == 1 ? b1 : k == 2 ? b2 : b3; };
    hn::StoreInterleaved2(byte(pos[0]), byte(pos[2]), d, y + i);
    hn::StoreInterleaved2(byte(pos[1]), byte(pos[1]), d, u + i);
    hn::StoreInterleaved2(byte(pos[3]), byte(pos[3]), d, v + i);
  }
  for (; i < n; ++i) {
    const uint8_t* macro = row + 4 * (i >> 1);
    y[i] = macro[pos[(i & 1) ? 2 : 0]], u[i] = macro[pos[1]], v[i] = macro[pos[3]];
  }
}

// Each chroma pair's U and V bytes, twice (one per pixel): the bytes as little-endian 16-bit
// pairs, low byte doubled and high byte doubled.
void SplitChromaPairs(const uint8_t* HWY_RESTRICT uv, bool vu, int64_t n, uint8_t* HWY_RESTRICT u,
                      uint8_t* HWY_RESTRICT v) {
  uint8_t* first = vu ? v : u;
  uint8_t* second = vu ? u : v;
  int64_t k = 0;
#if HWY_TARGET != HWY_SCALAR  // one 16-bit lane has no byte view
  const hn::ScalableTag<uint16_t> d;
  const hn::Repartition<uint8_t, decltype(d)> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto low = hn::Set(d, 0xFF);
  for (; 2 * (k + lanes) <= n; k += lanes) {
    const auto w = hn::BitCast(d, hn::LoadU(d8, uv + 2 * k));
    const auto lo = hn::And(w, low);
    const auto hi = hn::ShiftRight<8>(w);
    hn::StoreU(hn::BitCast(d8, hn::Or(lo, hn::ShiftLeft<8>(lo))), d8, first + 2 * k);
    hn::StoreU(hn::BitCast(d8, hn::Or(hi, hn::ShiftLeft<8>(hi))), d8, second + 2 * k);
  }
#endif
  for (int64_t i = 2 * k; i < n; ++i) {
    first[i] = uv[i & ~int64_t{1}];
    second[i] = uv[(i & ~int64_t{1}) + 1];
  }
}

// Q6 values times a Q15 weight, rounded: (in * w + 16384) >> 15 (in <= 16320, w < 32768).
void AccumulateQ6(const int16_t* HWY_RESTRICT in, int16_t w, int16_t* HWY_RESTRICT out, int64_t n, bool first) {
  const D16 d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vw = hn::Set(d, w);
  int64_t i = 0;
  if (first) {
    for (; i + lanes <= n; i += lanes) hn::StoreU(hn::MulFixedPoint15(hn::LoadU(d, in + i), vw), d, out + i);
  } else {
    for (; i + lanes <= n; i += lanes) {
      hn::StoreU(hn::Add(hn::LoadU(d, out + i), hn::MulFixedPoint15(hn::LoadU(d, in + i), vw)), d, out + i);
    }
  }
  for (; i < n; ++i) {
    const auto v = static_cast<int16_t>((in[i] * w + 16384) >> 15);
    out[i] = static_cast<int16_t>(first ? v : out[i] + v);
  }
}

// Many outputs at a time: each output's eight inputs and weights multiplied into four pair
// sums within one 128-bit block, four vectors of them reduced together (block_totals), so that
// no output needs a horizontal sum of its own. 4K -> 640 wide area downscales spent 15 % of
// their time here one output at a time.
void ResampleWindowQ6(const int16_t* HWY_RESTRICT in, const int32_t* HWY_RESTRICT start,
                      const int16_t* HWY_RESTRICT window, int16_t* HWY_RESTRICT out, int64_t n) {
  int64_t o = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  {
    // Vector i holds outputs o + 4i + j in block j, so the totals' lane (j, i) is output
    // o + 4i + j; `order` puts output o + k at lane k.
    const hn::Full512<int32_t> d32;
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i half = _mm512_set1_epi32(16384);
    const auto at = [&](int64_t k) { return reinterpret_cast<const __m128i*>(in + start[k]); };
    const auto products = [&](int64_t k) {
      __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(at(k)));
      v = _mm512_inserti32x4(v, _mm_loadu_si128(at(k + 1)), 1);
      v = _mm512_inserti32x4(v, _mm_loadu_si128(at(k + 2)), 2);
      v = _mm512_inserti32x4(v, _mm_loadu_si128(at(k + 3)), 3);
      return hn::Vec512<int32_t>{_mm512_madd_epi16(v, _mm512_loadu_si512(window + 8 * k))};
    };
    for (; o + 16 <= n; o += 16) {
      const auto sums = block_totals(d32, products(o), products(o + 4), products(o + 8), products(o + 12));
      const __m512i ordered = _mm512_permutexvar_epi32(order, sums.raw);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + o),
                          _mm512_cvtepi32_epi16(_mm512_srai_epi32(_mm512_add_epi32(ordered, half), 15)));
    }
  }
#elif HWY_TARGET == HWY_AVX2
  {
    // As above with two blocks: vector i holds outputs o + 2i + j in block j.
    const hn::Full256<int32_t> d32;
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i half = _mm256_set1_epi32(16384);
    const auto at = [&](int64_t k) { return reinterpret_cast<const __m128i*>(in + start[k]); };
    const auto products = [&](int64_t k) {
      const __m256i v = _mm256_loadu2_m128i(at(k + 1), at(k));
      return hn::Vec256<int32_t>{
          _mm256_madd_epi16(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(window + 8 * k)))};
    };
    for (; o + 8 <= n; o += 8) {
      const auto sums = block_totals(d32, products(o), products(o + 2), products(o + 4), products(o + 6));
      const __m256i ordered =
          _mm256_srai_epi32(_mm256_add_epi32(_mm256_permutevar8x32_epi32(sums.raw, order), half), 15);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + o),
                       _mm_packs_epi32(_mm256_castsi256_si128(ordered), _mm256_extracti128_si256(ordered, 1)));
    }
  }
#endif
#if HWY_TARGET != HWY_SCALAR  // one 16-bit lane has no 32-bit pair sums
  const hn::CappedTag<int16_t, 8> d;
  const hn::Repartition<int32_t, decltype(d)> d32;
  const hn::Rebind<int16_t, decltype(d32)> d16;
  if (hn::Lanes(d) == 8) {
    const auto half = hn::Set(d32, 16384);
    const auto products = [&](int64_t k) {
      auto odd = hn::Zero(d32);
      const auto even = hn::ReorderWidenMulAccumulate(d32, hn::LoadU(d, in + start[k]), hn::LoadU(d, window + 8 * k),
                                                      hn::Zero(d32), odd);
      return hn::Add(even, odd);
    };
    for (; o + 4 <= n; o += 4) {
      const auto sums = block_totals(d32, products(o), products(o + 1), products(o + 2), products(o + 3));
      hn::StoreU(hn::DemoteTo(d16, hn::ShiftRight<15>(hn::Add(sums, half))), d16, out + o);
    }
  }
#endif
  for (; o < n; ++o) {
    int32_t sum = 16384;
    for (int k = 0; k < 8; ++k) sum += in[start[o] + k] * window[8 * o + k];
    out[o] = static_cast<int16_t>(sum >> 15);
  }
}

void ResampleTapsQ6(const int16_t* HWY_RESTRICT in, const int32_t* HWY_RESTRICT first,
                    const int32_t* HWY_RESTRICT index, const int16_t* HWY_RESTRICT weight, int16_t* HWY_RESTRICT out,
                    int64_t n) {
  for (int64_t o = 0; o < n; ++o) {
    int32_t sum = 16384;
    for (int32_t t = first[o]; t < first[o + 1]; ++t) sum += in[index[t]] * weight[t];
    out[o] = static_cast<int16_t>(sum >> 15);
  }
}

void Q6To8Bit(const int16_t* HWY_RESTRICT in, uint8_t flip, uint8_t* HWY_RESTRICT out, int64_t n) {
  const D16 d;
  const hn::Rebind<uint8_t, D16> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vflip = hn::Set(d8, flip);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(q6_bytes(d8, hn::LoadU(d, in + i), vflip), d8, out + i);
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(((in[i] + 32) >> 6) ^ flip);
}

void Interleave8Bit(const uint8_t* const* in, int channels, uint8_t* HWY_RESTRICT out, int64_t n) {
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<uint8_t> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d8));
  if (channels == 3) {
    for (; i + lanes <= n; i += lanes) {
      hn::StoreInterleaved3(hn::LoadU(d8, in[0] + i), hn::LoadU(d8, in[1] + i), hn::LoadU(d8, in[2] + i), d8,
                            out + 3 * i);
    }
  } else if (channels == 4) {
    for (; i + lanes <= n; i += lanes) {
      hn::StoreInterleaved4(hn::LoadU(d8, in[0] + i), hn::LoadU(d8, in[1] + i), hn::LoadU(d8, in[2] + i),
                            hn::LoadU(d8, in[3] + i), d8, out + 4 * i);
    }
  }
#endif
  for (; i < n; ++i) {
    for (int ch = 0; ch < channels; ++ch) out[i * channels + ch] = in[ch][i];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace memhal::detail::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace memhal::detail::kernels {

HWY_EXPORT(Resample2Tap);
HWY_EXPORT(Resample1Tap);
HWY_EXPORT(ResamplePairs);
HWY_EXPORT(Blend2);
HWY_EXPORT(Accumulate);
HWY_EXPORT(ResampleWindow);
HWY_EXPORT(SemiPlanarToRgb);
HWY_EXPORT(SemiPlanar444ToRgb);
HWY_EXPORT(PlanarYuvToRgb);
HWY_EXPORT(PlanarYuvToHalf);
HWY_EXPORT(Packed422ToRgb);
HWY_EXPORT(SampledSemiPlanarToRgb);
HWY_EXPORT(SampledPacked422ToRgb);
HWY_EXPORT(BytesToRgb);
HWY_EXPORT(StoreF32);
HWY_EXPORT(StreamCopy);
HWY_EXPORT(FillRepeated);
HWY_EXPORT(StoreF16);
HWY_EXPORT(Store8Bit);
HWY_EXPORT(Store8BitInterleaved);

HWY_EXPORT(YuvToRgbQ6);
HWY_EXPORT(YuvToRgbQ6Accumulate);
HWY_EXPORT(SemiPlanarPairsQ6);
HWY_EXPORT(YuvPairsQ6);
HWY_EXPORT(Packed422PairsQ6);
HWY_EXPORT(Packed422ToRgbQ6Accumulate);
HWY_EXPORT(SemiPlanarPairs);
HWY_EXPORT(YuvPairs);
HWY_EXPORT(Packed422Pairs);
HWY_EXPORT(YuvToRgbAccumulate);
HWY_EXPORT(YuvTo8BitPixels);
HWY_EXPORT(ShuffledYuvBytes);
HWY_EXPORT(ShuffledYuvTo8BitPixels);
HWY_EXPORT(ShuffledYuvTo8BitPlanes);
HWY_EXPORT(ShuffledYuvToPlanar);
HWY_EXPORT(ShuffledYuvToPlanarHalf);
HWY_EXPORT(LaneYuvToPlanar);
HWY_EXPORT(LaneYuvToPlanarHalf);
HWY_EXPORT(WordPicksFast);
HWY_EXPORT(ShufflesInOnePass);
HWY_EXPORT(WordPickedYuvBytes);
HWY_EXPORT(BlendQ6);
HWY_EXPORT(Resample2TapQ6);
HWY_EXPORT(ResamplePairsQ6);
HWY_EXPORT(SplitChromaPairs);
HWY_EXPORT(SplitPacked422);
HWY_EXPORT(AccumulateQ6);
HWY_EXPORT(ResampleWindowQ6);
HWY_EXPORT(ResampleTapsQ6);
HWY_EXPORT(Q6To8Bit);
HWY_EXPORT(Interleave8Bit);
HWY_EXPORT(Q6To8BitPixels);

FixedCoeffs fixed_coeffs(const ColorCoeffs& c) {
  const auto q = [](double v) { return static_cast<int16_t>(std::lround(v)); };
  FixedCoeffs f;
  f.y_mul = static_cast<uint16_t>(std::lround(c.y_scale * 64.0 * 65536.0 / 257.0));
  f.y_sub = q(c.y_offset * c.y_scale * 64.0);
  f.rv = q(c.rv * 16384.0);
  f.gu = q(c.gu * 16384.0);
  f.gv = q(c.gv * 16384.0);
  f.bu_minus_1 = q((c.bu - 1.0) * 16384.0);
  return f;
}
void yuv_to_rgb_q6(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const FixedCoeffs& c, int16_t* r,
                   int16_t* g, int16_t* b) {
  HWY_DYNAMIC_DISPATCH(YuvToRgbQ6)(y, u, v, n, c, r, g, b);
}
void yuv_to_rgb_q6_accumulate(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const FixedCoeffs& c,
                              int16_t w, int16_t* r, int16_t* g, int16_t* b, bool first) {
  HWY_DYNAMIC_DISPATCH(YuvToRgbQ6Accumulate)(y, u, v, n, c, w, r, g, b, first);
}
void yuv_pairs(const uint8_t* const* a, const uint8_t* const* b, const float* weight, float wv, int64_t n,
               const ColorCoeffs& c, float* r, float* g, float* bl) {
  HWY_DYNAMIC_DISPATCH(YuvPairs)(a, b, weight, wv, n, c, r, g, bl);
}
void semi_planar_pairs(const uint8_t* ya, const uint8_t* uva, const uint8_t* yb, const uint8_t* uvb, bool vu,
                       const float* weight, float wv, int64_t n, const ColorCoeffs& c, float* r, float* g, float* b) {
  HWY_DYNAMIC_DISPATCH(SemiPlanarPairs)(ya, uva, yb, uvb, vu, weight, wv, n, c, r, g, b);
}
void packed_422_pairs(const uint8_t* a, const uint8_t* b, const int* pos, const float* weight, float wv, int64_t n,
                      const ColorCoeffs& c, float* r, float* g, float* bl) {
  HWY_DYNAMIC_DISPATCH(Packed422Pairs)(a, b, pos, weight, wv, n, c, r, g, bl);
}
void packed_422_to_rgb_q6_accumulate(const uint8_t* row, const int* pos, int64_t n, const FixedCoeffs& c, int16_t w,
                                     int16_t* r, int16_t* g, int16_t* b, bool first) {
  HWY_DYNAMIC_DISPATCH(Packed422ToRgbQ6Accumulate)(row, pos, n, c, w, r, g, b, first);
}
void yuv_pairs_q6(const uint8_t* const* a, const uint8_t* const* b, const int16_t* weight, int16_t wv, int64_t n,
                  const FixedCoeffs& c, int16_t* r, int16_t* g, int16_t* bl) {
  HWY_DYNAMIC_DISPATCH(YuvPairsQ6)(a, b, weight, wv, n, c, r, g, bl);
}
void semi_planar_pairs_q6(const uint8_t* ya, const uint8_t* uva, const uint8_t* yb, const uint8_t* uvb, bool vu,
                          const int16_t* weight, int16_t wv, int64_t n, const FixedCoeffs& c, int16_t* r, int16_t* g,
                          int16_t* b) {
  HWY_DYNAMIC_DISPATCH(SemiPlanarPairsQ6)(ya, uva, yb, uvb, vu, weight, wv, n, c, r, g, b);
}
void packed_422_pairs_q6(const uint8_t* a, const uint8_t* b, const int* pos, const int16_t* weight, int16_t wv,
                         int64_t n, const FixedCoeffs& c, int16_t* r, int16_t* g, int16_t* bl) {
  HWY_DYNAMIC_DISPATCH(Packed422PairsQ6)(a, b, pos, weight, wv, n, c, r, g, bl);
}
void yuv_to_8bit_pixels(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const FixedCoeffs& c,
                        const int* order, int channels, uint8_t flip, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(YuvTo8BitPixels)(y, u, v, n, c, order, channels, flip, out);
}
int64_t shuffled_yuv_to_8bit_pixels(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                    const int64_t* ahead, const int* slots, int64_t chunks, const FixedCoeffs& c,
                                    const int* order, int channels, uint8_t flip, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(ShuffledYuvTo8BitPixels)(rows, streams, limits, ahead, slots, chunks, c, order, channels,
                                                       flip, out);
}
int64_t shuffled_yuv_to_8bit_planes(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                    const int64_t* ahead, const int* slots, int64_t chunks, const FixedCoeffs& c,
                                    uint8_t flip, uint8_t* r, uint8_t* g, uint8_t* b) {
  return HWY_DYNAMIC_DISPATCH(ShuffledYuvTo8BitPlanes)(rows, streams, limits, ahead, slots, chunks, c, flip, r, g, b);
}
int64_t shuffled_yuv_to_planar(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                               const int64_t* ahead, const int* slots, int64_t chunks, const ColorCoeffs& c,
                               const float* affine, float* r, float* g, float* b) {
  return HWY_DYNAMIC_DISPATCH(ShuffledYuvToPlanar)(rows, streams, limits, ahead, slots, chunks, c, affine, r, g, b);
}
int64_t shuffled_yuv_to_planar(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                               const int64_t* ahead, const int* slots, int64_t chunks, const ColorCoeffs& c,
                               const float* affine, uint16_t* r, uint16_t* g, uint16_t* b) {
  return HWY_DYNAMIC_DISPATCH(ShuffledYuvToPlanarHalf)(rows, streams, limits, ahead, slots, chunks, c, affine, r, g, b);
}
int64_t lane_yuv_to_planar(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits,
                           const int64_t* ahead, const ColorCoeffs& c, const float* affine, float* r, float* g,
                           float* b) {
  return HWY_DYNAMIC_DISPATCH(LaneYuvToPlanar)(rows, plan, limits, ahead, c, affine, r, g, b);
}
int64_t lane_yuv_to_planar(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits,
                           const int64_t* ahead, const ColorCoeffs& c, const float* affine, uint16_t* r, uint16_t* g,
                           uint16_t* b) {
  return HWY_DYNAMIC_DISPATCH(LaneYuvToPlanarHalf)(rows, plan, limits, ahead, c, affine, r, g, b);
}
void shuffled_yuv_bytes(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                        const int* slots, int64_t chunks, uint8_t* y, uint8_t* u, uint8_t* v) {
  HWY_DYNAMIC_DISPATCH(ShuffledYuvBytes)(rows, streams, limits, slots, chunks, y, u, v);
}
void blend_q6(const int16_t* a, const int16_t* b, int16_t w, int16_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(BlendQ6)(a, b, w, out, n);
}
void resample_2tap_q6(const int16_t* in, const int32_t* index, const int16_t* weight, int16_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Resample2TapQ6)(in, index, weight, out, n);
}
void resample_pairs_q6(const int16_t* in, const int16_t* weight, int16_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ResamplePairsQ6)(in, weight, out, n);
}
void split_chroma_pairs(const uint8_t* uv, bool vu, int64_t n, uint8_t* u, uint8_t* v) {
  HWY_DYNAMIC_DISPATCH(SplitChromaPairs)(uv, vu, n, u, v);
}
void split_packed_422(const uint8_t* row, const int* pos, int64_t n, uint8_t* y, uint8_t* u, uint8_t* v) {
  HWY_DYNAMIC_DISPATCH(SplitPacked422)(row, pos, n, y, u, v);
}
void resample_window_q6(const int16_t* in, const int32_t* start, const int16_t* window, int16_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ResampleWindowQ6)(in, start, window, out, n);
}
void accumulate_q6(const int16_t* in, int16_t w, int16_t* out, int64_t n, bool first) {
  HWY_DYNAMIC_DISPATCH(AccumulateQ6)(in, w, out, n, first);
}
void resample_taps_q6(const int16_t* in, const int32_t* first, const int32_t* index, const int16_t* weight,
                      int16_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ResampleTapsQ6)(in, first, index, weight, out, n);
}
void q6_to_8bit(const int16_t* in, uint8_t flip, uint8_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Q6To8Bit)(in, flip, out, n);
}
void interleave_8bit(const uint8_t* const* in, int channels, uint8_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Interleave8Bit)(in, channels, out, n);
}
void q6_to_8bit_pixels(const int16_t* r, const int16_t* g, const int16_t* b, const int16_t* a, int64_t n,
                       const int* order, int channels, uint8_t flip, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(Q6To8BitPixels)(r, g, b, a, n, order, channels, flip, out);
}

void resample_2tap(const float* in, const int32_t* index, const float* weight, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Resample2Tap)(in, index, weight, out, n);
}
void resample_pairs(const float* in, const float* weight, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ResamplePairs)(in, weight, out, n);
}
void resample_1tap(const float* in, const int32_t* index, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Resample1Tap)(in, index, out, n);
}
void blend_2(const float* a, const float* b, float wb, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Blend2)(a, b, wb, out, n);
}
void accumulate(const float* in, float w, float* out, int64_t n, bool first) {
  HWY_DYNAMIC_DISPATCH(Accumulate)(in, w, out, n, first);
}
void resample_window(const float* in, const int32_t* start, const float* window, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ResampleWindow)(in, start, window, out, n);
}
void yuv_to_rgb_accumulate(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const ColorCoeffs& c,
                           float w, float* r, float* g, float* b, bool first) {
  HWY_DYNAMIC_DISPATCH(YuvToRgbAccumulate)(y, u, v, n, c, w, r, g, b, first);
}
void semi_planar_to_rgb(const uint8_t* y, const uint8_t* uv, bool vu, int64_t n, const ColorCoeffs& c, float* r,
                        float* g, float* b) {
  HWY_DYNAMIC_DISPATCH(SemiPlanarToRgb)(y, uv, vu, n, c, r, g, b);
}
void semi_planar_444_to_rgb(const uint8_t* y, const uint8_t* uv, int64_t n, const ColorCoeffs& c, float* r, float* g,
                            float* b) {
  HWY_DYNAMIC_DISPATCH(SemiPlanar444ToRgb)(y, uv, n, c, r, g, b);
}
void planar_yuv_to_rgb(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const ColorCoeffs& c, float* r,
                       float* g, float* b, const float* affine) {
  HWY_DYNAMIC_DISPATCH(PlanarYuvToRgb)(y, u, v, n, c, r, g, b, affine);
}
void planar_yuv_to_half(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const ColorCoeffs& c,
                        uint16_t* r, uint16_t* g, uint16_t* b, const float* affine) {
  HWY_DYNAMIC_DISPATCH(PlanarYuvToHalf)(y, u, v, n, c, r, g, b, affine);
}
bool word_picks_fast() {
  return HWY_DYNAMIC_DISPATCH(WordPicksFast)();
}
bool shuffles_in_one_pass() {
  return HWY_DYNAMIC_DISPATCH(ShufflesInOnePass)();
}
void word_picked_yuv_bytes(const uint8_t* const* rows, const WordPicks& plan, const int64_t* limits, uint8_t* y,
                           uint8_t* u, uint8_t* v) {
  HWY_DYNAMIC_DISPATCH(WordPickedYuvBytes)(rows, plan, limits, y, u, v);
}
void packed_422_to_rgb(const uint8_t* p, int order, int64_t n, const ColorCoeffs& c, float* r, float* g, float* b) {
  HWY_DYNAMIC_DISPATCH(Packed422ToRgb)(p, order, n, c, r, g, b);
}
void sampled_semi_planar_to_rgb(const uint8_t* y, const uint8_t* uv, bool vu, const int32_t* index, int64_t n,
                                int32_t limit, const ColorCoeffs& c, float* r, float* g, float* b) {
  HWY_DYNAMIC_DISPATCH(SampledSemiPlanarToRgb)(y, uv, vu, index, n, limit, c, r, g, b);
}
void sampled_packed_422_to_rgb(const uint8_t* p, int order, const int32_t* index, int64_t n, const ColorCoeffs& c,
                               float* r, float* g, float* b) {
  HWY_DYNAMIC_DISPATCH(SampledPacked422ToRgb)(p, order, index, n, c, r, g, b);
}
void bytes_to_rgb(const uint8_t* p, int channels, const int* offsets, int64_t n, float* r, float* g, float* b,
                  float* a) {
  HWY_DYNAMIC_DISPATCH(BytesToRgb)(p, channels, offsets, n, r, g, b, a);
}
void store_f32(const float* in, float scale, float bias, float* out, int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(StoreF32)(in, scale, bias, out, n, stream);
}
void store_f16(const float* in, float scale, float bias, uint16_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(StoreF16)(in, scale, bias, out, n);
}
uint16_t half_from_float(float f) {
  uint32_t x = 0;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t biased = static_cast<int32_t>((x >> 23) & 0xFFu);
  uint32_t mantissa = x & 0x7FFFFFu;
  if (biased == 0xFF) return static_cast<uint16_t>(sign | 0x7C00u | (mantissa != 0 ? 0x200u : 0u));
  const int32_t exponent = biased - 127 + 15;
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7C00u);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - exponent;
    uint32_t h = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Rounding may carry into the exponent, which is exactly right (up to infinity).
  uint32_t h = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}
void stream_copy(const uint8_t* in, uint8_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(StreamCopy)(in, out, n);
}
void fill_repeated(void* out, const void* value, int size, int64_t count) {
  if (count <= 0) return;
  uint32_t v = 0;
  std::memcpy(&v, value, static_cast<std::size_t>(size));
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  auto n = static_cast<std::size_t>(count);
  switch (size) {
    case 1: asm volatile("rep stosb" : "+D"(out), "+c"(n) : "a"(v) : "memory"); return;
    case 2: asm volatile("rep stosw" : "+D"(out), "+c"(n) : "a"(v) : "memory"); return;
    default: asm volatile("rep stosl" : "+D"(out), "+c"(n) : "a"(v) : "memory"); return;
  }
#else
  HWY_DYNAMIC_DISPATCH(FillRepeated)(out, v, size, count);
#endif
}
void flush_streams() {
  hwy::FlushStream();
}
void store_8bit(const float* in, int bias, uint8_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Store8Bit)(in, bias, out, n);
}
void store_8bit_interleaved(const float* const* in, int channels, int bias, uint8_t* staging, uint8_t* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Store8BitInterleaved)(in, channels, bias, staging, out, n);
}

}  // namespace memhal::detail::kernels
#endif
