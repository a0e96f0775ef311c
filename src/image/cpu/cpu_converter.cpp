#include "image/cpu/cpu_converter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "image/cpu/kernels.hpp"

namespace memhal::detail {
namespace {

constexpr int64_t kStreamBytes = int64_t{2} << 20;

// Pixels [from, to) of an interleaved 8-bit row set to `pad` (channels bytes).
void pad_pixels(uint8_t* row, int64_t from, int64_t to, int channels, const uint8_t* pad) {
  for (int64_t x = from; x < to; ++x) std::memcpy(row + x * channels, pad, static_cast<std::size_t>(channels));
}

// Destinations the integer path writes: 8-bit RGB-family pixels, planes or grey, dense.
bool q6_writable(const ImageRef& dst) {
  switch (dst.format) {
    case PixelFormat::Rgb:
    case PixelFormat::Bgr:
    case PixelFormat::Rgba:
    case PixelFormat::Bgra: {
      const int64_t channels = pixel_format_info(dst.format)->channels;
      return dst.plane_count == 1 && dst.planes[0].comp == 1 && dst.planes[0].pixel == channels;
    }
    case PixelFormat::Grey:
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba:
      for (int i = 0; i < dst.plane_count; ++i) {
        if (dst.planes[i].pixel != 1) return false;
      }
      return true;
    default: return false;
  }
}

bool pairs_rows(PixelFormat format) {
  return format == PixelFormat::Nv12 || format == PixelFormat::I420;
}

template <class T>
void grow(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
}

WriteParams write_params(PixelFormat format, const ConvertOptions& options) {
  WriteParams p;
  const auto info = *pixel_format_info(format);
  p.channels = info.yuv ? 3 : info.channels;
  if (!info.yuv) std::copy(info.order.begin(), info.order.end(), p.order.begin());
  if (options.swap_rb) {
    for (int& c : p.order) c = c == 0 ? 2 : c == 2 ? 0 : c;
  }
  for (int j = 0; j < 4; ++j) {
    p.scale[j] = 1.0f / (255.0f * options.std[j]);
    p.bias[j] = -options.mean[j] / options.std[j];
  }
  p.coeffs = color_coeffs(options.matrix, options.range);
  return p;
}

}  // namespace

bool CpuConverter::Key::operator==(const Key& o) const {
  return crop.x == o.crop.x && crop.y == o.crop.y && crop.width == o.crop.width && crop.height == o.crop.height &&
         flip == o.flip && rotation == o.rotation && resize == o.resize && interpolation == o.interpolation &&
         dst_w == o.dst_w && dst_h == o.dst_h;
}

CpuConverter::CpuConverter(std::unique_ptr<ThreadPool> pool)
    : pool_(std::move(pool)), scratch_(pool_->size()), bands_(pool_->size()) {}

Result<std::unique_ptr<CpuConverter>> CpuConverter::create(unsigned threads) {
  MEMHAL_ASSIGN_OR_RETURN(auto pool, ThreadPool::create(threads));
  return std::unique_ptr<CpuConverter>(new CpuConverter(std::move(pool)));
}

namespace {

// The general (area) taps of `axis` in Q15, each output's rounded so that they sum to 32768
// exactly: the largest tap takes the rounding difference.
void q6_taps(const AxisTaps& axis, std::vector<int16_t>* out) {
  out->clear();
  for (std::size_t o = 0; o + 1 < axis.first.size(); ++o) {
    const auto begin = static_cast<std::size_t>(axis.first[o]), end = static_cast<std::size_t>(axis.first[o + 1]);
    int32_t total = 0;
    std::size_t largest = begin;
    for (std::size_t t = begin; t < end; ++t) {
      const auto w = static_cast<int32_t>(std::lround(axis.weight[t] * 32768.0f));
      out->push_back(static_cast<int16_t>(std::min(32767, w)));
      total += out->back();
      if (axis.weight[t] > axis.weight[largest]) largest = t;
    }
    if (end > begin) (*out)[largest] = static_cast<int16_t>(std::min(32767, (*out)[largest] + 32768 - total));
  }
}

}  // namespace

void CpuConverter::Plan::build_q6() {
  const Geometry& g = geometry;
  const AxisTaps& h = g.horizontal;
  const int64_t n = g.content.width;
  const auto q15 = [](float w) { return static_cast<int16_t>(std::min(32767L, std::lround(w * 32768.0f))); };
  q6_positions.clear();
  q6_index.clear();
  q6_weight.clear();
  q6_direct = h.single_tap;
  q6_pairs = false;
  q6_every_column = false;
  q6_chroma_pairs = false;
  q6_start.clear();
  q6_window.clear();
  window.clear();
  if (!h.two_tap) {
    // Area downscale: every position decoded, then each output sums its taps (weights in Q15
    // that add up to 32768, so a flat area stays flat); taps within 8 positions as a window of
    // 8 weights from the lowest position (mirrored taps run downwards), one vector product.
    q6_taps(h, &q6_weight);
    bool narrow = true;
    for (int64_t o = 0; narrow && o < n; ++o) {
      const auto [lo, hi] = std::minmax_element(h.index.begin() + h.first[o], h.index.begin() + h.first[o + 1]);
      narrow = h.first[o + 1] > h.first[o] && *hi - *lo < 8;
      if (!narrow) break;
      q6_start.push_back(*lo);
      q6_window.resize(q6_window.size() + 8, 0);
      for (int32_t t = h.first[o]; t < h.first[o + 1]; ++t) q6_window[8 * o + h.index[t] - *lo] = q6_weight[t];
    }
    if (!narrow) {
      q6_start.clear(), q6_window.clear();
    } else {
      window.assign(static_cast<std::size_t>(8 * n), 0.0f);
      for (int64_t o = 0; o < n; ++o) {
        for (int32_t t = h.first[o]; t < h.first[o + 1]; ++t) window[8 * o + h.index[t] - q6_start[o]] = h.weight[t];
      }
    }
  } else if (h.single_tap) {
    q6_positions.assign(h.index.begin(), h.index.begin() + n);
  } else if (g.positions >= 2 * n) {
    // Downscaling by 2 or more: decode only the two pixels each output blends.
    q6_pairs = true;
    for (int64_t o = 0; o < n; ++o) {
      q6_positions.push_back(h.index[o]);
      q6_positions.push_back(static_cast<int32_t>(std::min<int64_t>(h.index[o] + 1, g.positions - 1)));
      q6_index.push_back(static_cast<int32_t>(2 * o));
      q6_weight.push_back(q15(h.weight[o]));
    }
    // An exact 2:1 picks every column in order: no picking to do.
    q6_every_column = static_cast<int64_t>(q6_positions.size()) == g.positions;
    for (int64_t i = 0; q6_every_column && i < g.positions; ++i) q6_every_column = q6_positions[i] == i;
    // Pairs that share their chroma (p even: crops of subsampled sources start on a chroma
    // sample) are picked whole (q6_chroma_pairs_row): 6:1, 10:1.. (4K -> 640x640 blends pixels
    // 6i + 2 and 6i + 3); 2:1 reads the lines whole, 4:1 and 8:1 pair odd pixels with even ones.
    q6_chroma_pairs = !q6_every_column;
    for (int64_t o = 0; q6_chroma_pairs && o < n; ++o) {
      q6_chroma_pairs = (h.index[o] & 1) == 0 && h.index[o] + 1 < g.positions;
    }
  } else {
    for (int64_t o = 0; o < n; ++o) {
      q6_index.push_back(h.index[o]);
      q6_weight.push_back(q15(h.weight[o]));
    }
  }
  q6_vertical.clear();
  if (g.vertical.two_tap) {
    for (float w : g.vertical.weight) q6_vertical.push_back(q15(w));
  } else {
    q6_taps(g.vertical, &q6_vertical);
  }
  q6_sample_stale = true;
}

void CpuConverter::Plan::pick_q6_positions(PixelFormat format) {
  if (!q6_sample_stale && q6_sample.format == format) return;
  q6_sample.build(format, q6_positions.data(), static_cast<int64_t>(q6_positions.size()));
  q6_sample_stale = false;
}

void CpuConverter::prepare(const ImageRef& src, const ImageRef& dst, const Rect& crop, const ConvertOptions& options) {
  const Key key{crop, options.flip, options.rotation, options.resize, options.interpolation, dst.width, dst.height};
  auto found = std::find_if(plans_.begin(), plans_.end(), [&](const auto& p) { return p->key == key; });
  if (found == plans_.end()) {
    if (plans_.size() < kPlans) plans_.push_back(std::make_unique<Plan>());
    found = plans_.end() - 1;  // the least recently used one is rebuilt (its vectors reused)
    Plan& p = **found;
    p.key = key;
    p.geometry.build(crop, dst.width, dst.height, options);
    const auto& h = p.geometry.horizontal;
    p.horizontal_identity = h.two_tap && !p.geometry.column_lines && p.geometry.positions == p.geometry.content.width &&
                            !p.geometry.mirror_positions;
    for (int64_t o = 0; p.horizontal_identity && o < p.geometry.content.width; ++o) {
      p.horizontal_identity = h.index[o] == o && h.weight[o] == 0.0f;
    }
    // Upscaling reuses each resampled line for several output rows: cache them. Downscaling
    // uses a line at most twice: blending the two source lines first halves the resampling.
    p.cache_lines = p.geometry.lines < p.geometry.content.height;
    p.sample_stale = true;
    if (!p.geometry.column_lines) {
      p.build_q6();
    } else {
      p.q6_positions.clear(), p.q6_index.clear(), p.q6_weight.clear(), p.q6_vertical.clear();
      p.q6_start.clear(), p.q6_window.clear(), p.window.clear();
      p.q6_pairs = p.q6_every_column = p.q6_chroma_pairs = false;
      p.q6_sample_stale = true;
    }
  }
  std::rotate(plans_.begin(), found, found + 1);
  plan_ = plans_.front().get();
  src_ = &src;
  dst_ = &dst;
  coeffs_ = color_coeffs(options.matrix, options.range);
  params_ = write_params(dst.format, options);
  // A destination several times the L2 size that the previous call did not write is not in
  // any cache: writing it around them saves reading every line before it is overwritten. One
  // written last time may still be in the L3, where plain stores are cheaper. Measured on
  // 1080p NV12 -> 640x640 f32 planar: streaming is 10-35% faster when the destination changes
  // every call, 5-14% slower when the same one comes back.
  int64_t dst_bytes = 0;
  for (int i = 0; i < dst.plane_count; ++i) dst_bytes += dst.height * std::abs(dst.planes[i].row);
  params_.stream = dst_bytes >= kStreamBytes && dst.planes[0].base != last_dst_;
  last_dst_ = dst.planes[0].base;
  for (int c = 0; c < 4; ++c) pad_[c] = options.pad[c];
  alpha_ = has_alpha(src.format) && has_alpha(dst.format);
  fill_alpha_ = !has_alpha(src.format) && has_alpha(dst.format);
  channels_ = alpha_ ? 4 : 3;
  copy_bars_ = rows_copyable(dst);
  // Nearest sampling along rows decodes only the pixels the output shows.
  sampled_ = plan_->geometry.horizontal.single_tap && !plan_->geometry.column_lines && !plan_->horizontal_identity &&
             sampled_rows_supported(src);
  if (sampled_ && (plan_->sample_stale || plan_->sample.format != src.format)) {
    plan_->sample.build(src.format, plan_->geometry.horizontal.index.data(), plan_->geometry.content.width);
    plan_->sample_stale = false;
  }
  direct_ = sampled_ && (plan_->sample.chunks > 0 || plan_->sample.words.chunks > 0) &&
            dst.format == PixelFormat::PlanarRgb && (dst.dtype == DType::F32 || dst.dtype == DType::F16) &&
            plan_->geometry.vertical.two_tap && !plan_->cache_lines && !alpha_ && !fill_alpha_;
  for (int i = 0; direct_ && i < 3; ++i) direct_ = dst.planes[i].pixel == static_cast<int64_t>(size_of(dst.dtype));
  // Float rows of a downscale by 2 or more decode only the two pixels each output blends (as
  // the integer path does), not whole source lines.
  pairs_ = plan_->q6_pairs && !plan_->cache_lines && plan_->geometry.vertical.two_tap && sampled_rows_supported(src);
  if (pairs_) plan_->pick_q6_positions(src.format);
  // 8-bit outputs decode and resample in 16-bit fixed point (Q6), never through float.
  q6_ = !plan_->q6_vertical.empty() && (dst.dtype == DType::U8 || dst.dtype == DType::I8) && q6_writable(dst) &&
        q6_readable(src);
  if (q6_) {
    fixed_ = kernels::fixed_coeffs(coeffs_);
    flip_ = dst.dtype == DType::I8 ? 0x80 : 0;
    for (int j = 0; j < params_.channels; ++j) pad8_[j] = static_cast<uint8_t>(pad_[params_.order[j]]) ^ flip_;
    if (dst.format == PixelFormat::Grey) {
      pad8_[0] =
          static_cast<uint8_t>(std::lrint(coeffs_.kr * pad_[0] + coeffs_.kg * pad_[1] + coeffs_.kb * pad_[2])) ^ flip_;
    }
    // Rows that take one source line whose decoded pixels are the outputs, into interleaved
    // RGB-family pixels: the YUV bytes go to the destination in one pass (upscales keep the
    // cached lines they reuse).
    const auto info = *pixel_format_info(src.format);
    const bool one_line = info.yuv && plan_->q6_direct && !plan_->cache_lines && plan_->geometry.vertical.two_tap;
    q6_pixels_ = one_line && dst.plane_count == 1 && (params_.channels == 3 || params_.channels == 4) &&
                 dst.format != PixelFormat::Grey;
    q6_planes_ = one_line && dst.plane_count == 3 && params_.channels == 3;
    if (!plan_->q6_positions.empty()) plan_->pick_q6_positions(src.format);
  }

  const auto positions = static_cast<std::size_t>(plan_->geometry.positions);
  const auto content_w = static_cast<std::size_t>(plan_->geometry.content.width);
  const auto dst_w = static_cast<std::size_t>(dst.width);
  for (Scratch& s : scratch_) {
    // + 8: an area window may read 7 past the last channel's last position (weight 0).
    grow(s.line, 2 * 4 * (std::max(positions, content_w) + 1) + 8);
    grow(s.cache, 2 * 4 * content_w);
    grow(s.rows, 3 * 4 * dst_w);
    grow(s.scratch, std::max(dst_w, 4 * content_w));
    // Two lines' picked pixel pairs (picked_line_pair) at most: 2 x 3 bytes x 2 pixels.
    grow(s.staging, std::max(3 * positions + 2, 12 * content_w));
    s.tags = {-1, -1};
    if (q6_) {
      grow(s.q6_lines, 2 * 4 * content_w);
      // + 8: an area window may read 7 past a line's last position (weight 0).
      grow(s.q6_decoded, 4 * (std::max(positions, 2 * content_w) + 1) + 8);
      if (!plan_->geometry.vertical.two_tap) grow(s.q6_sum, 4 * (std::max(positions, 2 * content_w) + 1) + 8);
      grow(s.q6_row, 5 * content_w);
      grow(s.bytes, 4 * dst_w);
      s.q6_tags = {-1, -1};
    }
  }
  // One band of rows per thread, so that each thread's next-row prefetch runs unbroken: with
  // three bands a thread, each band's first row arrived cold and its last row fetched the next
  // band's for whichever thread took it (cold 1080p f32 on two threads, nine alternating
  // filtered image_bench runs: 1.61-1.90x one thread with three, 1.85-2.05x with one). The rows
  // of a job cost alike or mirror each other (letterbox bars above and below), so the halves
  // balance. 4:2:0 needs row pairs.
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(dst.height / 2, int64_t{pool_->size()}));
  const int64_t band = ((dst.height + tasks - 1) / tasks + 1) & ~int64_t{1};
  // But a thread that finishes its band first takes the others' last rows, a quarter of a band
  // at a time: threads share their cores with the rest of a pipeline. Cold 1080p f32 on two
  // threads, 3000 frames in blocks of 20 with and without in turn, a 2-core VM: beside a process
  // spinning 100 us of every 500, 90th percentile 222-236 -> 171-181 us, median 118-127 ->
  // 105-114; spinning 50 of every 1000, 159-177 -> 143-166 (medians alike); alone, medians
  // within 2 us. A sixteenth of a band at a time served no better beside other work and cost
  // 1-3 us alone.
  bands_.reset(dst.height, band, tasks == 1 ? band : std::max<int64_t>(2, (band / 4 + 1) & ~int64_t{1}));
}

