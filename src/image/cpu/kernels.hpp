// The SIMD kernels of the CPU image backend. Each is compiled once per instruction set
// (Highway dynamic dispatch: SSE4, AVX2, AVX-512 on x86; NEON, SVE on ARM; a scalar lane
// elsewhere) and the best one the running CPU supports is chosen at the first call.
// Rows are float, 0..255 per channel; all pointers are to distinct, non-overlapping rows.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "image/image_ref.hpp"

namespace memhal::detail::kernels {

/// out[i] = in[index[i]] + weight[i] * (in[index[i] + 1] - in[index[i]]).
void resample_2tap(const float* in, const int32_t* index, const float* weight, float* out, int64_t n);
/// resample_2tap with index[i] = 2 i (each output's two taps decoded side by side).
void resample_pairs(const float* in, const float* weight, float* out, int64_t n);
/// out[i] = in[index[i]].
void resample_1tap(const float* in, const int32_t* index, float* out, int64_t n);
/// out[i] = a[i] + wb * (b[i] - a[i]); `out` may be `a` or `b`.
void blend_2(const float* a, const float* b, float wb, float* out, int64_t n);
/// out[i] = w * in[i] (first) or out[i] + w * in[i].
void accumulate(const float* in, float w, float* out, int64_t n, bool first);
/// Area taps within 8 positions: out[o] = sum of in[start[o] + k] * window[8 * o + k], k < 8
/// (weights past an output's taps are 0; in[start[o] + 7] must be readable).
void resample_window(const float* in, const int32_t* start, const float* window, float* out, int64_t n);

/// Semi-planar YUV row with horizontally halved chroma (nv12, nv21, nv16): `uv` points at the
/// chroma pair of pixel 0 (pixel 0 is even); `vu` when V comes first.
void semi_planar_to_rgb(const uint8_t* y, const uint8_t* uv, bool vu, int64_t n, const ColorCoeffs& c, float* r,
                        float* g, float* b);
/// A 2:1 downscale of two semi-planar lines with halved chroma, as semi_planar_pairs_q6 in
/// floats and in the float path's order: each pixel decoded as semi_planar_to_rgb does, line a
/// blended with line b by wv (as blend_2), then pixels 2i and 2i + 1 by weight[i] (as
/// resample_pairs); R, G and B rows of n outputs, in one pass.
void semi_planar_pairs(const uint8_t* ya, const uint8_t* uva, const uint8_t* yb, const uint8_t* uvb, bool vu,
                       const float* weight, float wv, int64_t n, const ColorCoeffs& c, float* r, float* g, float* b);
/// semi_planar_pairs of two packed 4:2:2 lines (`a`, `b` at pixel 0, which is even; pos: the
/// byte offsets of Y0, U, Y1 and V in a macropixel, as split_packed_422): output i blends
/// macropixel i's two pixels.
void packed_422_pairs(const uint8_t* a, const uint8_t* b, const int* pos, const float* weight, float wv, int64_t n,
                      const ColorCoeffs& c, float* r, float* g, float* bl);
/// semi_planar_pairs from per-pixel bytes: a and b are each line's Y, U and V rows of 2n pixels
/// (as read_row_yuv_bytes gives them), output i blending pixels 2i and 2i + 1.
void yuv_pairs(const uint8_t* const* a, const uint8_t* const* b, const float* weight, float wv, int64_t n,
               const ColorCoeffs& c, float* r, float* g, float* bl);
/// Semi-planar YUV row with full-width chroma (nv24).
void semi_planar_444_to_rgb(const uint8_t* y, const uint8_t* uv, int64_t n, const ColorCoeffs& c, float* r, float* g,
                            float* b);
/// Per-pixel Y, U and V rows (chroma already at full resolution). `affine`: null (plain 0..255
/// floats), or R, G, B scales then R, G, B biases applied after clamping (normalised outputs).
void planar_yuv_to_rgb(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const ColorCoeffs& c, float* r,
                       float* g, float* b, const float* affine = nullptr);
/// planar_yuv_to_rgb (plain 0..255 floats) then accumulate(weight w) of each channel into r, g
/// and b, in one pass.
void yuv_to_rgb_accumulate(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const ColorCoeffs& c,
                           float w, float* r, float* g, float* b, bool first);
/// planar_yuv_to_rgb's outputs normalised by `affine` (not null) as IEEE halves, rounded to
/// nearest even as half_from_float rounds the float outputs.
void planar_yuv_to_half(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const ColorCoeffs& c,
                        uint16_t* r, uint16_t* g, uint16_t* b, const float* affine);
/// Packed 4:2:2 row; `order` 0 = yuyv, 1 = uyvy, 2 = vyuy; pixel 0 is even.
void packed_422_to_rgb(const uint8_t* p, int order, int64_t n, const ColorCoeffs& c, float* r, float* g, float* b);
/// Nearest-sampled semi-planar row with horizontally halved chroma: pixel i is luma
/// y[index[i]] with the chroma pair at uv + (index[i] & ~1). Samples are read 4 bytes at a time:
/// indices above `limit` (whose 4 bytes would leave the row) are read one byte at a time.
void sampled_semi_planar_to_rgb(const uint8_t* y, const uint8_t* uv, bool vu, const int32_t* index, int64_t n,
                                int32_t limit, const ColorCoeffs& c, float* r, float* g, float* b);
/// Nearest-sampled packed 4:2:2 row (`order` as packed_422_to_rgb): pixel i is pixel index[i].
void sampled_packed_422_to_rgb(const uint8_t* p, int order, const int32_t* index, int64_t n, const ColorCoeffs& c,
                               float* r, float* g, float* b);
/// One stream of byte shuffles that picks samples out of a row, 8 outputs per chunk: chunk k
/// loads `windows` 16-byte windows from row + base[k]; window w's control (16 bytes at
/// control[(k * windows + w) * 16]) names, per output slot, the byte of that window it takes
/// (0x80: none). The windows' picks ORed fill the chunk's 16 slots.
///
/// The same picks two chunks at a time for 256-bit shuffles (AVX2), where they fit: pair p
/// (chunks 2p and 2p + 1) loads `pair_windows` windows, the lower 128-bit block of window w
/// from row + pair_base[p] + 16 w and the upper block from 16 bytes further on (one 32-byte
/// load), or with `pair_split` from row + pair_upper[p] + 16 w (strides that spread a pair over
/// more than 4 windows that way); control (32 bytes a window, at
/// pair_control[(p * pair_windows + w) * 32]) as above, per block. The lower block's slots take
/// chunk 2p's slots, the upper block's chunk 2p + 1's, its slots 0..7 moved to 8..15 where
/// the stream leaves 8..15 unused (`pair_packed`), so that each 8-slot group of the pair is 16
/// outputs of one channel after a 64-bit permute. pair_base[p] < 0: the pair does not fit;
/// pick its chunks one by one. `pair_shared`: the pairs load the windows of the stream before
/// (same bases, split and window count), so that the two streams' picks share their loads.
struct ShuffleStream {
  int windows = 0;
  std::vector<int32_t> base;
  std::vector<uint8_t> control;
  int pair_windows = 0;
  bool pair_packed = false;
  bool pair_split = false;
  bool pair_shared = false;
  std::vector<int32_t> pair_base;
  std::vector<int32_t> pair_upper;
  std::vector<uint8_t> pair_control;
};
/// The same picks straight into 32-bit lanes, for the normalised one-pass kernels (AVX2): no
/// bytes to widen after the shuffles. Half h (outputs 8 h .. 8 h + 7) reads `windows` 32-byte
/// windows from each stream s it uses: window w's lower 128-bit block (outputs 8 h .. 8 h + 3)
/// from rows[s] + lower[s][h] + 16 w, its upper block (8 h + 4 .. 8 h + 7) from rows[s] +
/// upper[s][h] + 16 w; from half `contiguous_from` on, upper = lower + 16 in every stream (one
/// 32-byte load a window). Channel c (0 Y, 1 U, 2 V) comes from stream stream[c] (semi-planar:
/// 0, 1, 1; packed 4:2:2: 0, 0, 0, the second stream unused); its control (32 bytes a window,
/// at control[c][(h * windows + w) * 32]) names for each byte of the 8 lanes the byte of the
/// window's block it takes (0x80: none, so each lane is its output's byte zero-extended), and
/// the windows' picks ORed are 8 outputs of c. reach[s][h]: the bytes from rows[s] that halves
/// 0 .. h load at most. No halves (halves 0) where a lane's 4 outputs spread over more than 64
/// bytes.
struct LanePicks {
  int64_t halves = 0;
  int windows = 0;
  int64_t contiguous_from = 0;
  std::array<int, 3> stream{};
  std::array<std::vector<int32_t>, 2> lower, upper;
  std::array<std::vector<int64_t>, 2> reach;
  std::array<std::vector<uint8_t>, 3> control;
};
/// Nearest-sampled YUV bytes by 16-bit permutes. Op o < 2 of chunk k reads the 128 bytes at
/// rows[stream[o]] + base[o][k] (none at or past limits[stream[o]]) and picks 32 words, lane l
/// taking word (w & 63) of the window for its control word w = control[o][32 k + l]:
///  * 16 outputs per chunk: lane l's byte is the word's high byte when w & 0x800, else its low
///    one; lanes 0..15 are outputs 16 k .. 16 k + 15 of channel lo[o] (0 Y, 1 U, 2 V), lanes
///    16..31 those of channel hi[o] (-1: unused);
///  * 32 outputs per chunk (semi-planar): op 0's lanes are the bytes, as above, of outputs
///    32 k .. 32 k + 31 of channel lo[0]; op 1's words are chroma pairs, their low bytes the
///    outputs of channel lo[1] and their high bytes those of hi[1];
///  * `macropixels` (packed 4:2:2, 16 outputs per chunk, op 0 only): lane l < 16 takes the
///    4-byte macropixel (w0 & 31) of the window for control words w0, w1 = control[0][32 k +
///    2 l], [32 k + 2 l + 1]; output 16 k + l is Y = byte w1 / 8 of it, U = byte u_byte and
///    V = byte v_byte.
/// AVX-512's vpermt2w (vpermt2d for macropixels) does an op's picks in one instruction
/// (word_picks_fast); elsewhere the shuffle windows of ShuffleStream are faster.
struct WordPicks {
  int64_t chunks = 0;
  int outputs = 16;
  bool macropixels = false;
  int u_byte = 0, v_byte = 0;
  std::array<int, 2> stream{}, lo{}, hi{};
  std::array<std::vector<int32_t>, 2> base;
  std::array<std::vector<uint16_t>, 2> control;
};
/// Whether the running instruction set picks by word permutes (AVX-512).
bool word_picks_fast();
/// The first plan.outputs * plan.chunks Y, U and V bytes of a WordPicks plan.
void word_picked_yuv_bytes(const uint8_t* const* rows, const WordPicks& plan, const int64_t* limits, uint8_t* y,
                           uint8_t* u, uint8_t* v);
/// Interleaved 8-bit pixels of `channels` bytes to float rows; `offsets` give the byte of R, G,
/// B and A within a pixel (A may be null: not wanted).
void bytes_to_rgb(const uint8_t* p, int channels, const int* offsets, int64_t n, float* r, float* g, float* b,
                  float* a);

/// out[i] = in[i] * scale + bias, contiguous; with `stream`, written around the caches
/// (non-temporal stores: call `flush_streams` before another thread reads `out`).
void store_f32(const float* in, float scale, float bias, float* out, int64_t n, bool stream);
/// out[i] = half(in[i] * scale + bias), rounded to nearest even, contiguous.
void store_f16(const float* in, float scale, float bias, uint16_t* out, int64_t n);
/// One float to IEEE half, rounded to nearest even (subnormals, infinities and NaN kept).
uint16_t half_from_float(float f);
/// memcpy written around the caches, as store_f32 with `stream`.
void stream_copy(const uint8_t* in, uint8_t* out, int64_t n);
/// `count` copies of the `size`-byte value at `value` (size 1, 2 or 4) from `out` on. On x86-64
/// a string store (rep stos), which the CPU writes as whole lines without first reading what
/// they held, as memset does for one byte; vector stores elsewhere (and under the sanitizers,
/// which do not see into assembly).
void fill_repeated(void* out, const void* value, int size, int64_t count);
/// Orders this thread's non-temporal stores before its later stores (a fence on x86).
void flush_streams();
/// out[i] = clamp(round(in[i]), 0, 255) + bias (bias 0 for u8, -128 for i8), contiguous.
void store_8bit(const float* in, int bias, uint8_t* out, int64_t n);
/// Interleaves 3 or 4 float rows into 8-bit pixels (rounded, clamped, plus bias); `staging`
/// holds 4 * n bytes.
void store_8bit_interleaved(const float* const* in, int channels, int bias, uint8_t* staging, uint8_t* out, int64_t n);

// ---- The integer path of 8-bit outputs: values in Q6 (int16, value * 64, 0 .. 16320) ----

/// Colour coefficients of the integer path, from ColorCoeffs by `fixed_coeffs`.
struct FixedCoeffs {
  uint16_t y_mul = 0;  // luma Q6 = MulHigh(y * 257, y_mul) - y_sub
  int16_t y_sub = 0;
  int16_t rv = 0;  // chroma terms, Q6 = MulHigh((c - 128) << 8, coefficient); B adds (u - 128) << 6 too
  int16_t gu = 0;
  int16_t gv = 0;
  int16_t bu_minus_1 = 0;
};
FixedCoeffs fixed_coeffs(const ColorCoeffs& c);

/// Per-pixel Y, U and V bytes straight to interleaved 8-bit pixels of `channels` (3 or 4)
/// bytes: yuv_to_rgb_q6 then q6_to_8bit (XOR `flip`) and interleave_8bit in one pass; byte j
/// of a pixel is R, G, B or A (255) for order[j] = 0, 1, 2 or 3.
void yuv_to_8bit_pixels(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const FixedCoeffs& c,
                        const int* order, int channels, uint8_t flip, uint8_t* out);
/// Per-pixel Y, U and V bytes to Q6 R, G and B rows.
void yuv_to_rgb_q6(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const FixedCoeffs& c, int16_t* r,
                   int16_t* g, int16_t* b);
/// A 2:1 downscale of two semi-planar lines with halved chroma (nv12, nv21, nv16; `vu` when V
/// comes first; pixel 0 even): output i of each line blends its pixels 2i and 2i + 1 by
/// weight[i] (Q15, as resample_pairs_q6), then line a's with line b's by wv (as blend_q6), each
/// pixel decoded as yuv_to_rgb_q6 does; Q6 R, G and B rows of n outputs, in one pass.
void semi_planar_pairs_q6(const uint8_t* ya, const uint8_t* uva, const uint8_t* yb, const uint8_t* uvb, bool vu,
                          const int16_t* weight, int16_t wv, int64_t n, const FixedCoeffs& c, int16_t* r, int16_t* g,
                          int16_t* b);
/// semi_planar_pairs_q6 of two packed 4:2:2 lines (as packed_422_pairs): output i blends
/// macropixel i's two pixels.
void packed_422_pairs_q6(const uint8_t* a, const uint8_t* b, const int* pos, const int16_t* weight, int16_t wv,
                         int64_t n, const FixedCoeffs& c, int16_t* r, int16_t* g, int16_t* bl);
/// yuv_to_rgb_q6_accumulate of a packed 4:2:2 row's n pixels (pos: the byte offsets of Y0, U,
/// Y1 and V in a macropixel, as split_packed_422), without splitting the bytes first.
void packed_422_to_rgb_q6_accumulate(const uint8_t* row, const int* pos, int64_t n, const FixedCoeffs& c, int16_t w,
                                     int16_t* r, int16_t* g, int16_t* b, bool first);
/// semi_planar_pairs_q6 from per-pixel bytes: a and b are each line's Y, U and V rows of 2n
/// pixels (as read_row_yuv_bytes gives them), output i blending pixels 2i and 2i + 1.
void yuv_pairs_q6(const uint8_t* const* a, const uint8_t* const* b, const int16_t* weight, int16_t wv, int64_t n,
                  const FixedCoeffs& c, int16_t* r, int16_t* g, int16_t* bl);
/// yuv_to_rgb_q6 then accumulate_q6(weight w) of each channel into r, g and b, in one pass.
void yuv_to_rgb_q6_accumulate(const uint8_t* y, const uint8_t* u, const uint8_t* v, int64_t n, const FixedCoeffs& c,
                              int16_t w, int16_t* r, int16_t* g, int16_t* b, bool first);
/// Nearest-sampled YUV bytes by shuffles: per chunk k < `chunks`, stream s picks from rows[s]
/// (reading no byte at or past limits[s] from it) into slots 16 s .. 16 s + 15; Y, U and V of
/// the chunk's 8 pixels are the 8 slots from slots[0], slots[1] and slots[2], written to
/// y, u and v + 8 k. Two chunks at a time where the stream has pairs and the vectors are 256 bits.
void shuffled_yuv_bytes(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                        const int* slots, int64_t chunks, uint8_t* y, uint8_t* u, uint8_t* v);
/// Whether the one-pass shuffle kernels below serve on this CPU (AVX2), given pairs in their layout.
bool shuffles_in_one_pass();
/// shuffled_yuv_bytes then yuv_to_8bit_pixels in one pass, the bytes kept in registers, for the
/// stream pairs (16 outputs each) from the first on as long as they fit, where the vectors are
/// AVX2's and the pixels RGB, BGR, RGBA or BGRA: returns how many outputs it wrote (0 where it
/// does not serve). `ahead` (null: none): per stream, how far from rows[s] the same bytes of the
/// row that the next call reads lie; each pair asks for its lines there as it goes (the next
/// row's loads spread over this row's work rather than all at once before it).
int64_t shuffled_yuv_to_8bit_pixels(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                    const int64_t* ahead, const int* slots, int64_t chunks, const FixedCoeffs& c,
                                    const int* order, int channels, uint8_t flip, uint8_t* out);
/// The same into planar 8-bit rows: R, G and B (XOR `flip`) to r, g and b.
int64_t shuffled_yuv_to_8bit_planes(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                                    const int64_t* ahead, const int* slots, int64_t chunks, const FixedCoeffs& c,
                                    uint8_t flip, uint8_t* r, uint8_t* g, uint8_t* b);
/// shuffled_yuv_bytes then planar_yuv_to_rgb (or planar_yuv_to_half) with `affine` (not null)
/// in one pass, as shuffled_yuv_to_8bit_pixels: returns how many outputs it wrote.
int64_t shuffled_yuv_to_planar(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                               const int64_t* ahead, const int* slots, int64_t chunks, const ColorCoeffs& c,
                               const float* affine, float* r, float* g, float* b);
int64_t shuffled_yuv_to_planar(const uint8_t* const* rows, const ShuffleStream* streams, const int64_t* limits,
                               const int64_t* ahead, const int* slots, int64_t chunks, const ColorCoeffs& c,
                               const float* affine, uint16_t* r, uint16_t* g, uint16_t* b);
/// shuffled_yuv_to_planar from a LanePicks plan: the halves from the first on while their loads
/// stay within limits, each asking for its lines at `ahead` as it goes; returns how many outputs
/// it wrote (8 a half; 0 where it does not serve: not AVX2, or a plan without halves).
int64_t lane_yuv_to_planar(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits,
                           const int64_t* ahead, const ColorCoeffs& c, const float* affine, float* r, float* g,
                           float* b);
int64_t lane_yuv_to_planar(const uint8_t* const* rows, const LanePicks& plan, const int64_t* limits,
                           const int64_t* ahead, const ColorCoeffs& c, const float* affine, uint16_t* r, uint16_t* g,
                           uint16_t* b);
/// out[i] = a[i] + (b[i] - a[i]) * w / 32768, w in [0, 32768).
void blend_q6(const int16_t* a, const int16_t* b, int16_t w, int16_t* out, int64_t n);
/// out[i] = in[index[i]] + (in[index[i] + 1] - in[index[i]]) * weight[i] / 32768.
void resample_2tap_q6(const int16_t* in, const int32_t* index, const int16_t* weight, int16_t* out, int64_t n);
/// resample_2tap_q6 with index[i] = 2 i (a downscale that decoded each output's two taps side
/// by side): out[i] = in[2 i] + (in[2 i + 1] - in[2 i]) * weight[i] / 32768, in vectors.
void resample_pairs_q6(const int16_t* in, const int16_t* weight, int16_t* out, int64_t n);
/// The U and V bytes of pixels 0 .. n - 1 of a semi-planar row with horizontally halved chroma
/// (`uv` at pixel 0's pair, pixel 0 even; `vu` when V comes first), one byte per pixel.
void split_chroma_pairs(const uint8_t* uv, bool vu, int64_t n, uint8_t* u, uint8_t* v);
/// The Y, U and V bytes of pixels 0 .. n - 1 of a packed 4:2:2 row (`row` at pixel 0, pixel 0
/// even; pos[0..3]: the byte offsets of Y0, U, Y1 and V in a macropixel), one byte per pixel.
void split_packed_422(const uint8_t* row, const int* pos, int64_t n, uint8_t* y, uint8_t* u, uint8_t* v);
/// out[i] = round(in[i] * w / 32768) (first) or out[i] + that; w in [0, 32768).
void accumulate_q6(const int16_t* in, int16_t w, int16_t* out, int64_t n, bool first);
/// Area taps: out[o] = round(sum of in[index[t]] * weight[t] / 32768), t in [first[o], first[o + 1]).
void resample_taps_q6(const int16_t* in, const int32_t* first, const int32_t* index, const int16_t* weight,
                      int16_t* out, int64_t n);
/// Area taps within 8 positions: out[o] = round(sum of in[start[o] + k] * window[8 o + k] / 32768),
/// k < 8 (weights past an output's taps are 0; in[start[o] + 7] must be readable).
void resample_window_q6(const int16_t* in, const int32_t* start, const int16_t* window, int16_t* out, int64_t n);
/// out[i] = round(in[i] / 64) XOR flip (0x80 makes i8 of x - 128).
void q6_to_8bit(const int16_t* in, uint8_t flip, uint8_t* out, int64_t n);
/// Interleaves 3 or 4 byte rows into pixels.
void interleave_8bit(const uint8_t* const* in, int channels, uint8_t* out, int64_t n);
/// q6_to_8bit of Q6 R, G, B and A rows (`a` null: opaque) and interleave_8bit of the bytes in
/// one pass: byte j of a pixel is R, G, B or A for order[j] = 0, 1, 2 or 3 (as
/// yuv_to_8bit_pixels), `channels` 3 or 4.
void q6_to_8bit_pixels(const int16_t* r, const int16_t* g, const int16_t* b, const int16_t* a, int64_t n,
                       const int* order, int channels, uint8_t flip, uint8_t* out);

}  // namespace memhal::detail::kernels
