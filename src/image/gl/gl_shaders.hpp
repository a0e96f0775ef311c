// GLSL ES 3.00 sources of the GL converter's two passes. `sample` decodes source pixels from
// byte textures and resamples them onto the letterboxed content rectangle with the CPU
// backend's own tap tables (float RGBA, kept as bits in an RGBA32UI target so that no float
// render extension is needed); `pack` turns that image into the destination's bytes, 16 bytes
// of one plane row per fragment, so any dtype and any interleaved or planar layout packs
// exactly and reads back with glReadPixels(GL_RGBA_INTEGER, GL_UNSIGNED_INT) — or 4 or 1 bytes
// per fragment straight into a destination imported as a render target.
#pragma once

namespace memhal::detail::gl::shaders {

// One triangle that covers the viewport; fragments find their pixel in gl_FragCoord.
inline constexpr const char* kVertex = R"(
void main() {
  vec2 p = vec2(float((gl_VertexID & 1) * 4 - 1), float((gl_VertexID & 2) * 2 - 1));
  gl_Position = vec4(p, 0.0, 1.0);
}
)";

// The fragment shaders are specialised per conversion by #defines that the converter puts after
// `#version 300 es`: the branches a conversion does not take are compiled out, which a SIMD
// software rasteriser such as llvmpipe would otherwise execute under masks for every pixel.
//
// Source kinds (KIND): 0 interleaved RGB family (u_offsets: bytes of R, G, B, A), 1 planar
// RGB(A), 2 packed 4:2:2 (u_offsets: bytes of Y0, U, Y1, V in a macropixel), 3 semi-planar
// (u_offsets.xy: bytes of U and V in a chroma pair), 4 three-plane 4:2:0, 5 RGB from
// u_external (a whole image on GL_TEXTURE_EXTERNAL_OES, decoded by the driver). Element (x, y, c)
// of plane i is byte x * u_pixel[i] + c * u_comp[i] of row y of texture u_plane<i> (R8UI, or
// with UNORM R8 unsigned normalised: an imported DMA-BUF plane sampled in place). ALPHA: the
// source has alpha. AFFINE_H / AFFINE_V: that axis reads one source pixel per output at an
// affine position (copies, mirrors, integer-ratio nearest and bilinear), with no tap tables.
inline constexpr const char* kSample = R"(
precision highp float;
precision highp int;
precision highp usampler2D;
precision highp isampler2D;
// Samplers default to lowp in fragment shaders, and drivers do fetch at that precision: tap
// positions above 2048 and the weights would come back as 16-bit floats.
precision highp sampler2D;

#if KIND == 5
uniform highp samplerExternalOES u_external;
#endif
#if UNORM
// Planes imported from DMA-BUFs: R8 unsigned normalised textures over the buffer's own bytes.
uniform sampler2D u_plane0;
uniform sampler2D u_plane1;
uniform sampler2D u_plane2;
uniform sampler2D u_plane3;
#define BYTE(t, p) floor(texelFetch(t, p, 0).r * 255.0 + 0.5)
#else
uniform usampler2D u_plane0;
uniform usampler2D u_plane1;
uniform usampler2D u_plane2;
uniform usampler2D u_plane3;
#define BYTE(t, p) float(texelFetch(t, p, 0).r)
#endif
uniform isampler2D u_first_h;
uniform isampler2D u_first_v;
uniform sampler2D u_taps_h;
uniform sampler2D u_taps_v;
uniform ivec4 u_pixel;
uniform ivec4 u_comp;
uniform ivec4 u_offsets;
uniform ivec2 u_shift;
uniform ivec2 u_origin;
uniform bool u_columns;
uniform ivec4 u_affine;  // AFFINE_H, AFFINE_V: source position = x + y * o.x, line = z + w * o.y
uniform vec2 u_luma;    // y_offset, y_scale
uniform vec4 u_chroma;  // rv, gu, gv, bu
out uvec4 o_rgba;

// Tap tables are 2D so that long axes fit: entry i lies at (i % 4096, i / 4096).
ivec2 entry(int i) { return ivec2(i & 4095, i >> 12); }

float byte0(int x, int y, int c) { return BYTE(u_plane0, ivec2(x * u_pixel.x + c * u_comp.x, y)); }
float byte1(int x, int y, int c) { return BYTE(u_plane1, ivec2(x * u_pixel.y + c * u_comp.y, y)); }
float byte2(int x, int y, int c) { return BYTE(u_plane2, ivec2(x * u_pixel.z + c * u_comp.z, y)); }
float byte3(int x, int y, int c) { return BYTE(u_plane3, ivec2(x * u_pixel.w + c * u_comp.w, y)); }