void CpuConverter::run(const ImageRef& src, const ImageRef& dst, const Rect& crop, const ConvertOptions& options) {
  prepare(src, dst, crop, options);
  pool_->run(bands_.tasks(), &CpuConverter::task, this);
}

void CpuConverter::task(void* self, unsigned worker, int task) {
  auto* converter = static_cast<CpuConverter*>(self);
  if (converter->q6_) {
    converter->process_q6(converter->scratch_[worker], task);
  } else {
    converter->process(converter->scratch_[worker], task);
  }
  // Non-temporal stores are not ordered by the pool's release of the task.
  if (converter->params_.stream) kernels::flush_streams();
}

void CpuConverter::process(Scratch& s, int task) {
  const int64_t width = dst_->width;
  const bool pairs = pairs_rows(dst_->format);
  const Rect& box = plan_->geometry.content;
  // Row buffers 0 and 1 take content rows, whose padding columns never change; buffer 2 is a
  // whole padding row. Filled once per task, so a row costs only what it shows.
  const RgbaRows slots[3] = {
      {s.rows.data(), width}, {s.rows.data() + 4 * width, width}, {s.rows.data() + 8 * width, width}};
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 2; ++i) {
      std::fill(slots[i].channel(c), slots[i].channel(c) + box.x, pad_[c]);
      std::fill(slots[i].channel(c) + box.x + box.width, slots[i].channel(c) + width, pad_[c]);
    }
    std::fill(slots[2].channel(c), slots[2].channel(c) + width, pad_[c]);
  }
  RgbaRows first = slots[0];
  int64_t written_bar = -1;  // a padding row already written, to copy from
  bool fill_bars = !params_.stream;
  int64_t y0 = 0, y1 = 0;
  for (int band = task; bands_.claim(task, band, y0, y1);) {
    for (int64_t y = y0; y < y1; ++y) {
      const bool inside = y >= box.y && y < box.y + box.height;
      if (!inside && copy_bars_) {
        if (written_bar >= 0) {
          y = next_bar_rows(y, y1, written_bar, fill_bars);
          continue;
        }
        written_bar = y;
      }
      const RgbaRows row = inside ? slots[pairs && (y & 1) ? 1 : 0] : slots[2];
      if (inside && direct_ && write_direct(s, y, row)) continue;
      if (inside) compose_row(s, y, row);
      if (!pairs) {
        write_rows(*dst_, y, row, nullptr, params_, s.scratch.data());
      } else if (y & 1) {
        write_rows(*dst_, y - 1, first, &row, params_, s.scratch.data());
      } else {
        first = row;
      }
    }
  }
}

