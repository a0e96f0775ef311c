// The CPU backend of ImageProcessor: one pass over the destination, row by row on a thread
// pool. Each source line the output needs is decoded once (SIMD per format), resampled
// horizontally into a small per-worker cache, blended vertically and written in the
// destination's format; nothing is allocated once a geometry has been seen.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "image/cpu/pixel_io.hpp"
#include "image/cpu/resample_plan.hpp"
#include "image/cpu/row_bands.hpp"
#include "image/cpu/thread_pool.hpp"
#include "image/image_ref.hpp"

namespace memhal::detail {

class CpuConverter {
 public:
  /// `threads` as ThreadPool::create.
  static Result<std::unique_ptr<CpuConverter>> create(unsigned threads);

  unsigned threads() const noexcept { return pool_->size(); }

  /// Converts; the caller has validated formats, sizes, the crop and the options. Not
  /// reentrant (the caller serialises).
  void run(const ImageRef& src, const ImageRef& dst, const Rect& crop, const ConvertOptions& options);

 private:
  struct Scratch {
    std::vector<float> line;   // two decoded source lines, 4 channels, plus a guard element
    std::vector<float> cache;  // two horizontally resampled lines
    std::array<int64_t, 2> tags{-1, -1};
    std::vector<float> rows;     // two destination rows (4:2:0 outputs write pairs), one of padding
    std::vector<float> scratch;  // one destination row of one channel
    std::vector<uint8_t> staging;
    // The integer path: two cached Q6 lines, a decoded line, a blended row, 8-bit rows.
    std::vector<int16_t> q6_lines;
    std::array<int64_t, 2> q6_tags{-1, -1};
    std::vector<int16_t> q6_decoded;
    std::vector<int16_t> q6_row;
    std::vector<int16_t> q6_sum;  // an area row's source lines summed
    std::vector<uint8_t> bytes;
  };
  struct Key {
    Rect crop;
    Flip flip;
    Rotation rotation;
    ResizeMode resize;
    Interpolation interpolation;
    int64_t dst_w, dst_h;
    bool operator==(const Key& o) const;
  };
  // Everything worked out for one geometry, kept across calls: a batch of frames of a few
  // sizes (convert_batch) finds each one's plan again.
  struct Plan {
    Key key{};
    Geometry geometry;
    bool horizontal_identity = false;
    bool cache_lines = false;
    SamplePlan sample;  // nearest sampling along rows, for the format it names
    bool sample_stale = true;
    // The integer path: positions of a line to decode (empty: all of them), then, unless
    // `q6_direct` (the decoded pixels are the outputs), two-tap resampling from those, or an
    // area's taps along the row (horizontal.first/index, q6_weight per tap in Q15).
    std::vector<int32_t> q6_positions;
    bool q6_direct = false;
    bool q6_pairs = false;         // each output's two taps decoded side by side (q6_index[o] = 2 o)
    bool q6_every_column = false;  // q6_positions is 0, 1, ..., positions - 1 (a 2:1 downscale)
    bool q6_chroma_pairs = false;  // every pair (p, p + 1) shares its chroma (p even)
    std::vector<int32_t> q6_index;
    std::vector<int16_t> q6_weight;
    std::vector<int32_t> q6_start;     // an area's taps as windows of 8: lowest position,
    std::vector<int16_t> q6_window;    // and 8 weights per output (empty: taps spread wider)
    std::vector<float> window;         // the float path's windows, as q6_window
    std::vector<int16_t> q6_vertical;  // vertical weights in Q15 (per tap for an area)
    SamplePlan q6_sample;              // the picks of q6_positions, for the integer and the float path
    bool q6_sample_stale = true;
    void build_q6();
    void pick_q6_positions(PixelFormat format);
  };
  static constexpr std::size_t kPlans = 8;

  explicit CpuConverter(std::unique_ptr<ThreadPool> pool);
  static void task(void* self, unsigned worker, int task);
  void prepare(const ImageRef& src, const ImageRef& dst, const Rect& crop, const ConvertOptions& options);
  void process(Scratch& s, int task);
  void process_q6(Scratch& s, int task);
  bool write_q6_pixels(Scratch& s, int64_t y, int64_t r);
  bool write_q6_planes(Scratch& s, int64_t y, int64_t r);
  const int16_t* q6_line(Scratch& s, int64_t line, int64_t keep);
  const int16_t* q6_area_row(Scratch& s, int64_t r);
  const int16_t* q6_pairs_row(Scratch& s, int64_t r);
  const int16_t* q6_picked_pairs_row(Scratch& s, int64_t r);
  const int16_t* q6_chroma_pairs_row(Scratch& s, int64_t r);
  bool picked_line_pair(Scratch& s, int64_t line, bool both, const SamplePlan& plan, const uint8_t* a[3],
                        const uint8_t* b[3]);
  void resample_q6(int16_t* in, int64_t n, int16_t* out) const;
  void compose_row(Scratch& s, int64_t y, const RgbaRows& row);
  bool write_direct(Scratch& s, int64_t y, const RgbaRows& row);
  int64_t prefetch_next(int64_t r, const SamplePlan* reads = nullptr);
  int64_t next_bar_rows(int64_t y, int64_t y1, int64_t written, bool& fill);
  const float* cached_line(Scratch& s, int64_t line, int64_t keep);
  void resample_line(Scratch& s, int64_t line, float* out);
  RgbaRows decode_line(Scratch& s, int64_t line, int slot);
  void resample(const RgbaRows& raw, const RgbaRows& target);
  void blend_then_resample(Scratch& s, int64_t line, float w, const RgbaRows& out);

  std::unique_ptr<ThreadPool> pool_;
  std::vector<Scratch> scratch_;
  std::vector<std::unique_ptr<Plan>> plans_;  // most recently used first
  Plan* plan_ = nullptr;                      // the current one
  bool sampled_ = false;
  bool copy_bars_ = false;               // padding rows are copied from the first one written
  bool direct_ = false;                  // planned rows are written to the destination by the conversion
  bool pairs_ = false;                   // float rows decode only each output's two taps
  bool q6_ = false;                      // 8-bit output by the integer path
  bool q6_pixels_ = false;               // ... whose one-line rows go from YUV bytes to pixels in one pass
  bool q6_planes_ = false;               // ... and planar 8-bit ones, straight to the planes
  const std::byte* last_dst_ = nullptr;  // the previous call's destination (cache guess)

  // State of the run in progress.
  const ImageRef* src_ = nullptr;
  const ImageRef* dst_ = nullptr;
  ColorCoeffs coeffs_{};
  kernels::FixedCoeffs fixed_{};
  uint8_t flip_ = 0;               // 0x80 for i8 outputs
  std::array<uint8_t, 4> pad8_{};  // the bars' bytes per output channel (i8 flipped)
  WriteParams params_{};
  std::array<float, 4> pad_{};
  bool alpha_ = false;       // decode source alpha
  bool fill_alpha_ = false;  // destination wants alpha the source lacks
  int channels_ = 3;
  RowBands bands_;  // the destination's rows among the pool's tasks
};

}  // namespace memhal::detail