vec4 yuv(float y, float u, float v) {
  float l = (y - u_luma.x) * u_luma.y;
  float cu = u - 128.0;
  float cv = v - 128.0;
  vec3 rgb = vec3(l + u_chroma.x * cv, l - u_chroma.y * cu - u_chroma.z * cv, l + u_chroma.w * cu);
  return vec4(clamp(rgb, 0.0, 255.0), 255.0);
}

vec4 decode(ivec2 p) {
#if KIND == 5
  // texture(), not texelFetch: drivers apply their YUV conversion to filtered lookups (Mesa
  // lowers external YUV formats there); the texture filters NEAREST, so this is one texel.
  vec2 size = vec2(textureSize(u_external, 0));
  return vec4(texture(u_external, (vec2(p) + 0.5) / size).rgb * 255.0, 255.0);
#else
  if (KIND == 0) {
    return vec4(byte0(p.x, p.y, u_offsets.x), byte0(p.x, p.y, u_offsets.y), byte0(p.x, p.y, u_offsets.z),
                ALPHA ? byte0(p.x, p.y, u_offsets.w) : 255.0);
  }
  if (KIND == 1) {
    return vec4(byte0(p.x, p.y, 0), byte1(p.x, p.y, 0), byte2(p.x, p.y, 0), ALPHA ? byte3(p.x, p.y, 0) : 255.0);
  }
  if (KIND == 2) {
    int m = p.x & ~1;
    return yuv(byte0(m, p.y, (p.x & 1) == 1 ? u_offsets.z : u_offsets.x), byte0(m, p.y, u_offsets.y),
               byte0(m, p.y, u_offsets.w));
  }
  ivec2 c = p >> u_shift;
  if (KIND == 3) return yuv(byte0(p.x, p.y, 0), byte1(c.x, c.y, u_offsets.x), byte1(c.x, c.y, u_offsets.y));
  return yuv(byte0(p.x, p.y, 0), byte1(c.x, c.y, 0), byte2(c.x, c.y, 0));
#endif
}

void main() {
  ivec2 o = ivec2(gl_FragCoord.xy);
#if AFFINE_H
  int h0 = 0, h1 = 1;
#else
  int h0 = texelFetch(u_first_h, entry(o.x), 0).r;
  int h1 = texelFetch(u_first_h, entry(o.x + 1), 0).r;
#endif
#if AFFINE_V
  int v0 = 0, v1 = 1;
#else
  int v0 = texelFetch(u_first_v, entry(o.y), 0).r;
  int v1 = texelFetch(u_first_v, entry(o.y + 1), 0).r;
#endif
  vec4 sum = vec4(0.0);
  for (int v = v0; v < v1; ++v) {
#if AFFINE_V
    int line = u_affine.z + u_affine.w * o.y;
    float vw = 1.0;
#else
    vec2 vt = texelFetch(u_taps_v, entry(v), 0).rg;
    int line = int(vt.x);
    float vw = vt.y;
#endif
    vec4 acc = vec4(0.0);
    for (int h = h0; h < h1; ++h) {
#if AFFINE_H
      int position = u_affine.x + u_affine.y * o.x;
      float hw = 1.0;
#else
      vec2 ht = texelFetch(u_taps_h, entry(h), 0).rg;
      int position = int(ht.x);
      float hw = ht.y;
#endif
      acc += hw * decode(u_origin + (u_columns ? ivec2(line, position) : ivec2(position, line)));
    }
    sum += vw * acc;
  }
  o_rgba = floatBitsToUint(sum);
}
)";

// Modes (MODE): 0 RGB(A) channels (u_select: the RGBA channel of element j of a pixel),
// 1 grey (luma), 2 Y of YUV, 3 chroma of a 2x2 cell (u_select: 0 = U, 1 = V), 4 YUYV.
// DTYPE: 0 u8, 1 i8, 2 f16, 3 f32; float elements are v * u_scale[j] + u_bias[j]. CHANNELS:
// elements per pixel in the plane written. TEXEL: bytes of the plane row per fragment: 16 into
// the RGBA32UI target that is read back, or 4 (RGBA8) or 1 (R8) into a destination imported as
// a render target (a DMA-BUF or memfd, DRM_FORMAT_ABGR8888 or DRM_FORMAT_R8), whose unsigned
// normalised channels store the bytes written as b / 255 exactly.
inline constexpr const char* kPack = R"(
precision highp float;
precision highp int;
precision highp usampler2D;