// Bar row `y` (and the bar rows after it, below `y1`, where they can be filled) from the bar row
// `written` already holds; returns the last row written. A bar that is one value repeated goes
// down as string stores over the whole run of rows (no line read before it is overwritten: about
// 7% off a cold 1080p -> 640x640 f32 letterbox on Zen 5, where a memcpy per row gained nothing);
// other bars, and streamed ones, row by row.
int64_t CpuConverter::next_bar_rows(int64_t y, int64_t y1, int64_t written, bool& fill) {
  const Rect& box = plan_->geometry.content;
  const int64_t end = y < box.y ? std::min(y1, box.y) : y1;
  if (fill && fill_rows_like(*dst_, written, y, end)) return end - 1;
  fill = false;
  copy_row(*dst_, written, y, params_.stream);
  return y;
}

// The integer path: each content row blends at most two cached Q6 lines, rounds them to bytes
// and writes them (interleaved pixels in one pass, bar rows through a row of bytes per channel
// whose padding columns are filled once per task; planar and grey straight into the
// destination's rows).
void CpuConverter::process_q6(Scratch& s, int task) {
  const Geometry& g = plan_->geometry;
  const Rect& box = g.content;
  const int64_t width = dst_->width;
  const int64_t cw = box.width;
  const int out_channels = params_.channels;
  const bool interleaved = dst_->plane_count == 1 && out_channels > 1;
  uint8_t* bytes[4] = {};
  for (int j = 0; j < out_channels; ++j) {
    bytes[j] = s.bytes.data() + j * width;
    std::fill(bytes[j], bytes[j] + box.x, pad8_[j]);
    std::fill(bytes[j] + box.x + cw, bytes[j] + width, pad8_[j]);
  }
  // Row `y` of plane j: where its content bytes go, and the padding columns around them.
  const auto plane_row = [&](int j, int64_t y) {
    return reinterpret_cast<uint8_t*>(dst_->planes[j].base + y * dst_->planes[j].row);
  };
  // The padding columns of planar (and grey) row `y`; interleaved rows pad their pixels.
  const auto pad_planes = [&](int64_t y) {
    for (int j = 0; j < out_channels; ++j) {
      uint8_t* row = plane_row(j, y);
      std::fill(row, row + box.x, pad8_[j]);
      std::fill(row + box.x + cw, row + width, pad8_[j]);
    }
  };
  // Sources whose 2:1 (or whole-pair) downscales take one pass a row (q6_pairs_row,
  // q6_chroma_pairs_row).
  const bool yuv_pairs = semi_planar_subsampled(src_->format) || packed_422(src_->format);
  int64_t written_bar = -1;
  bool fill_bars = true;
  int64_t y0 = 0, y1 = 0;
  for (int band = task; bands_.claim(task, band, y0, y1);) {
    for (int64_t y = y0; y < y1; ++y) {
      if (y < box.y || y >= box.y + box.height) {
        if (copy_bars_ && written_bar >= 0) {
          y = next_bar_rows(y, y1, written_bar, fill_bars);
          continue;
        }
        written_bar = y;
        for (int j = 0; j < out_channels; ++j) {
          if (interleaved) {
            std::fill(bytes[j] + box.x, bytes[j] + box.x + cw, pad8_[j]);
          } else {
            std::fill(plane_row(j, y), plane_row(j, y) + width, pad8_[j]);
          }
        }
        if (interleaved) kernels::interleave_8bit(bytes, out_channels, plane_row(0, y), width);
        continue;
      }
      const int64_t r = y - box.y;
      if (q6_pixels_ && plan_->q6_vertical[r] == 0 && write_q6_pixels(s, y, r)) continue;
      if (q6_planes_ && plan_->q6_vertical[r] == 0 && write_q6_planes(s, y, r)) continue;
      const int16_t* rows = nullptr;
      if (!g.vertical.two_tap) {
        rows = q6_area_row(s, r);
      } else {
        prefetch_next(r);
        // Downscales by 2 or more of YUV sources: a row in one pass where one serves.
        if (plan_->q6_every_column && yuv_pairs) {
          rows = q6_pairs_row(s, r);
        } else if (plan_->q6_chroma_pairs && yuv_pairs) {
          rows = q6_chroma_pairs_row(s, r);
        } else if (plan_->q6_pairs && !plan_->cache_lines && channels_ == 3) {
          rows = q6_picked_pairs_row(s, r);  // null for a source without YUV bytes
        }
        if (rows == nullptr) {
          const int64_t l0 = g.vertical.index[r];
          const int16_t w = plan_->q6_vertical[r];
          rows = q6_line(s, l0, -1);
          if (w != 0) {
            const int16_t* b = q6_line(s, l0 + 1, l0);
            for (int c = 0; c < 4; ++c) {
              if (c < channels_ || (c == 3 && fill_alpha_)) {
                kernels::blend_q6(rows + c * cw, b + c * cw, w, s.q6_row.data() + c * cw, cw);
              }
            }
            rows = s.q6_row.data();
          }
        }
      }
      if (dst_->format == PixelFormat::Grey) {
        // Full-range luma of the RGB, as the float path's luma_row.
        const auto kr = static_cast<int32_t>(std::lround(coeffs_.kr * 32768.0f));
        const auto kb = static_cast<int32_t>(std::lround(coeffs_.kb * 32768.0f));
        const int32_t kg = 32768 - kr - kb;
        int16_t* luma = s.q6_row.data() + 4 * cw;
        for (int64_t x = 0; x < cw; ++x) {
          luma[x] = static_cast<int16_t>((kr * rows[x] + kg * rows[cw + x] + kb * rows[2 * cw + x] + 16384) >> 15);
        }
        kernels::q6_to_8bit(luma, flip_, plane_row(0, y) + box.x, cw);
        pad_planes(y);
        continue;
      }
      if (interleaved) {
        // Rounded, interleaved and written in one pass, then the padding columns.
        uint8_t* row = plane_row(0, y);
        kernels::q6_to_8bit_pixels(rows, rows + cw, rows + 2 * cw, channels_ == 4 ? rows + 3 * cw : nullptr, cw,
                                   params_.order.data(), out_channels, flip_, row + box.x * out_channels);
        pad_pixels(row, 0, box.x, out_channels, pad8_.data());
        pad_pixels(row, box.x + cw, width, out_channels, pad8_.data());
        continue;
      }
      for (int j = 0; j < out_channels; ++j) {
        kernels::q6_to_8bit(rows + params_.order[j] * cw, flip_, plane_row(j, y) + box.x, cw);
      }
      pad_planes(y);
    }
  }
}

// Content row `y` (row r of the content) from its one source line: the line's YUV bytes straight
// to the destination's pixels, then the padding columns; false for a source without YUV bytes.
bool CpuConverter::write_q6_pixels(Scratch& s, int64_t y, int64_t r) {
  const Geometry& g = plan_->geometry;
  const Rect& box = g.content;
  const int64_t next = prefetch_next(r, &plan_->q6_sample);
  const int channels = params_.channels;
  const int64_t line = g.crop.y + g.vertical.index[r];
  auto* row = reinterpret_cast<uint8_t*>(dst_->planes[0].base + y * dst_->planes[0].row);
  uint8_t* const pixels = row + box.x * channels;
  // The plan's pairs straight to pixels where they can (AVX2), the rest through the bytes.
  const int64_t done = read_row_planned_pixels(*src_, g.crop.x, line, next, plan_->q6_sample, fixed_,
                                               params_.order.data(), channels, flip_, pixels);
  if (done < box.width) {
    static const SamplePlan kNoPlan;
    const YuvBytes bytes =
        read_row_yuv_bytes(*src_, g.crop.x, line, plan_->q6_positions.data() + done, box.width - done, s.staging.data(),
                           done > 0 ? kNoPlan : plan_->q6_sample);
    if (bytes.y == nullptr) return false;
    kernels::yuv_to_8bit_pixels(bytes.y, bytes.u, bytes.v, box.width - done, fixed_, params_.order.data(), channels,
                                flip_, pixels + done * channels);
  }
  pad_pixels(row, 0, box.x, channels, pad8_.data());
  pad_pixels(row, box.x + box.width, dst_->width, channels, pad8_.data());
  return true;
}

// write_q6_pixels for planar 8-bit destinations: the plan's pairs straight to the three planes
// where they can (AVX2), the rest through the bytes and Q6 rows, then the padding columns.
bool CpuConverter::write_q6_planes(Scratch& s, int64_t y, int64_t r) {
  const Geometry& g = plan_->geometry;
  const Rect& box = g.content;
  const int64_t cw = box.width;
  const int64_t next = prefetch_next(r, &plan_->q6_sample);
  const int64_t line = g.crop.y + g.vertical.index[r];
  const auto plane_row = [&](int j) {
    return reinterpret_cast<uint8_t*>(dst_->planes[j].base + y * dst_->planes[j].row);
  };
  uint8_t* rows[3];  // where R, G and B of the content go
  for (int j = 0; j < 3; ++j) rows[params_.order[j]] = plane_row(j) + box.x;
  const int64_t done =
      read_row_planned_planes(*src_, g.crop.x, line, next, plan_->q6_sample, fixed_, flip_, rows[0], rows[1], rows[2]);
  if (done < cw) {
    static const SamplePlan kNoPlan;
    const YuvBytes bytes = read_row_yuv_bytes(*src_, g.crop.x, line, plan_->q6_positions.data() + done, cw - done,
                                              s.staging.data(), done > 0 ? kNoPlan : plan_->q6_sample);
    if (bytes.y == nullptr) return false;
    int16_t* q = s.q6_row.data();
    kernels::yuv_to_rgb_q6(bytes.y, bytes.u, bytes.v, cw - done, fixed_, q, q + cw, q + 2 * cw);
    for (int c = 0; c < 3; ++c) kernels::q6_to_8bit(q + c * cw, flip_, rows[c] + done, cw - done);
  }
  for (int j = 0; j < 3; ++j) {
    uint8_t* row = plane_row(j);
    std::fill(row, row + box.x, pad8_[j]);
    std::fill(row + box.x + cw, row + dst_->width, pad8_[j]);
  }
  return true;
}