uniform usampler2D u_image;
uniform ivec4 u_content;  // x, y, width, height of the resampled content
uniform vec4 u_pad;
uniform ivec4 u_select;
uniform int u_width;      // pixels per row of this plane
uniform vec4 u_scale;
uniform vec4 u_bias;
uniform vec3 u_weights;   // kr, kg, kb
uniform vec4 u_encode;    // y_offset, 1 / y_scale, 1 / (2 (1 - kb) c_scale), 1 / (2 (1 - kr) c_scale)
#if TEXEL == 16
out uvec4 o_bytes;
#else
out vec4 o_texel;
#endif

vec4 pixel(int x, int y) {
  ivec2 q = ivec2(x, y) - u_content.xy;
  if (q.x < 0 || q.y < 0 || q.x >= u_content.z || q.y >= u_content.w) return u_pad;
  return uintBitsToFloat(texelFetch(u_image, q, 0));
}

float luma(vec4 c) { return dot(c.rgb, u_weights); }

float chroma(vec4 mean, int v) {
  float l = luma(mean);
  return 128.0 + (v == 0 ? (mean.b - l) * u_encode.z : (mean.r - l) * u_encode.w);
}

float value(int n, int y, out int j) {
  int x = n / CHANNELS;
  j = n - x * CHANNELS;
  x = min(x, u_width - 1);
  if (MODE == 1) return luma(pixel(x, y));
  if (MODE == 2 || (MODE == 4 && j == 0)) return u_encode.x + luma(pixel(x, y)) * u_encode.y;
  if (MODE == 3) {
    vec4 sum = pixel(2 * x, 2 * y) + pixel(2 * x + 1, 2 * y) + pixel(2 * x, 2 * y + 1) + pixel(2 * x + 1, 2 * y + 1);
    return chroma(sum * 0.25, u_select[j]);
  }
  int e = x & ~1;
  return chroma((pixel(e, y) + pixel(e + 1, y)) * 0.5, x & 1);
}

// One element of the output dtype from a 0..255 value of output channel j.
uint encode(float v, int j) {
#if DTYPE < 2
  uint b = uint(roundEven(clamp(v, 0.0, 255.0)));
  return DTYPE == 1 ? b ^ 128u : b;
#else
  float f = v * u_scale[j] + u_bias[j];
  return DTYPE == 3 ? floatBitsToUint(f) : packHalf2x16(vec2(f, 0.0));
#endif
}

const int kSize = DTYPE < 2 ? 1 : (DTYPE == 2 ? 2 : 4);  // bytes per element
const int kPerWord = 4 / kSize;
const int kElements = TEXEL / kSize;

void main() {
  ivec2 o = ivec2(gl_FragCoord.xy);
  int n0 = o.x * kElements;
#if MODE == 0
  // The fragment's elements come from a few consecutive pixels: fetch each once. When whole
  // pixels fill a fragment its first element is channel 0, which the compiler folds.
  int x0 = n0 / CHANNELS;
  const bool kAligned = kElements % CHANNELS == 0;
  int first = kAligned ? 0 : n0 - x0 * CHANNELS;
  const int kSpan = kAligned ? kElements / CHANNELS : (kElements + 2 * CHANNELS - 2) / CHANNELS;
  vec4 px[kSpan];
  for (int i = 0; i < kSpan; ++i) px[i] = pixel(min(x0 + i, u_width - 1), o.y);
#endif
  uvec4 words = uvec4(0u);
  for (int k = 0; k < kElements; ++k) {
    int j;
#if MODE == 0
    int e = first + k;
    int xi = e / CHANNELS;
    j = e - xi * CHANNELS;
    float v = px[xi][u_select[j]];
#else
    float v = value(n0 + k, o.y, j);
#endif
    words[k / kPerWord] |= encode(v, j) << uint(8 * kSize * (k % kPerWord));
  }
#if TEXEL == 16
  o_bytes = words;
#else
  // unpackUnorm4x8 is GLSL ES 3.10: the bytes of word 0, lowest first, each as b / 255.
  o_texel = vec4((uvec4(words.x) >> uvec4(0u, 8u, 16u, 24u)) & 255u) / 255.0;
#endif
}
)";

}  // namespace memhal::detail::gl::shaders