// A source line decoded and resampled along the row into Q6, from a two-line cache per worker.
const int16_t* CpuConverter::q6_line(Scratch& s, int64_t line, int64_t keep) {
  const Geometry& g = plan_->geometry;
  const int64_t cw = g.content.width;
  for (int i = 0; i < 2; ++i) {
    if (s.q6_tags[i] == line) return s.q6_lines.data() + i * 4 * cw;
  }
  const int victim = s.q6_tags[0] == keep ? 1 : 0;
  s.q6_tags[victim] = line;
  int16_t* out = s.q6_lines.data() + victim * 4 * cw;
  const Q6Rows target{out, cw};
  const Plan& p = *plan_;
  const bool want_alpha = channels_ == 4;
  if (p.q6_direct) {
    read_row_q6(*src_, g.crop.x, g.crop.y + line, p.q6_positions.data(), cw, fixed_, want_alpha, target,
                s.staging.data(), p.q6_sample);
  } else {
    // Every column in order (a 2:1 downscale) reads semi-planar lines whole, Y in place and the
    // chroma pairs split in vectors, rather than through the picks: 1280x720 NV12 -> 640x640
    // rgb u8, one thread, six alternating pairs of runs (2026-12-05): 365-524 -> 251-386 us.
    const bool all = p.q6_positions.empty() || (p.q6_every_column && semi_planar_subsampled(src_->format));
    const int64_t n = all ? g.positions : static_cast<int64_t>(p.q6_positions.size());
    const Q6Rows decoded{s.q6_decoded.data(), n + 1};
    read_row_q6(*src_, g.crop.x, g.crop.y + line, all ? nullptr : p.q6_positions.data(), n, fixed_, want_alpha, decoded,
                s.staging.data(), p.q6_sample);
    for (int c = 0; c < channels_; ++c) resample_q6(decoded.channel(c), n, target.channel(c));
  }
  if (fill_alpha_) std::fill(target.channel(3), target.channel(3) + cw, int16_t{255 * 64});
  return out;
}

// A 2:1 downscale's content row `r` of a semi-planar source with halved chroma or a packed
// 4:2:2 one: its two source lines decoded, blended along the row and then together in one pass
// (semi_planar_pairs_q6, packed_422_pairs_q6), where q6_line and blend_q6 make three passes
// through Q6 rows in memory and split the chroma pairs first, and the picked path (which packed
// lines took before) picks every pixel's bytes.
const int16_t* CpuConverter::q6_pairs_row(Scratch& s, int64_t r) {
  const Geometry& g = plan_->geometry;
  const int64_t cw = g.content.width;
  const int64_t l0 = g.crop.y + g.vertical.index[r];
  const int16_t w = plan_->q6_vertical[r];
  int16_t* out = s.q6_row.data();
  if (const Packed422Line a = packed_422_line(*src_, g.crop.x, l0); a.row != nullptr) {
    const Packed422Line b = w != 0 ? packed_422_line(*src_, g.crop.x, l0 + 1) : a;
    kernels::packed_422_pairs_q6(a.row, b.row, a.pos.data(), plan_->q6_weight.data(), w, cw, fixed_, out, out + cw,
                                 out + 2 * cw);
  } else {
    const SemiPlanarLine la = semi_planar_line(*src_, g.crop.x, l0);
    const SemiPlanarLine lb = w != 0 ? semi_planar_line(*src_, g.crop.x, l0 + 1) : la;
    kernels::semi_planar_pairs_q6(la.y, la.uv, lb.y, lb.uv, la.vu, plan_->q6_weight.data(), w, cw, fixed_, out,
                                  out + cw, out + 2 * cw);
  }
  if (fill_alpha_) std::fill(out + 3 * cw, out + 4 * cw, int16_t{255 * 64});
  return out;
}

namespace {
// Units of kBytes bytes (a Y word, a chroma pair, a macropixel) at from[k] + kScale * at[2 o],
// for each output o and row k < kRows, side by side at to[k]: the rows in one pass, each
// position loaded once.
template <int kBytes, int kScale, int kRows>
void pick_units(const uint8_t* const* from, const int32_t* at, int64_t n, uint8_t* const* to) {
  for (int64_t o = 0; o < n; ++o) {
    const int64_t p = kScale * int64_t{at[2 * o]};
    for (int k = 0; k < kRows; ++k) std::memcpy(to[k] + kBytes * o, from[k] + p, kBytes);
  }
}
template <int kBytes, int kScale>
void pick_units(const uint8_t* const* from, int rows, const int32_t* at, int64_t n, uint8_t* const* to) {
  switch (rows) {
    case 1: return pick_units<kBytes, kScale, 1>(from, at, n, to);
    case 2: return pick_units<kBytes, kScale, 2>(from, at, n, to);
    case 3: return pick_units<kBytes, kScale, 3>(from, at, n, to);
    default: return pick_units<kBytes, kScale, 4>(from, at, n, to);
  }
}
}  // namespace

// A downscale by more than 2 whose pixel pairs share their chroma (q6_chroma_pairs: 6:1 as 4K
// -> 640x640, 10:1..) of a semi-planar source with halved chroma or a packed 4:2:2
// one: each line's pairs picked whole (a Y word and its chroma pair, or a macropixel) and then
// decoded and blended as a 2:1 downscale's lines (q6_pairs_row), where the picked path splits
// every pixel's Y, U and V and decodes each pixel's chroma. What q6_picked_pairs_row gives,
// to the bit: each pixel of a pair has the pair's chroma there too.
const int16_t* CpuConverter::q6_chroma_pairs_row(Scratch& s, int64_t r) {
  const Geometry& g = plan_->geometry;
  const int64_t cw = g.content.width;
  const int64_t l0 = g.crop.y + g.vertical.index[r];
  const int16_t w = plan_->q6_vertical[r];
  const int32_t* at = plan_->q6_positions.data();  // the pairs' first pixels at at[2 o]
  uint8_t* stage = s.staging.data();
  int16_t* out = s.q6_row.data();
  if (const Packed422Line a = packed_422_line(*src_, g.crop.x, l0); a.row != nullptr) {
    const uint8_t* from[2] = {a.row, w != 0 ? packed_422_line(*src_, g.crop.x, l0 + 1).row : a.row};
    uint8_t* to[2] = {stage, stage + 4 * cw};
    pick_units<4, 2>(from, w != 0 ? 2 : 1, at, cw, to);
    kernels::packed_422_pairs_q6(to[0], to[w != 0 ? 1 : 0], a.pos.data(), plan_->q6_weight.data(), w, cw, fixed_, out,
                                 out + cw, out + 2 * cw);
  } else {
    // Pixel p's chroma pair is at byte p of the line's pairs (crops start on a chroma sample).
    const SemiPlanarLine la = semi_planar_line(*src_, g.crop.x, l0);
    const SemiPlanarLine lb = w != 0 ? semi_planar_line(*src_, g.crop.x, l0 + 1) : la;
    // Line a's Y and chroma, line b's Y unless it is line a, its chroma unless both lines are on
    // one chroma line (4:2:0: one pick, and the kernel decodes it once).
    const uint8_t* from[4] = {la.y, la.uv};
    uint8_t* to[4] = {stage, stage + 2 * cw};
    int rows = 2;
    const uint8_t *yb = to[0], *uvb = to[1];
    if (lb.y != la.y) from[rows] = lb.y, to[rows] = stage + 2 * rows * cw, yb = to[rows++];
    if (lb.uv != la.uv) from[rows] = lb.uv, to[rows] = stage + 2 * rows * cw, uvb = to[rows++];
    pick_units<2, 1>(from, rows, at, cw, to);
    kernels::semi_planar_pairs_q6(to[0], to[1], yb, uvb, la.vu, plan_->q6_weight.data(), w, cw, fixed_, out, out + cw,
                                  out + 2 * cw);
  }
  if (fill_alpha_) std::fill(out + 3 * cw, out + 4 * cw, int16_t{255 * 64});
  return out;
}

// A downscale by more than 2 of a YUV source: the picked pixel pairs of row `r`'s two source
// lines (read_row_yuv_bytes) decoded and blended both ways in one pass (yuv_pairs_q6), rather
// than decoded into Q6 rows, resampled into two lines and blended (q6_line, blend_q6); null
// for a source without YUV bytes.
const int16_t* CpuConverter::q6_picked_pairs_row(Scratch& s, int64_t r) {
  const Geometry& g = plan_->geometry;
  const int64_t cw = g.content.width;
  const int16_t w = plan_->q6_vertical[r];
  const uint8_t* a[3];
  const uint8_t* b[3];
  if (!picked_line_pair(s, g.vertical.index[r], w != 0, plan_->q6_sample, a, b)) return nullptr;
  int16_t* out = s.q6_row.data();
  kernels::yuv_pairs_q6(a, b, plan_->q6_weight.data(), w, cw, fixed_, out, out + cw, out + 2 * cw);
  if (fill_alpha_) std::fill(out + 3 * cw, out + 4 * cw, int16_t{255 * 64});
  return out;
}

// The picked pixel pairs (q6_positions) of source line `line` and, if `both`, of the next one
// (else `b` is `a`): per-pixel Y, U and V rows in the staging area, by `plan` (built from
// q6_positions); false for a source without YUV bytes.
bool CpuConverter::picked_line_pair(Scratch& s, int64_t line, bool both, const SamplePlan& plan, const uint8_t* a[3],
                                    const uint8_t* b[3]) {
  const Geometry& g = plan_->geometry;
  const int32_t* at = plan_->q6_positions.data();
  const int64_t n = static_cast<int64_t>(plan_->q6_positions.size());
  const YuvBytes first = read_row_yuv_bytes(*src_, g.crop.x, g.crop.y + line, at, n, s.staging.data(), plan);
  if (first.y == nullptr) return false;
  const YuvBytes second =
      both ? read_row_yuv_bytes(*src_, g.crop.x, g.crop.y + line + 1, at, n, s.staging.data() + 3 * n, plan) : first;
  a[0] = first.y, a[1] = first.u, a[2] = first.v;
  b[0] = second.y, b[1] = second.u, b[2] = second.v;
  return true;
}

// An area downscale's content row `r`: its source lines decoded in full, summed with their
// vertical weights in Q6 (decode, then average: what the reference defines), then the sum's
// taps along the row.
const int16_t* CpuConverter::q6_area_row(Scratch& s, int64_t r) {
  const Geometry& g = plan_->geometry;
  const AxisTaps& v = g.vertical;
  const Plan& p = *plan_;
  const bool all = p.q6_positions.empty();
  const int64_t n = all ? g.positions : static_cast<int64_t>(p.q6_positions.size());
  const Q6Rows decoded{s.q6_decoded.data(), n + 1};
  const Q6Rows target{s.q6_row.data(), g.content.width};
  // Decoded pixels that are the outputs (no horizontal resampling) are summed in place.
  const Q6Rows sum = p.q6_direct ? target : Q6Rows{s.q6_sum.data(), n + 1};
  for (int32_t t = v.first[r]; t < v.first[r + 1]; ++t) {
    if (t + 1 < static_cast<int32_t>(v.index.size())) {
      prefetch_row(*src_, g.crop.x, g.crop.y + v.index[t + 1], g.positions);
    }
    const int32_t* index = all ? nullptr : p.q6_positions.data();
    const int16_t w = p.q6_vertical[t];
    const bool first = t == v.first[r];
    if (all && channels_ == 3) {
      if (const Packed422Line packed = packed_422_line(*src_, g.crop.x, g.crop.y + v.index[t]); packed.row != nullptr) {
        // Packed rows decoded straight from their macropixels, not split into byte rows first.
        kernels::packed_422_to_rgb_q6_accumulate(packed.row, packed.pos.data(), n, fixed_, w, sum.channel(0),
                                                 sum.channel(1), sum.channel(2), first);
        continue;
      }
    }
    const YuvBytes bytes =
        read_row_yuv_bytes(*src_, g.crop.x, g.crop.y + v.index[t], index, n, s.staging.data(), p.q6_sample);
    if (bytes.y != nullptr) {
      // Decoded and summed in one pass (4K NV12 -> 640x640 rgb u8: the sums were a quarter of
      // the conversion, most of it loading the decoded rows back).
      kernels::yuv_to_rgb_q6_accumulate(bytes.y, bytes.u, bytes.v, n, fixed_, w, sum.channel(0), sum.channel(1),
                                        sum.channel(2), first);
      if (channels_ == 4) {
        const auto opaque = static_cast<int16_t>((255 * 64 * w + 16384) >> 15);
        int16_t* alpha = sum.channel(3);
        for (int64_t i = 0; i < n; ++i) alpha[i] = static_cast<int16_t>(first ? opaque : alpha[i] + opaque);
      }
      continue;
    }
    read_row_q6(*src_, g.crop.x, g.crop.y + v.index[t], index, n, fixed_, channels_ == 4, decoded, s.staging.data(),
                p.q6_sample);
    for (int c = 0; c < channels_; ++c) kernels::accumulate_q6(decoded.channel(c), w, sum.channel(c), n, first);
  }
  if (!p.q6_direct) {
    for (int c = 0; c < channels_; ++c) resample_q6(sum.channel(c), n, target.channel(c));
  }
  if (fill_alpha_) std::fill(target.channel(3), target.channel(3) + g.content.width, int16_t{255 * 64});
  return target.base;
}

// One Q6 channel of `n` decoded positions (one more writable: the guard) along the row onto
// the content width: two taps per output from the plan's positions, or an area's taps.
void CpuConverter::resample_q6(int16_t* in, int64_t n, int16_t* out) const {
  const Plan& p = *plan_;
  const AxisTaps& h = p.geometry.horizontal;
  const int64_t cw = p.geometry.content.width;
  if (p.q6_pairs) {
    kernels::resample_pairs_q6(in, p.q6_weight.data(), out, cw);
  } else if (h.two_tap) {
    in[n] = in[n - 1];  // the guard a zero-weight second tap may read
    kernels::resample_2tap_q6(in, p.q6_index.data(), p.q6_weight.data(), out, cw);
  } else if (!p.q6_start.empty()) {
    kernels::resample_window_q6(in, p.q6_start.data(), p.q6_window.data(), out, cw);
  } else {
    kernels::resample_taps_q6(in, h.first.data(), h.index.data(), p.q6_weight.data(), out, cw);
  }
}

RgbaRows CpuConverter::decode_line(Scratch& s, int64_t line, int slot) {
  const Geometry& g = plan_->geometry;
  const int64_t n = g.positions;
  const RgbaRows raw{s.line.data() + slot * 4 * (n + 1), n + 1};
  if (g.column_lines) {
    read_column(*src_, g.crop.x + line, g.crop.y, n, coeffs_, alpha_, raw);
  } else {
    read_row(*src_, g.crop.x, g.crop.y + line, n, coeffs_, alpha_, raw, s.staging.data());
  }
  return raw;
}

void CpuConverter::resample(const RgbaRows& raw, const RgbaRows& target) {
  const Geometry& g = plan_->geometry;
  const int64_t n = g.positions;
  const int64_t content_w = g.content.width;
  const AxisTaps& h = g.horizontal;
  for (int c = 0; c < channels_; ++c) {
    float* in = raw.channel(c);
    in[n] = in[n - 1];  // the guard a zero-weight second tap may read
    if (h.single_tap) {
      kernels::resample_1tap(in, h.index.data(), target.channel(c), content_w);
      continue;
    }
    if (h.two_tap) {
      kernels::resample_2tap(in, h.index.data(), h.weight.data(), target.channel(c), content_w);
      continue;
    }
    if (!plan_->window.empty()) {
      // Area taps within 8 positions: one vector product per output, four outputs reduced together.
      kernels::resample_window(in, plan_->q6_start.data(), plan_->window.data(), target.channel(c), content_w);
      continue;
    }
    float* o = target.channel(c);
    for (int64_t x = 0; x < content_w; ++x) {
      float sum = 0.0f;
      for (int32_t t = h.first[x]; t < h.first[x + 1]; ++t) sum += h.weight[t] * in[h.index[t]];
      o[x] = sum;
    }
  }
}

void CpuConverter::resample_line(Scratch& s, int64_t line, float* out) {
  const Geometry& g = plan_->geometry;
  const RgbaRows target{out, g.content.width};
  if (sampled_) {
    read_row_sampled(*src_, g.crop.x, g.crop.y + line, g.horizontal.index.data(), g.content.width, coeffs_, alpha_,
                     target, s.staging.data(), plan_->sample);
    return;
  }
  if (plan_->horizontal_identity) {
    read_row(*src_, g.crop.x, g.crop.y + line, g.positions, coeffs_, alpha_, target, s.staging.data());
    return;
  }
  resample(decode_line(s, line, 0), target);
}

void CpuConverter::blend_then_resample(Scratch& s, int64_t line, float w, const RgbaRows& out) {
  if (sampled_) {
    const Geometry& g = plan_->geometry;
    const int32_t* index = g.horizontal.index.data();
    const int64_t stride = g.content.width;
    if (w == 0.0f) {
      read_row_sampled(*src_, g.crop.x, g.crop.y + line, index, stride, coeffs_, alpha_, out, s.staging.data(),
                       plan_->sample);
      return;
    }
    const RgbaRows a{s.line.data(), stride};
    const RgbaRows b{s.line.data() + 4 * stride, stride};
    read_row_sampled(*src_, g.crop.x, g.crop.y + line, index, stride, coeffs_, alpha_, a, s.staging.data(),
                     plan_->sample);
    read_row_sampled(*src_, g.crop.x, g.crop.y + line + 1, index, stride, coeffs_, alpha_, b, s.staging.data(),
                     plan_->sample);
    for (int c = 0; c < channels_; ++c) kernels::blend_2(a.channel(c), b.channel(c), w, out.channel(c), stride);
    return;
  }
  if (pairs_) {
    const Geometry& g = plan_->geometry;
    const int64_t n = static_cast<int64_t>(plan_->q6_positions.size());
    const RgbaRows a{s.line.data(), n + 1}, b{s.line.data() + 4 * (n + 1), n + 1};
    if (plan_->q6_every_column) {
      // Every column in order (a 2:1 downscale): both lines decoded and blended both ways in one
      // pass, as the integer path's q6_pairs_row, rather than picked (1280x720 NV12 -> 640x640
      // planar f32, cold, one thread: 613-710 us) or decoded whole into float rows that were
      // blended and then resampled (467-613 us); packed 4:2:2 lines from their macropixels.
      const int64_t l0 = g.crop.y + line;
      if (const Packed422Line pa = packed_422_line(*src_, g.crop.x, l0); pa.row != nullptr) {
        const Packed422Line pb = w != 0.0f ? packed_422_line(*src_, g.crop.x, l0 + 1) : pa;
        kernels::packed_422_pairs(pa.row, pb.row, pa.pos.data(), g.horizontal.weight.data(), w, g.content.width,
                                  coeffs_, out.channel(0), out.channel(1), out.channel(2));
        return;
      }
      if (semi_planar_subsampled(src_->format)) {
        const SemiPlanarLine la = semi_planar_line(*src_, g.crop.x, l0);
        const SemiPlanarLine lb = w != 0.0f ? semi_planar_line(*src_, g.crop.x, l0 + 1) : la;
        kernels::semi_planar_pairs(la.y, la.uv, lb.y, lb.uv, la.vu, g.horizontal.weight.data(), w, g.content.width,
                                   coeffs_, out.channel(0), out.channel(1), out.channel(2));
        return;
      }
    }
    // A downscale by more than 2 of a YUV source: the picked pixel pairs of both lines decoded
    // and blended both ways in one pass, as the integer path's q6_picked_pairs_row.
    const uint8_t* la[3];
    const uint8_t* lb[3];
    if (channels_ == 3 && picked_line_pair(s, line, w != 0.0f, plan_->q6_sample, la, lb)) {
      kernels::yuv_pairs(la, lb, g.horizontal.weight.data(), w, g.content.width, coeffs_, out.channel(0),
                         out.channel(1), out.channel(2));
      return;
    }
    const auto read = [&](int64_t at, const RgbaRows& into) {
      read_row_sampled(*src_, g.crop.x, at, plan_->q6_positions.data(), n, coeffs_, alpha_, into, s.staging.data(),
                       plan_->q6_sample);
    };
    read(g.crop.y + line, a);
    if (w != 0.0f) {
      read(g.crop.y + line + 1, b);
      for (int c = 0; c < channels_; ++c) kernels::blend_2(a.channel(c), b.channel(c), w, a.channel(c), n);
    }
    for (int c = 0; c < channels_; ++c) {
      kernels::resample_pairs(a.channel(c), g.horizontal.weight.data(), out.channel(c), g.content.width);
    }
    return;
  }
  const int64_t n = plan_->geometry.positions;
  if (plan_->horizontal_identity && w == 0.0f) {
    read_row(*src_, plan_->geometry.crop.x, plan_->geometry.crop.y + line, n, coeffs_, alpha_, out, s.staging.data());
    return;
  }
  const RgbaRows a = decode_line(s, line, 0);
  if (w != 0.0f) {
    const RgbaRows b = decode_line(s, line + 1, 1);
    // Without horizontal resampling the blend can land in the output row directly.
    const RgbaRows& target = plan_->horizontal_identity ? out : a;
    for (int c = 0; c < channels_; ++c) kernels::blend_2(a.channel(c), b.channel(c), w, target.channel(c), n);
    if (plan_->horizontal_identity) return;
  }
  resample(a, out);
}

const float* CpuConverter::cached_line(Scratch& s, int64_t line, int64_t keep) {
  const int64_t stride = 4 * plan_->geometry.content.width;
  for (int i = 0; i < 2; ++i) {
    if (s.tags[i] == line) return s.cache.data() + i * stride;
  }
  const int victim = s.tags[0] == keep ? 1 : 0;
  s.tags[victim] = line;
  float* out = s.cache.data() + victim * stride;
  resample_line(s, line, out);
  return out;
}

// The next row's source lines load while this one converts: camera frames arrive in DRAM, and
// rows pages apart defeat the hardware prefetchers. Where row r's reads by the plan `reads`
// ask for them as they go (planned_rows_prefetch) and the next row takes one source line,
// returns that line for them; else asks for the lines here, all at once, and returns -1.
int64_t CpuConverter::prefetch_next(int64_t r, const SamplePlan* reads) {
  const Geometry& g = plan_->geometry;
  const AxisTaps& v = g.vertical;
  if (r + 1 >= g.content.height || g.column_lines) return -1;
  const int64_t next = v.index[r + 1];
  if (reads != nullptr && v.weight[r + 1] == 0.0f && planned_rows_prefetch(*src_, *reads)) return g.crop.y + next;
  prefetch_row(*src_, g.crop.x, g.crop.y + next, g.positions);
  if (v.weight[r + 1] != 0.0f) prefetch_row(*src_, g.crop.x, g.crop.y + next + 1, g.positions);
  return -1;
}

// Normalised planar float and half rows that one source line feeds go to the destination
// straight from the planned conversion, which scales and biases in registers: no float row in
// between and no second pass over it. Only the columns the plan does not cover go through
// `row`. Plain stores even for a destination streamed otherwise: non-temporal 32-byte pieces
// into three planes in turn were 2.5x slower (Zen 3), plain ones as fast as the streamed second
// pass.
bool CpuConverter::write_direct(Scratch& s, int64_t y, const RgbaRows& row) {
  const Geometry& g = plan_->geometry;
  const Rect& box = g.content;
  const int64_t r = y - box.y;
  if (g.vertical.weight[r] != 0.0f) return false;
  const int64_t next = prefetch_next(r, &plan_->sample);
  const bool half = dst_->dtype == DType::F16;
  const int64_t esize = half ? 2 : 4;
  std::byte* out[3];  // row y of the plane that takes R, G, B
  float affine[6];
  for (int j = 0; j < 3; ++j) {
    const int c = params_.order[j];
    out[c] = dst_->planes[j].base + y * dst_->planes[j].row;
    affine[c] = params_.scale[j];
    affine[3 + c] = params_.bias[j];
  }
  const auto at = [&](int c, int64_t x) { return out[c] + x * esize; };
  const int64_t line = g.crop.y + g.vertical.index[r];
  int64_t done = 0;
  if (half) {
    uint16_t* const halves[3] = {reinterpret_cast<uint16_t*>(at(0, box.x)), reinterpret_cast<uint16_t*>(at(1, box.x)),
                                 reinterpret_cast<uint16_t*>(at(2, box.x))};
    done = read_row_planned_half(*src_, g.crop.x, line, next, coeffs_, plan_->sample, affine, halves, s.staging.data());
  } else {
    done = read_row_planned(*src_, g.crop.x, line, next, coeffs_, plan_->sample, affine,
                            reinterpret_cast<float*>(at(0, box.x)), reinterpret_cast<float*>(at(1, box.x)),
                            reinterpret_cast<float*>(at(2, box.x)), s.staging.data());
  }
  if (done < box.width) {
    static const SamplePlan kNoPlan;
    read_row_sampled(*src_, g.crop.x, line, g.horizontal.index.data() + done, box.width - done, coeffs_, false,
                     RgbaRows{row.base + box.x + done, row.stride}, s.staging.data(), kNoPlan);
  }
  // The rest of the row, from `row`: outputs past the plan, and the padding on both sides.
  const int64_t after = box.x + done;
  const auto store = [&](const float* in, int j, int64_t x, int64_t n) {
    if (n == 0) return;  // six dispatched calls a row for nothing, when the plan covers it
    const int c = params_.order[j];
    if (half) {
      kernels::store_f16(in + x, params_.scale[j], params_.bias[j], reinterpret_cast<uint16_t*>(at(c, x)), n);
    } else {
      kernels::store_f32(in + x, params_.scale[j], params_.bias[j], reinterpret_cast<float*>(at(c, x)), n, false);
    }
  };
  for (int j = 0; j < 3; ++j) {
    const float* in = row.channel(params_.order[j]);
    store(in, j, 0, box.x);
    store(in, j, after, dst_->width - after);
  }
  return true;
}

void CpuConverter::compose_row(Scratch& s, int64_t y, const RgbaRows& row) {
  const Geometry& g = plan_->geometry;
  const Rect& box = g.content;
  const int64_t r = y - box.y;
  const AxisTaps& v = g.vertical;
  const int64_t stride = box.width;
  if (v.two_tap && !plan_->cache_lines) {
    prefetch_next(r);
    blend_then_resample(s, v.index[r], v.weight[r], RgbaRows{row.base + box.x, row.stride});
  } else if (v.two_tap) {
    const int64_t l0 = v.index[r];
    const float w = v.weight[r];
    const float* a = cached_line(s, l0, -1);
    const float* b = w != 0.0f ? cached_line(s, l0 + 1, l0) : nullptr;
    for (int c = 0; c < channels_; ++c) {
      float* out = row.channel(c) + box.x;
      if (b == nullptr) {
        std::memcpy(out, a + c * stride, sizeof(float) * static_cast<std::size_t>(stride));
      } else {
        kernels::blend_2(a + c * stride, b + c * stride, w, out, stride);
      }
    }
  } else if (!sampled_ && !plan_->horizontal_identity) {
    // An area's source lines decoded in full and summed with their vertical weights, then each
    // output's taps once along the sum, not along every line: 4K NV12 -> 640x640 planar f32
    // took 15.4 ms, six lines' taps per output row (warm, one thread, 2026-12-05).
    const int64_t n = g.positions;
    const RgbaRows sum{s.line.data() + 4 * (n + 1), n + 1};
    for (int32_t t = v.first[r]; t < v.first[r + 1]; ++t) {
      if (!g.column_lines && t + 1 < static_cast<int32_t>(v.index.size())) {
        prefetch_row(*src_, g.crop.x, g.crop.y + v.index[t + 1], n);
      }
      const bool first = t == v.first[r];
      if (!g.column_lines && channels_ == 3) {
        // YUV lines decoded and summed in one pass (the sum was a quarter of 4K NV12 -> 640x640
        // planar f32, most of it loading the decoded line back).
        const YuvBytes bytes =
            read_row_yuv_bytes(*src_, g.crop.x, g.crop.y + v.index[t], nullptr, n, s.staging.data(), plan_->q6_sample);
        if (bytes.y != nullptr) {
          kernels::yuv_to_rgb_accumulate(bytes.y, bytes.u, bytes.v, n, coeffs_, v.weight[t], sum.channel(0),
                                         sum.channel(1), sum.channel(2), first);
          continue;
        }
      }
      const RgbaRows raw = decode_line(s, v.index[t], 0);
      for (int c = 0; c < channels_; ++c) kernels::accumulate(raw.channel(c), v.weight[t], sum.channel(c), n, first);
    }
    resample(sum, RgbaRows{row.base + box.x, row.stride});
  } else {
    float* tmp = s.scratch.data();
    for (int32_t t = v.first[r]; t < v.first[r + 1]; ++t) {
      resample_line(s, v.index[t], tmp);
      for (int c = 0; c < channels_; ++c) {
        kernels::accumulate(tmp + c * stride, v.weight[t], row.channel(c) + box.x, stride, t == v.first[r]);
      }
    }
  }
  if (fill_alpha_) std::fill(row.channel(3) + box.x, row.channel(3) + box.x + box.width, 255.0f);
}

}  // namespace memhal::detail
