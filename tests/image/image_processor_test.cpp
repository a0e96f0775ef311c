// ImageProcessor on the CPU, checked against the reference implementation in reference.cpp.
#include <hwy/targets.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memhal/image_processor.hpp>
#include <memhal/memory.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/pixel_format.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "image/cpu/pixel_io.hpp"
#include "image_test_util.hpp"
#include "reference.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

using testing::fill_random;

std::string report(const std::vector<reference::Mismatch>& bad) {
  std::string text;
  for (const auto& m : bad) {
    text += m.where + ": got " + std::to_string(m.actual) + ", expected " + std::to_string(m.expected) + "\n";
  }
  return text;
}

std::vector<uint8_t> random_bytes(std::mt19937& rng, int64_t count) {
  std::vector<uint8_t> v(static_cast<std::size_t>(count));
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

ImageProcessor processor(unsigned threads = 2) {
  return std::move(*ImageProcessor::create({.threads = threads, .backend = ImageBackend::Cpu}));
}

// The pairs the issue requires; every other pair may answer NotImplemented.
bool required_output(PixelFormat f) {
  static const std::set<PixelFormat> outputs{
      PixelFormat::Rgb,       PixelFormat::Bgr,        PixelFormat::Rgba, PixelFormat::Bgra, PixelFormat::Grey,
      PixelFormat::PlanarRgb, PixelFormat::PlanarRgba, PixelFormat::Nv12, PixelFormat::I420, PixelFormat::Yuyv};
  return outputs.count(f) != 0;
}

TEST(ImageProcessor, EveryFormatPairEitherMatchesTheReferenceOrSaysNotImplemented) {
  std::mt19937 rng(1);
  auto proc = processor();
  ConvertOptions options;
  options.resize = ResizeMode::Letterbox;
  for (PixelFormat from : all<PixelFormat>()) {
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(18, 12, from, MemoryKind::Mem));
    fill_random(src, rng);
    for (PixelFormat to : all<PixelFormat>()) {
      for (DType dtype : {DType::U8, DType::F32}) {
        auto dst = Tensor::image(14, 10, to, MemoryKind::Mem, dtype);
        if (!dst) continue;  // e.g. a YUV layout of f32 does not exist
        auto result = proc.convert(src, *dst, options);
        const std::string pair =
            std::string(to_string(from)) + " -> " + std::string(to_string(to)) + " " + std::string(to_string(dtype));
        if (!result) {
          EXPECT_EQ(result.error().code(), ErrorCode::NotImplemented) << pair << ": " << result.error().message();
          EXPECT_NE(result.error().message().find(std::string(to_string(from))), std::string::npos) << pair;
          EXPECT_NE(result.error().message().find(std::string(to_string(to))), std::string::npos) << pair;
          EXPECT_FALSE(required_output(to) && dtype == DType::U8) << pair << " is required";
          continue;
        }
        EXPECT_EQ(report(reference::compare(src, *dst, options)), "") << pair;
      }
    }
  }
}

struct Case {
  PixelFormat from, to;
  DType dtype;
};

TEST(ImageProcessor, RandomGeometriesMatchTheReference) {
  std::mt19937 rng(7);
  auto proc = processor(3);
  const std::vector<PixelFormat> inputs{PixelFormat::Nv12, PixelFormat::Nv21,     PixelFormat::Nv16, PixelFormat::Nv24,
                                        PixelFormat::I420, PixelFormat::Yuyv,     PixelFormat::Uyvy, PixelFormat::Vyuy,
                                        PixelFormat::Grey, PixelFormat::Rgb,      PixelFormat::Bgr,  PixelFormat::Rgba,
                                        PixelFormat::Bgra, PixelFormat::PlanarRgb};
  const std::vector<PixelFormat> outputs{
      PixelFormat::Rgb,       PixelFormat::Bgr,        PixelFormat::Rgba, PixelFormat::Bgra, PixelFormat::Grey,
      PixelFormat::PlanarRgb, PixelFormat::PlanarRgba, PixelFormat::Nv12, PixelFormat::I420, PixelFormat::Yuyv};
  const std::vector<DType> dtypes{DType::U8, DType::I8, DType::F16, DType::F32};
  auto pick = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
  for (int iteration = 0; iteration < 300; ++iteration) {
    const PixelFormat from = inputs[pick(inputs.size())];
    const PixelFormat to = outputs[pick(outputs.size())];
    const auto info = *pixel_format_info(from);
    const bool yuv_out = to == PixelFormat::Nv12 || to == PixelFormat::I420 || to == PixelFormat::Yuyv;
    const DType dtype = yuv_out ? DType::U8 : dtypes[pick(dtypes.size())];
    const int64_t ax = 1 << info.chroma_shift_x, ay = 1 << info.chroma_shift_y;
    const int64_t sw = (1 + pick(70)) * ax, sh = (1 + pick(50)) * ay;
    const int64_t dw = (1 + pick(60)) * (yuv_out ? 2 : 1), dh = (1 + pick(60)) * (yuv_out ? 2 : 1);
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(sw, sh, from, MemoryKind::Mem, DType::U8, 1 << pick(7)));
    ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(dw, dh, to, MemoryKind::Mem, dtype, 1 << pick(7)));
    fill_random(src, rng);
    ConvertOptions o;
    if (pick(2)) {
      Rect c;
      c.x = pick(sw / ax) * ax;
      c.y = pick(sh / ay) * ay;
      c.width = 1 + pick(sw - c.x);
      c.height = 1 + pick(sh - c.y);
      o.crop = c;
    }
    o.flip = static_cast<Flip>(pick(4));
    o.rotation = static_cast<Rotation>(pick(4));
    o.resize = static_cast<ResizeMode>(pick(2));
    o.interpolation = static_cast<Interpolation>(pick(3));
    o.matrix = static_cast<ColorMatrix>(pick(2));
    o.range = static_cast<ColorRange>(pick(2));
    o.pad = {uint8_t(pick(256)), uint8_t(pick(256)), uint8_t(pick(256)), uint8_t(pick(256))};
    o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
    o.std = {0.229f, 0.224f, 0.225f, 0.25f};
    o.swap_rb = pick(4) == 0;
    ASSERT_OK(proc.convert(src, dst, o));
    EXPECT_EQ(report(reference::compare(src, dst, o)), "")
        << to_string(from) << " " << sw << "x" << sh << " -> " << to_string(to) << " " << to_string(dtype) << " " << dw
        << "x" << dh << " flip " << int(o.flip) << " rotation " << int(o.rotation) << " resize " << int(o.resize)
        << " interpolation " << int(o.interpolation) << " crop "
        << (o.crop ? std::to_string(o.crop->x) + "," + std::to_string(o.crop->y) + " " + std::to_string(o.crop->width) +
                         "x" + std::to_string(o.crop->height)
                   : "none");
  }
}

TEST(ImageProcessor, Nv12InSeparateBuffersWithPaddedPitchesMatchesTheReference) {
  const int64_t w = 38, h = 22;
  const std::array<PlaneLayout, 2> planes{PlaneLayout{0, 100, 47}, PlaneLayout{1, 12, 61}};
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::image_planes(w, h, PixelFormat::Nv12, planes));
  UniqueFd fds[2] = {UniqueFd(memfd_create("y", MFD_CLOEXEC | MFD_ALLOW_SEALING)),
                     UniqueFd(memfd_create("uv", MFD_CLOEXEC | MFD_ALLOW_SEALING))};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(fds[i].valid());
    ASSERT_EQ(ftruncate(fds[i].get(), layout.byte_extent(i).end), 0);
  }
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::from_planes({fds[0].get(), fds[1].get()}, layout));
  std::mt19937 rng(3);
  fill_random(src, rng);
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(20, 20, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32));
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  auto proc = processor();
  ASSERT_OK(proc.convert(src, dst, o));
  EXPECT_EQ(report(reference::compare(src, dst, o)), "");
}

// Nearest sampling reads each sample's bytes several at a time; the last pixels of a row must
// not take bytes from beyond the plane. Each plane here ends where its mapping turns unreadable
// (a PROT_NONE page), so one byte too many is a crash, not a silent overread.
TEST(ImageProcessor, SamplingTheLastPixelsReadsNothingBeyondThePlane) {
  const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const int64_t w = 64;
  std::mt19937 rng(13);
  for (PixelFormat format :
       {PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::Nv16, PixelFormat::Yuyv, PixelFormat::Uyvy}) {
    const auto info = *pixel_format_info(format);
    const int64_t luma_pitch = w * info.plane_bytes_per_pixel[0];
    const int64_t h = page / luma_pitch;
    const int64_t chroma_bytes = info.planes == 2 ? luma_pitch * (h >> info.chroma_shift_y) : 0;
    std::vector<PlaneLayout> planes{PlaneLayout{0, 0, luma_pitch}};
    if (info.planes == 2) planes.push_back(PlaneLayout{1, page - chroma_bytes, luma_pitch});
    // An import maps only what its layout reaches: import twice the rows, so that the page
    // after each plane is mapped too and can be made a guard, and convert the top half.
    ASSERT_OK_AND_ASSIGN(Layout layout, info.planes == 2 ? Layout::image_planes(w, 2 * h, format, planes)
                                                         : Layout::image(w, 2 * h, format, DType::U8, 1));
    std::vector<UniqueFd> fds;
    std::vector<int> raw;
    for (std::size_t i = 0; i < planes.size(); ++i) {
      fds.emplace_back(memfd_create("plane", MFD_CLOEXEC | MFD_ALLOW_SEALING));
      ASSERT_TRUE(fds.back().valid());
      ASSERT_EQ(ftruncate(fds.back().get(), 2 * page), 0);
      raw.push_back(fds.back().get());
    }
    ASSERT_OK_AND_ASSIGN(const Tensor both_halves, Tensor::from_planes(raw, layout));
    ASSERT_OK_AND_ASSIGN(Tensor src, both_halves.crop(0, 0, w, h));
    fill_random(src, rng);
    {
      auto map = *src.map(CpuAccess::Read);
      for (std::size_t i = 0; i < planes.size(); ++i) {
        std::byte* guard = (info.planes == 2 ? map.plane(i) : map.data()) - planes[i].offset + page;
        ASSERT_EQ(mprotect(guard, static_cast<std::size_t>(page), PROT_NONE), 0);
      }
    }
    for (Flip flip : {Flip::None, Flip::Horizontal}) {
      ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(w / 2, 8, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32));
      ConvertOptions o;
      o.interpolation = Interpolation::Nearest;
      o.flip = flip;
      o.crop = Rect{0, h - 8, w, 8};
      auto proc = processor(1);
      ASSERT_OK(proc.convert(src, dst, o));
      EXPECT_EQ(report(reference::compare(src, dst, o)), "") << to_string(format) << " flip " << int(flip);
    }
  }
}

// Nearest sampling along rows picks each chunk of 8 outputs with byte shuffles planned per
// sampling step (up to a few source pixels per output, beyond which it gathers instead);
// every step, mirrored or not, from an even crop offset, must pick what the reference does.
TEST(ImageProcessor, NearestSamplingAtEveryStepMatchesTheReference) {
  std::mt19937 rng(17);
  auto proc = processor(1);
  for (PixelFormat format : {PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::Nv16, PixelFormat::Yuyv,
                             PixelFormat::Uyvy, PixelFormat::Vyuy}) {
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(326, 8, format, MemoryKind::Mem));
    fill_random(src, rng);
    for (int64_t width : {161, 107, 80, 64, 53, 45, 33, 17}) {
      for (Flip flip : {Flip::None, Flip::Horizontal}) {
        ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(width, 4, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32));
        ConvertOptions o;
        o.interpolation = Interpolation::Nearest;
        o.flip = flip;
        o.crop = Rect{2, 0, 322, 8};
        ASSERT_OK(proc.convert(src, dst, o));
        EXPECT_EQ(report(reference::compare(src, dst, o)), "")
            << to_string(format) << " to width " << width << " flip " << int(flip);
      }
    }
  }
}

// Destinations of a few MiB are written around the caches (non-temporal stores, which need
// aligned addresses), by the planned 3:1 sampling straight from the conversion or from a float
// row: rows at every alignment, letterbox bars included, must still be right.
TEST(ImageProcessor, LargeFloatDestinationsAtAnyRowAlignmentMatchTheReference) {
  std::mt19937 rng(19);
  auto proc = processor(2);
  struct Shape {
    int64_t src_w, dst_w;
    bool swap_rb;
  };
  for (Shape shape : {Shape{1920, 640, false}, Shape{1926, 642, true}, Shape{1280, 643, false}}) {
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(shape.src_w, 1080, PixelFormat::Nv12, MemoryKind::Mem));
    fill_random(src, rng);
    ASSERT_OK_AND_ASSIGN(Tensor dst,
                         Tensor::image(shape.dst_w, 640, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32, 1));
    ConvertOptions o;
    o.resize = ResizeMode::Letterbox;
    o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
    o.std = {0.229f, 0.224f, 0.225f, 0.25f};
    o.swap_rb = shape.swap_rb;
    ASSERT_OK(proc.convert(src, dst, o));
    EXPECT_EQ(report(reference::compare(src, dst, o)), "") << shape.src_w << " -> " << shape.dst_w;
  }
}

// The compiled Highway targets this CPU runs, for the tests that force each in turn
// (hwy::SetSupportedTargetsForTest); the dispatcher's own choice comes back at the end of the
// scope. A CPU whose features every target wants more of (NEON without AES) leaves none to
// force: the dispatcher's fallback is covered by SimdTarget.*, so those tests say so and skip
// rather than pass over zero targets.
struct ForcedTargets {
  std::vector<int64_t> all = hwy::SupportedAndGeneratedTargets();
  ForcedTargets() = default;
  ForcedTargets(const ForcedTargets&) = delete;
  ForcedTargets& operator=(const ForcedTargets&) = delete;
  ~ForcedTargets() { hwy::SetSupportedTargetsForTest(0); }
};
constexpr const char* kNoTarget = "no compiled Highway target is supported by this CPU";

// The kernels are compiled once per instruction set (Highway dynamic dispatch) and the machine
// running the tests picks one; forcing each compiled one in turn checks the others too (SSE4
// has NEON's 4 float lanes, EMU128 and SCALAR are the portable fallbacks).
TEST(ImageProcessor, EveryCompiledInstructionSetMatchesTheReference) {
  struct Job {
    PixelFormat from;
    int64_t src_w, src_h;
    PixelFormat to;
    DType dtype;
    int64_t dst_w, dst_h;
    Interpolation interpolation;
  };
  const Job jobs[] = {
      {PixelFormat::Nv12, 330, 60, PixelFormat::PlanarRgb, DType::F32, 110, 40, Interpolation::Bilinear},
      {PixelFormat::Yuyv, 330, 60, PixelFormat::Rgb, DType::U8, 110, 40, Interpolation::Bilinear},
      {PixelFormat::Uyvy, 200, 40, PixelFormat::Bgr, DType::U8, 67, 30, Interpolation::Nearest},
      {PixelFormat::Nv21, 96, 40, PixelFormat::Rgba, DType::I8, 61, 50, Interpolation::Bilinear},
      {PixelFormat::I420, 64, 48, PixelFormat::PlanarRgb, DType::F32, 40, 40, Interpolation::Area},
      {PixelFormat::Bgra, 50, 30, PixelFormat::Grey, DType::U8, 33, 20, Interpolation::Bilinear},
  };
  ForcedTargets targets;
  std::mt19937 rng(23);
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    auto proc = processor(1);
    for (const Job& job : jobs) {
      ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(job.src_w, job.src_h, job.from, MemoryKind::Mem));
      fill_random(src, rng);
      ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(job.dst_w, job.dst_h, job.to, MemoryKind::Mem, job.dtype));
      ConvertOptions o;
      o.resize = ResizeMode::Letterbox;
      o.interpolation = job.interpolation;
      o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
      o.std = {0.229f, 0.224f, 0.225f, 0.25f};
      ASSERT_OK(proc.convert(src, dst, o));
      EXPECT_EQ(report(reference::compare(src, dst, o)), "")
          << hwy::TargetName(target) << ": " << to_string(job.from) << " -> " << to_string(job.to);
    }
  }
}

// One row of picks for the pick tests: n indices `step` apart from 0..2 (for steps over 1,
// every third step one more or less), rising or falling, and a luma and a chroma row of random
// bytes, exactly as many as the indices reach (a packed format's pixels are 2 bytes).
struct PickRows {
  std::vector<int32_t> index;
  std::vector<uint8_t> luma, chroma;
  int64_t bytes = 0;
  PickRows(std::mt19937& rng, int64_t n, int step, bool packed, bool falling = false)
      : index(static_cast<std::size_t>(n)) {
    int32_t at = static_cast<int32_t>(rng() % 3);
    for (auto& i : index) i = at, at += step + (step > 1 && rng() % 3 == 0 ? (rng() % 2 ? 1 : -1) : 0);
    if (falling) std::reverse(index.begin(), index.end());
    const int64_t width = (*std::max_element(index.begin(), index.end()) + 2) & ~int64_t{1};
    bytes = packed ? 2 * width : width;
    luma.resize(static_cast<std::size_t>(bytes));
    chroma.resize(static_cast<std::size_t>(bytes));
    for (auto& b : luma) b = static_cast<uint8_t>(rng());
    for (auto& b : chroma) b = static_cast<uint8_t>(rng());
  }
};

// The word picks (16-bit permutes, 16 or 32 outputs a chunk; 32-bit ones for packed
// macropixels) pick the bytes the shuffle windows pick, for every YUV format they serve, steps from 1 to past their
// window, jittered indices, and rows that end inside the last windows (held in vectors of exactly the readable bytes,
// so that a sanitizer sees any read past them), on every compiled instruction set.
TEST(ImageProcessor, WordPicksPickWhatTheShuffleWindowsPickOnEveryInstructionSet) {
  ForcedTargets targets;
  const PixelFormat formats[] = {PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::Nv16,
                                 PixelFormat::Yuyv, PixelFormat::Uyvy, PixelFormat::Vyuy};
  std::set<int> layouts;  // the layouts of the plans that were built
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(41);
    for (PixelFormat format : formats) {
      const bool packed = format == PixelFormat::Yuyv || format == PixelFormat::Uyvy || format == PixelFormat::Vyuy;
      for (int step = 1; step <= 9; ++step) {
        const int64_t n = 16 + static_cast<int64_t>(rng() % 80);
        const PickRows pick(rng, n, step, packed);
        const std::vector<int32_t>& index = pick.index;
        const int64_t bytes = pick.bytes;
        detail::SamplePlan plan;
        plan.build(format, index.data(), n);
        if (plan.words.chunks == 0) {
          EXPECT_GT(step, packed ? 3 : 7) << "no word picks for a step that fits a window";
          continue;
        }
        layouts.insert(plan.words.macropixels ? 0 : plan.words.outputs);
        ASSERT_GT(plan.chunks, 0);
        const uint8_t* rows[2] = {pick.luma.data(), packed ? pick.luma.data() : pick.chroma.data()};
        const int64_t limits[2] = {bytes, bytes};
        const int64_t done = std::min(plan.words.outputs * plan.words.chunks, 8 * plan.chunks);
        std::vector<uint8_t> words(static_cast<std::size_t>(3 * n), 0), windows(static_cast<std::size_t>(3 * n), 0);
        detail::kernels::word_picked_yuv_bytes(rows, plan.words, limits, words.data(), words.data() + n,
                                               words.data() + 2 * n);
        detail::kernels::shuffled_yuv_bytes(rows, plan.streams.data(), limits, plan.slots.data(), plan.chunks,
                                            windows.data(), windows.data() + n, windows.data() + 2 * n);
        for (int c = 0; c < 3; ++c) {
          for (int64_t i = 0; i < done; ++i) {
            ASSERT_EQ(words[c * n + i], windows[c * n + i])
                << hwy::TargetName(target) << " " << to_string(format) << " step " << step << " channel " << c
                << " output " << i << " of " << n << " (" << plan.words.outputs << " a chunk)";
          }
        }
      }
    }
  }
  EXPECT_EQ(layouts, (std::set<int>{0, 16, 32}));  // macropixels, 16 and 32 outputs a chunk
}

// The shuffle chunks (8 outputs a chunk; two chunks at a time where the vectors are 256 bits)
// pick the bytes their indices name, for every YUV format they serve: steps from 1 to past their
// windows, jittered, rising and falling indices, and rows that end inside the last windows (held
// in vectors of exactly the readable bytes, so that a sanitizer sees any read past them), on
// every compiled instruction set.
TEST(ImageProcessor, ShufflePicksPickTheIndexedBytesOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const PixelFormat formats[] = {PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::Nv16,
                                 PixelFormat::Yuyv, PixelFormat::Uyvy, PixelFormat::Vyuy};
  // Plans with and without pairs of chunks, pairs in two loads, second streams on the first's loads;
  // lane picks (AVX2's normalised rows) served, with halves in two loads and in one.
  int paired = 0, unpaired = 0, split = 0, shared = 0, lanes = 0, lanes_split = 0, lanes_contiguous = 0;
  const detail::ColorCoeffs coeffs = detail::color_coeffs(ColorMatrix::Bt601, ColorRange::Limited);
  const float affine[6] = {1.0f / 58.4f, 1.0f / 57.1f, 1.0f / 57.4f, -2.1f, -2.0f, -1.8f};
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(43);
    for (PixelFormat format : formats) {
      const bool packed = format == PixelFormat::Yuyv || format == PixelFormat::Uyvy || format == PixelFormat::Vyuy;
      // Byte offsets within a macropixel of Y of its even pixel, U, Y of its odd pixel, V.
      const std::array<int, 4> macro = format == PixelFormat::Yuyv   ? std::array<int, 4>{0, 1, 2, 3}
                                       : format == PixelFormat::Uyvy ? std::array<int, 4>{1, 0, 3, 2}
                                                                     : std::array<int, 4>{1, 2, 3, 0};
      const int u_first = format == PixelFormat::Nv21 ? 1 : 0;  // the chroma pair's U byte
      for (int step = 1; step <= 10; ++step) {
        for (bool falling : {false, true}) {
          const int64_t n = 16 + static_cast<int64_t>(rng() % 100);
          const PickRows pick(rng, n, step, packed, falling);
          const std::vector<int32_t>& index = pick.index;
          const int64_t bytes = pick.bytes;
          const std::vector<uint8_t>&luma = pick.luma, &chroma = pick.chroma;
          detail::SamplePlan plan;
          plan.build(format, index.data(), n);
          if (step <= 3) {
            ASSERT_GT(plan.chunks, 0) << to_string(format) << " step " << step;
          }
          if (plan.chunks == 0) continue;
          const auto& pairs = plan.streams[0].pair_base;
          (std::any_of(pairs.begin(), pairs.end(), [](int32_t b) { return b >= 0; }) ? paired : unpaired)++;
          split += plan.streams[0].pair_split || plan.streams[1].pair_split;
          shared += plan.streams[1].pair_shared;
          const uint8_t* rows[2] = {luma.data(), packed ? luma.data() : chroma.data()};
          const int64_t limits[2] = {bytes, bytes};
          std::vector<uint8_t> out(static_cast<std::size_t>(3 * n), 0);
          detail::kernels::shuffled_yuv_bytes(rows, plan.streams.data(), limits, plan.slots.data(), plan.chunks,
                                              out.data(), out.data() + n, out.data() + 2 * n);
          for (int64_t i = 0; i < 8 * plan.chunks; ++i) {
            const int32_t x = index[static_cast<std::size_t>(i)];
            uint8_t want[3];
            if (packed) {
              const uint8_t* m = luma.data() + 4 * (x >> 1);
              want[0] = m[macro[(x & 1) ? 2 : 0]], want[1] = m[macro[1]], want[2] = m[macro[3]];
            } else {
              const uint8_t* pair = chroma.data() + (x & ~1);
              want[0] = luma[static_cast<std::size_t>(x)], want[1] = pair[u_first], want[2] = pair[1 - u_first];
            }
            for (int c = 0; c < 3; ++c) {
              ASSERT_EQ(out[static_cast<std::size_t>(c * n + i)], want[c])
                  << hwy::TargetName(target) << " " << to_string(format) << " step " << step
                  << (falling ? " falling" : " rising") << " channel " << c << " output " << i << " of " << n;
            }
          }
          // The same picks into 32-bit lanes, normalised: the floats of the bytes picked above.
          std::vector<float> got(static_cast<std::size_t>(3 * n)), floats(got.size());
          const int64_t done = detail::kernels::lane_yuv_to_planar(rows, plan.lanes, limits, nullptr, coeffs, affine,
                                                                   got.data(), got.data() + n, got.data() + 2 * n);
          ASSERT_EQ(done % 8, 0);
          ASSERT_LE(done, std::min<int64_t>(8 * plan.lanes.halves, 8 * plan.chunks));
          if (done == 0) continue;
          ++lanes;
          lanes_split += plan.lanes.contiguous_from > 0;
          lanes_contiguous += plan.lanes.contiguous_from < done / 8;
          detail::kernels::planar_yuv_to_rgb(out.data(), out.data() + n, out.data() + 2 * n, done, coeffs,
                                             floats.data(), floats.data() + n, floats.data() + 2 * n, affine);
          for (int c = 0; c < 3; ++c) {
            for (int64_t i = 0; i < done; ++i) {
              const auto at = static_cast<std::size_t>(c * n + i);
              ASSERT_EQ(got[at], floats[at])
                  << hwy::TargetName(target) << " " << to_string(format) << " step " << step
                  << (falling ? " falling" : " rising") << " lanes, channel " << c << " output " << i << " of " << n;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(paired, 0);
  EXPECT_GT(unpaired, 0);
  EXPECT_GT(split, 0);
  EXPECT_GT(shared, 0);
  if (std::find(targets.all.begin(), targets.all.end(), int64_t{HWY_AVX2}) != targets.all.end()) {
    EXPECT_GT(lanes, 0);
    EXPECT_GT(lanes_split, 0);
    EXPECT_GT(lanes_contiguous, 0);
  }
}

// Rows of one source line whose picked pixels are the outputs (nearest downscales, and
// bilinear ones that land on whole pixels) go from YUV bytes to 8-bit pixels in one pass
// (straight from the shuffles on AVX2): every YUV source, every interleaved RGB-family output
// and planar RGB, R and B swapped or not, u8 and i8, letterbox bars on either axis (padding
// columns beside each row, or whole padding rows), flips, on every compiled instruction set.
TEST(ImageProcessor, OneLineRowsFromYuvTo8BitPixelsMatchTheReferenceOnEveryInstructionSet) {
  ForcedTargets targets;
  const PixelFormat sources[] = {PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::Nv16, PixelFormat::Nv24,
                                 PixelFormat::I420, PixelFormat::Yuyv, PixelFormat::Uyvy, PixelFormat::Vyuy};
  const PixelFormat outputs[] = {PixelFormat::Rgb, PixelFormat::Bgr, PixelFormat::Rgba, PixelFormat::Bgra,
                                 PixelFormat::PlanarRgb};
  struct Shape {
    int64_t sw, sh, dw, dh;
    Interpolation interpolation;
  };
  const Shape shapes[] = {{198, 90, 66, 66, Interpolation::Bilinear},  // 3:1 onto whole pixels, bars above and below
                          {96, 150, 50, 50, Interpolation::Nearest},   // bars left and right
                          {130, 40, 41, 17, Interpolation::Nearest}};  // odd sizes
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(43);
    auto proc = processor(1);
    for (PixelFormat from : sources) {
      for (const Shape& shape : shapes) {
        ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(shape.sw, shape.sh, from, MemoryKind::Mem));
        fill_random(src, rng);
        for (PixelFormat to : outputs) {
          for (DType dtype : {DType::U8, DType::I8}) {
            ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(shape.dw, shape.dh, to, MemoryKind::Mem, dtype));
            ConvertOptions o;
            o.resize = ResizeMode::Letterbox;
            o.interpolation = shape.interpolation;
            o.flip = static_cast<Flip>(rng() % 4);
            o.swap_rb = rng() % 2 == 1;
            o.pad = {114, 20, 240, 7};
            ASSERT_OK(proc.convert(src, dst, o));
            EXPECT_EQ(report(reference::compare(src, dst, o)), "")
                << hwy::TargetName(target) << ": " << to_string(from) << " " << shape.sw << "x" << shape.sh << " -> "
                << to_string(to) << " " << to_string(dtype) << " " << shape.dw << "x" << shape.dh;
          }
        }
      }
    }
  }
}

// f16 stores (hardware conversion where the target has F16C, a rounding add elsewhere) give
// the bits of half_from_float for every kind of float: normal halves, ties, subnormal halves,
// zeros, overflow to infinity, infinities and NaN (any NaN payload), on every compiled
// instruction set.
TEST(ImageProcessor, HalfStoresRoundAsHalfFromFloatOnEveryInstructionSet) {
  ForcedTargets targets;
  std::mt19937 rng(47);
  std::vector<float> in;
  for (int i = 0; i < 4096; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    float f = 0;
    std::memcpy(&f, &bits, sizeof f);
    in.push_back(f);                                                                         // any float
    in.push_back(std::ldexp(static_cast<float>(rng() % 4096) / 4096.0f + 1, -30 + i % 50));  // halves' range
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    in.push_back(f);
  }
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::vector<uint16_t> out(in.size());
    detail::kernels::store_f16(in.data(), 1.0f, 0.0f, out.data(), static_cast<int64_t>(in.size()));
    for (std::size_t i = 0; i < in.size(); ++i) {
      const uint16_t want = detail::kernels::half_from_float(in[i] * 1.0f + 0.0f);  // -0 + 0 is +0
      const bool nan = (want & 0x7C00) == 0x7C00 && (want & 0x3FF) != 0;
      if (nan) {
        EXPECT_TRUE((out[i] & 0x7C00) == 0x7C00 && (out[i] & 0x3FF) != 0) << hwy::TargetName(target) << " NaN " << i;
      } else {
        ASSERT_EQ(out[i], want) << hwy::TargetName(target) << ": " << in[i] << " (element " << i << ")";
      }
    }
  }
}

// Bilinear downscales by 2 or more decode each output's two taps side by side and blend them in
// vectors, on the integer path and the float one (4K -> 640 is 6:1 with both taps at weight one
// half; 720p -> 640 is 2:1, every column in order): ratios whole and fractional, 8-bit and
// float outputs, flips, on every compiled instruction set.
TEST(ImageProcessor, BilinearDownscalesByTwoOrMoreMatchTheReferenceOnEveryInstructionSet) {
  ForcedTargets targets;
  struct Shape {
    PixelFormat from;
    int64_t sw, sh, dw, dh;
  };
  const Shape shapes[] = {{PixelFormat::Nv12, 384, 216, 64, 64},  // 6:1, letterbox
                          {PixelFormat::Yuyv, 250, 100, 61, 37},  // 4.1:1 and 2.7:1
                          {PixelFormat::I420, 130, 64, 65, 20},   // 2:1 exactly along rows
                          // 2:1 exactly both ways: semi-planar lines read whole, no picks
                          {PixelFormat::Nv12, 128, 72, 64, 64},
                          {PixelFormat::Nv21, 96, 48, 48, 24},
                          {PixelFormat::Nv16, 80, 40, 40, 20},
                          {PixelFormat::Yuyv, 128, 72, 64, 64},  // packed lines, straight from macropixels
                          {PixelFormat::Uyvy, 96, 48, 48, 24},
                          {PixelFormat::Vyuy, 100, 30, 50, 15},
                          {PixelFormat::Rgba, 200, 90, 47, 30}};  // an RGB source
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(53);
    auto proc = processor(1);
    for (const Shape& shape : shapes) {
      ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(shape.sw, shape.sh, shape.from, MemoryKind::Mem));
      fill_random(src, rng);
      for (PixelFormat to : {PixelFormat::Rgb, PixelFormat::Bgra, PixelFormat::PlanarRgb, PixelFormat::Grey}) {
        for (DType dtype : {DType::U8, DType::I8, DType::F32, DType::F16}) {
          ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(shape.dw, shape.dh, to, MemoryKind::Mem, dtype));
          ConvertOptions o;
          o.resize = ResizeMode::Letterbox;
          o.flip = static_cast<Flip>(rng() % 4);
          o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
          o.std = {0.229f, 0.224f, 0.225f, 0.25f};
          ASSERT_OK(proc.convert(src, dst, o));
          EXPECT_EQ(report(reference::compare(src, dst, o)), "")
              << hwy::TargetName(target) << ": " << to_string(shape.from) << " " << shape.sw << "x" << shape.sh
              << " -> " << to_string(to) << " " << to_string(dtype) << " " << shape.dw << "x" << shape.dh;
        }
      }
    }
  }
}

// Writes a YUV picture into `t`, a w x h image of `f` (Nv12, Nv21, Nv16, Nv24, Yuyv, Uyvy or
// Vyuy): Y of pixel (x, y)
// is luma(x, y), its U and V chroma(x, y, 0) and (x, y, 1), read at each chroma sample's
// top-left pixel (so a 4:4:4 picture of the same function carries each pixel's subsampled chroma).
template <class Luma, class Chroma>
void write_yuv(const Tensor& t, PixelFormat f, int64_t w, int64_t h, const Luma& luma, const Chroma& chroma) {
  auto map = *t.map(CpuAccess::Write);
  const auto planes = map.layout().planes();
  const auto b = [](int v) { return std::byte(static_cast<uint8_t>(v)); };
  if (f == PixelFormat::Yuyv || f == PixelFormat::Uyvy || f == PixelFormat::Vyuy) {
    const std::array<int, 4> pos = f == PixelFormat::Yuyv   ? std::array<int, 4>{0, 1, 2, 3}
                                   : f == PixelFormat::Uyvy ? std::array<int, 4>{1, 0, 3, 2}
                                                            : std::array<int, 4>{1, 2, 3, 0};  // Y0, U, Y1, V
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; x += 2) {
        std::byte* m = map.data() + y * map.layout().strides()[0] + 2 * x;
        m[pos[0]] = b(luma(x, y)), m[pos[2]] = b(luma(x + 1, y));
        m[pos[1]] = b(chroma(x, y, 0)), m[pos[3]] = b(chroma(x, y, 1));
      }
    }
    return;
  }
  const int sx = f == PixelFormat::Nv24 ? 1 : 2, sy = f == PixelFormat::Nv12 || f == PixelFormat::Nv21 ? 2 : 1;
  const int first = f == PixelFormat::Nv21 ? 1 : 0;  // U's byte in a chroma pair
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) map.plane(0)[y * planes[0].pitch + x] = b(luma(x, y));
  }
  for (int64_t y = 0; y < h / sy; ++y) {
    for (int64_t x = 0; x < w / sx; ++x) {
      std::byte* pair = map.plane(1) + y * planes[1].pitch + 2 * x;
      pair[first] = b(chroma(sx * x, sy * y, 0)), pair[1 - first] = b(chroma(sx * x, sy * y, 1));
    }
  }
}

// Downscales whose pixel pairs share their chroma (even factors: 4K -> 640x640 blends pixels
// 6i + 2 and 6i + 3) pick each line's pairs whole (a Y word and its chroma pair, a macropixel)
// and decode them as a 2:1 downscale's lines: exactly the bytes of a 4:4:4 twin whose every
// pixel carries its subsampled chroma (picked and decoded pixel by pixel), and the reference's
// within +-1; crops, lines from both chroma lines, flips, on every compiled instruction set.
TEST(ImageProcessor, ChromaSharingPairsPickedWholeGiveTheBytesOfEachPixelsOwnChroma) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  struct Job {
    PixelFormat from;
    int64_t sw, sh, dw, dh;
    Rect crop;
  };
  const Job jobs[] = {
      {PixelFormat::Nv12, 384, 216, 64, 64, {0, 0, 384, 216}},   // 6:1, letterbox
      {PixelFormat::Nv21, 390, 222, 64, 64, {2, 4, 384, 216}},   // 6:1 from a crop
      {PixelFormat::Nv16, 390, 70, 64, 10, {4, 3, 384, 60}},     // 6:1 from an odd line, chroma on every line
      {PixelFormat::Yuyv, 384, 216, 64, 64, {0, 0, 384, 216}},   // 6:1
      {PixelFormat::Uyvy, 390, 222, 64, 64, {2, 1, 384, 216}},   // 6:1 from a crop
      {PixelFormat::Vyuy, 2000, 60, 200, 10, {0, 0, 2000, 60}},  // 10:1 and 6:1, past a vector's outputs
      {PixelFormat::Nv12, 2000, 64, 200, 16, {0, 0, 2000, 64}},  // 10:1 and 4:1 (lines 4i + 1, 4i + 2)
  };
  std::mt19937 rng(61);
  std::vector<uint8_t> noise(1 << 16);
  for (auto& v : noise) v = static_cast<uint8_t>(rng());
  const auto luma = [&](int64_t x, int64_t y) { return noise[(x * 131 + y * 977) & 0xFFFF]; };
  const auto chroma = [&](int64_t x, int64_t y, int c) { return noise[(x * 37 + y * 1543 + c * 7919 + 5) & 0xFFFF]; };
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    auto proc = processor(1);
    for (const Job& c : jobs) {
      ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(c.sw, c.sh, c.from, MemoryKind::Mem));
      ASSERT_OK_AND_ASSIGN(Tensor twin, Tensor::image(c.sw, c.sh, PixelFormat::Nv24, MemoryKind::Mem));
      write_yuv(src, c.from, c.sw, c.sh, luma, chroma);
      const int sx = 2, sy = c.from == PixelFormat::Nv12 || c.from == PixelFormat::Nv21 ? 2 : 1;
      write_yuv(twin, PixelFormat::Nv24, c.sw, c.sh, luma,
                [&](int64_t x, int64_t y, int ch) { return chroma(x / sx * sx, y / sy * sy, ch); });
      for (const auto& [to, dtype] : {std::pair{PixelFormat::Rgb, DType::U8},
                                      {PixelFormat::Bgra, DType::I8},
                                      {PixelFormat::PlanarRgb, DType::U8}}) {
        for (Flip flip : {Flip::None, Flip::Both}) {
          ConvertOptions o;
          o.resize = ResizeMode::Letterbox;
          o.crop = c.crop;
          o.flip = flip;
          ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(c.dw, c.dh, to, MemoryKind::Mem, dtype));
          ASSERT_OK_AND_ASSIGN(Tensor want, Tensor::image(c.dw, c.dh, to, MemoryKind::Mem, dtype));
          ASSERT_OK(proc.convert(src, dst, o));
          ASSERT_OK(proc.convert(twin, want, o));
          std::ostringstream what;
          what << hwy::TargetName(target) << ": " << to_string(c.from) << " " << c.sw << "x" << c.sh << " -> "
               << to_string(to) << " " << to_string(dtype) << ", flip " << int(flip);
          EXPECT_EQ(report(reference::compare(src, dst, o)), "") << what.str();
          const auto got = *dst.map(CpuAccess::Read);
          const auto expected = *want.map(CpuAccess::Read);
          // Rows of the planes, or of the one interleaved image.
          const auto planes = got.layout().planes();
          const auto strides = got.layout().strides();
          const auto shape = got.layout().shape();
          for (std::size_t i = 0; i < std::max<std::size_t>(planes.size(), 1); ++i) {
            const bool one = planes.empty();
            const int64_t rows = one ? shape[0] : planes[i].height, pitch = one ? strides[0] : planes[i].pitch;
            const auto bytes = static_cast<std::size_t>(one ? shape[1] * strides[1] : planes[i].row_bytes);
            const std::byte* a = one ? got.data() : got.plane(i);
            const std::byte* e = one ? expected.data() : expected.plane(i);
            for (int64_t y = 0; y < rows; ++y) {
              ASSERT_EQ(0, std::memcmp(a + y * pitch, e + y * pitch, bytes))
                  << what.str() << ", plane " << i << ", row " << y;
            }
          }
        }
      }
    }
  }
}

// A plan is kept per geometry, not per source format: its picks must follow the source's
// format from one call to the next, on the integer and the float path alike (they share them).
TEST(ImageProcessor, SourcesOfOtherFormatsThroughOnePlanMatchTheReference) {
  std::mt19937 rng(59);
  auto proc = processor(1);
  for (const auto& [w, h] : {std::pair<int64_t, int64_t>{384, 216}, {128, 72}}) {  // picked pairs; 2:1 lines
    for (int round = 0; round < 2; ++round) {
      for (PixelFormat from : {PixelFormat::Nv12, PixelFormat::Yuyv, PixelFormat::I420, PixelFormat::Uyvy}) {
        ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(w, h, from, MemoryKind::Mem));
        fill_random(src, rng);
        for (DType dtype : {DType::F32, DType::U8}) {
          ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(64, 64, PixelFormat::PlanarRgb, MemoryKind::Mem, dtype));
          ConvertOptions o;
          o.resize = ResizeMode::Letterbox;
          ASSERT_OK(proc.convert(src, dst, o));
          EXPECT_EQ(report(reference::compare(src, dst, o)), "")
              << to_string(from) << " " << w << "x" << h << " -> " << to_string(dtype) << ", round " << round;
        }
      }
    }
  }
}

// 8-bit outputs decode and resample in 16-bit fixed point (Q6); on every compiled instruction
// set, random geometries (odd sizes, crops, flips, rotations, letterbox bars, nearest,
// bilinear and area at every kind of step, area downscales by non-integer ratios, box sums
// in Q6) must stay within the reference's +-1, as must f16 outputs
// (rounded in registers where the half is normal).
TEST(ImageProcessor, IntegerPathAndHalfOutputsMatchTheReferenceOnEveryInstructionSet) {
  const std::vector<PixelFormat> inputs{PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::Nv16,
                                        PixelFormat::Nv24, PixelFormat::I420, PixelFormat::Yuyv,
                                        PixelFormat::Uyvy, PixelFormat::Vyuy, PixelFormat::Rgb,
                                        PixelFormat::Bgra, PixelFormat::Grey, PixelFormat::PlanarRgba};
  const std::vector<PixelFormat> outputs{PixelFormat::Rgb,       PixelFormat::Bgr,  PixelFormat::Rgba,
                                         PixelFormat::Bgra,      PixelFormat::Grey, PixelFormat::PlanarRgb,
                                         PixelFormat::PlanarRgba};
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(31);
    auto pick = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
    auto proc = processor(1);
    for (int iteration = 0; iteration < 60; ++iteration) {
      const PixelFormat from = inputs[pick(inputs.size())];
      const PixelFormat to = outputs[pick(outputs.size())];
      const DType dtype = iteration % 10 == 9 ? DType::F16 : pick(2) ? DType::U8 : DType::I8;
      const auto info = *pixel_format_info(from);
      const int64_t ax = 1 << info.chroma_shift_x, ay = 1 << info.chroma_shift_y;
      const int64_t sw = (1 + pick(90)) * ax, sh = (1 + pick(40)) * ay;
      const int64_t dw = 1 + pick(70), dh = 1 + pick(40);
      ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(sw, sh, from, MemoryKind::Mem));
      fill_random(src, rng);
      ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(dw, dh, to, MemoryKind::Mem, dtype));
      ConvertOptions o;
      if (pick(3) == 0) {
        Rect c;
        c.x = pick(sw / ax) * ax;
        c.y = pick(sh / ay) * ay;
        c.width = 1 + pick(sw - c.x);
        c.height = 1 + pick(sh - c.y);
        o.crop = c;
      }
      o.flip = static_cast<Flip>(pick(4));
      o.rotation = pick(4) == 0 ? Rotation::Cw90 : pick(3) == 0 ? Rotation::Cw180 : Rotation::None;
      o.resize = static_cast<ResizeMode>(pick(2));
      o.interpolation = static_cast<Interpolation>(pick(3));
      o.matrix = static_cast<ColorMatrix>(pick(2));
      o.range = static_cast<ColorRange>(pick(2));
      o.pad = {uint8_t(pick(256)), uint8_t(pick(256)), uint8_t(pick(256)), uint8_t(pick(256))};
      o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
      o.std = {0.229f, 0.224f, 0.225f, 0.25f};
      o.swap_rb = pick(4) == 0;
      ASSERT_OK(proc.convert(src, dst, o));
      EXPECT_EQ(report(reference::compare(src, dst, o)), "")
          << hwy::TargetName(target) << ": " << to_string(from) << " " << sw << "x" << sh << " -> " << to_string(to)
          << " " << to_string(dtype) << " " << dw << "x" << dh << " flip " << int(o.flip) << " rotation "
          << int(o.rotation) << " resize " << int(o.resize) << " interpolation " << int(o.interpolation);
    }
  }
}

// Planar f16 rows of one source line come straight from the picked bytes (planar_yuv_to_half),
// f32 ones likewise as floats: each half must be the f32 output rounded to nearest even, for
// the letterbox the benchmarks run (3:1, whole source pixels) and nearest sampling, on every
// instruction set (word picks on AVX-512, shuffle windows and a float row elsewhere).
TEST(ImageProcessor, HalfOutputsAreTheFloatOutputsRoundedOnEveryInstructionSet) {
  struct Job {
    PixelFormat from;
    int64_t sw, sh, dw, dh;
    Interpolation interpolation;
  };
  const std::vector<Job> jobs{{PixelFormat::Nv12, 384, 216, 128, 128, Interpolation::Bilinear},
                              {PixelFormat::Nv21, 384, 216, 128, 128, Interpolation::Bilinear},
                              {PixelFormat::Yuyv, 384, 216, 128, 128, Interpolation::Bilinear},
                              {PixelFormat::Uyvy, 390, 222, 130, 100, Interpolation::Bilinear},
                              {PixelFormat::Nv12, 256, 144, 100, 100, Interpolation::Nearest},
                              {PixelFormat::Yuyv, 200, 300, 96, 96, Interpolation::Nearest}};
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(53);
    auto proc = processor(1);
    for (const Job& job : jobs) {
      ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(job.sw, job.sh, job.from, MemoryKind::Mem));
      fill_random(src, rng);
      ASSERT_OK_AND_ASSIGN(Tensor f32_dst,
                           Tensor::image(job.dw, job.dh, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32));
      ASSERT_OK_AND_ASSIGN(Tensor f16_dst,
                           Tensor::image(job.dw, job.dh, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F16));
      ConvertOptions o;
      o.resize = ResizeMode::Letterbox;
      o.interpolation = job.interpolation;
      o.pad = {114, 114, 114, 0};
      o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
      o.std = {0.229f, 0.224f, 0.225f, 0.25f};
      o.swap_rb = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
      ASSERT_OK(proc.convert(src, f32_dst, o));
      ASSERT_OK(proc.convert(src, f16_dst, o));
      EXPECT_EQ(report(reference::compare(src, f16_dst, o)), "") << hwy::TargetName(target);
      // Planar RGB is one {3, H, W} tensor with padded rows: byte strides.
      auto floats = *f32_dst.map(CpuAccess::Read);
      auto halves = *f16_dst.map(CpuAccess::Read);
      const auto fs = floats.layout().strides();
      const auto hs = halves.layout().strides();
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t y = 0; y < job.dh; ++y) {
          for (int64_t x = 0; x < job.dw; ++x) {
            float f = 0;
            uint16_t h = 0;
            std::memcpy(&f, floats.const_data() + c * fs[0] + y * fs[1] + x * fs[2], sizeof f);
            std::memcpy(&h, halves.const_data() + c * hs[0] + y * hs[1] + x * hs[2], sizeof h);
            ASSERT_EQ(h, detail::kernels::half_from_float(f))
                << hwy::TargetName(target) << ": " << to_string(job.from) << " " << job.sw << "x" << job.sh << " -> "
                << job.dw << "x" << job.dh << ", channel " << c << " (" << x << ", " << y << "), f32 " << f;
          }
        }
      }
    }
  }
}

// Area downscales sum decoded lines vertically, then each output's taps along the row (8-bit
// outputs in Q6, float ones in f32): integer and non-integer ratios, one axis kept (the decoded
// pixels are the outputs, or the vertical axis upscaled), crops, flips and letterbox bars, on
// every instruction set.
TEST(ImageProcessor, AreaDownscalesMatchTheReferenceOnEveryInstructionSet) {
  struct Job {
    PixelFormat from, to;
    int64_t sw, sh, dw, dh;
    ResizeMode resize;
    std::optional<Rect> crop;
    Flip flip;
  };
  const Job jobs[] = {
      {PixelFormat::Nv12, PixelFormat::Rgb, 384, 216, 64, 64, ResizeMode::Letterbox, {}, Flip::None},    // 6:1
      {PixelFormat::Yuyv, PixelFormat::Bgra, 102, 67, 29, 13, ResizeMode::Stretch, {}, Flip::Both},      // 3.52:1
      {PixelFormat::Nv12, PixelFormat::PlanarRgb, 70, 34, 70, 13, ResizeMode::Stretch, {}, Flip::None},  // rows only
      {PixelFormat::I420, PixelFormat::Grey, 70, 34, 29, 34, ResizeMode::Stretch, {}, Flip::Vertical},   // columns only
      {PixelFormat::Rgba, PixelFormat::Rgba, 90, 20, 31, 40, ResizeMode::Stretch, {}, Flip::None},       // rows up
      {PixelFormat::Nv16, PixelFormat::Rgb, 96, 80, 23, 17, ResizeMode::Letterbox, Rect{10, 6, 71, 59},
       Flip::Horizontal},
  };
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(5);
    auto proc = processor(2);
    for (const Job& job : jobs) {
      for (DType dtype : {DType::U8, DType::I8, DType::F32, DType::F16}) {
        ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(job.sw, job.sh, job.from, MemoryKind::Mem));
        fill_random(src, rng);
        ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(job.dw, job.dh, job.to, MemoryKind::Mem, dtype));
        ConvertOptions o;
        o.interpolation = Interpolation::Area;
        o.resize = job.resize;
        o.crop = job.crop;
        o.flip = job.flip;
        o.pad = {114, 20, 240, 255};
        ASSERT_OK(proc.convert(src, dst, o));
        EXPECT_EQ(report(reference::compare(src, dst, o)), "")
            << hwy::TargetName(target) << ": " << to_string(job.from) << " " << job.sw << "x" << job.sh << " -> "
            << to_string(job.to) << " " << to_string(dtype) << " " << job.dw << "x" << job.dh;
      }
    }
  }
}

// The area taps' kernel, which sums many outputs' windows at a time (16 on AVX-512, 8 on AVX2,
// 4 on 128-bit targets, the rest one by one), gives every output exactly the sum the kernel's
// contract defines: window starts from dense to sparse and out of order, negative and full-range
// Q6 inputs and weights, every count from 0 to past two vectors, on every instruction set.
TEST(ImageProcessor, AreaWindowTapsAreExactOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(23);
    for (int64_t n = 0; n <= 41; ++n) {
      for (int spread : {1, 6, 40}) {
        std::vector<int32_t> start(static_cast<std::size_t>(n));
        for (auto& s : start) s = static_cast<int32_t>(rng() % static_cast<uint32_t>(spread * n + 1));
        std::vector<int16_t> in(static_cast<std::size_t>(spread * n + 1 + 8));
        for (auto& v : in) v = static_cast<int16_t>(static_cast<int32_t>(rng() % 16384) - 1024);
        std::vector<int16_t> window(static_cast<std::size_t>(8 * n));
        for (auto& w : window) w = static_cast<int16_t>(rng() % 3 == 0 ? 0 : rng() % 8192);
        std::vector<int16_t> out(static_cast<std::size_t>(n) + 1, int16_t{-7});
        detail::kernels::resample_window_q6(in.data(), start.data(), window.data(), out.data(), n);
        for (int64_t o = 0; o < n; ++o) {
          int32_t sum = 16384;
          for (int k = 0; k < 8; ++k) sum += in[start[o] + k] * window[8 * o + k];
          ASSERT_EQ(out[o], static_cast<int16_t>(sum >> 15))
              << hwy::TargetName(target) << ": output " << o << " of " << n << ", spread " << spread;
        }
        ASSERT_EQ(out[n], -7) << hwy::TargetName(target) << ": wrote past " << n << " outputs";
      }
    }
  }
}

// The float path's area taps, each output's window products reduced four outputs at a time,
// give each output the sum of its window (to float rounding: the order of the adds differs from the
// scalar one, and targets without FMA round twice), every count from 0 to past two vectors.
TEST(ImageProcessor, FloatAreaWindowTapsSumTheirWindowOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(37);
    for (int64_t n = 0; n <= 41; ++n) {
      std::vector<int32_t> start(static_cast<std::size_t>(n));
      for (auto& s : start) s = static_cast<int32_t>(rng() % static_cast<uint32_t>(6 * n + 1));
      std::vector<float> in(static_cast<std::size_t>(6 * n + 1 + 8));
      for (auto& v : in) v = static_cast<float>(rng() % 25500) / 100.0f;
      std::vector<float> window(static_cast<std::size_t>(8 * n));
      for (auto& w : window) w = rng() % 3 == 0 ? 0.0f : static_cast<float>(rng() % 1000) / 4000.0f;
      std::vector<float> out(static_cast<std::size_t>(n) + 1, -7.0f);
      detail::kernels::resample_window(in.data(), start.data(), window.data(), out.data(), n);
      for (int64_t o = 0; o < n; ++o) {
        double sum = 0.0;
        for (int k = 0; k < 8; ++k) sum += double{window[8 * o + k]} * in[start[o] + k];
        ASSERT_NEAR(out[o], sum, 1e-4) << hwy::TargetName(target) << ": output " << o << " of " << n;
      }
      ASSERT_EQ(out[n], -7.0f) << hwy::TargetName(target) << ": wrote past " << n << " outputs";
    }
  }
}

// Packed 4:2:2 rows that an area downscale decodes whole are split into per-pixel Y, U and V
// bytes in vectors: the bytes each pixel's macropixel holds, for YUYV, UYVY and VYUY, every
// count from 0 to past two vectors (odd ones end inside a macropixel), on every instruction set.
TEST(ImageProcessor, PackedRowsSplitIntoEachPixelsBytesOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  // Y0, U, Y1, V byte offsets in a macropixel.
  const std::pair<PixelFormat, std::array<int, 4>> formats[] = {
      {PixelFormat::Yuyv, {0, 1, 2, 3}}, {PixelFormat::Uyvy, {1, 0, 3, 2}}, {PixelFormat::Vyuy, {1, 2, 3, 0}}};
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(43);
    for (const auto& [format, pos] : formats) {
      for (int64_t n = 0; n <= 300; n += (n < 70 ? 1 : 23)) {
        std::vector<uint8_t> row(static_cast<std::size_t>(2 * n + 2));  // a whole last macropixel
        for (auto& b : row) b = static_cast<uint8_t>(rng());
        std::vector<uint8_t> yuv(static_cast<std::size_t>(3 * n + 1), 0xA5);
        detail::kernels::split_packed_422(row.data(), pos.data(), n, yuv.data(), yuv.data() + n, yuv.data() + 2 * n);
        for (int64_t i = 0; i < n; ++i) {
          const uint8_t* macro = row.data() + 4 * (i / 2);
          const uint8_t want[3] = {macro[pos[i % 2 == 0 ? 0 : 2]], macro[pos[1]], macro[pos[3]]};
          for (int c = 0; c < 3; ++c) {
            ASSERT_EQ(yuv[c * n + i], want[c]) << hwy::TargetName(target) << ": " << to_string(format) << ", pixel "
                                               << i << " of " << n << ", channel " << c;
          }
        }
        ASSERT_EQ(yuv[3 * n], 0xA5) << hwy::TargetName(target) << ": wrote past " << n << " pixels";
      }
    }
  }
}

// An area downscale decodes each source line and adds it, weighted, to its output row's sums in
// one pass: exactly what decoding (yuv_to_rgb_q6) and then weighting (accumulate_q6) give, for
// every count from 0 to past two vectors, first line or not, on every instruction set.
TEST(ImageProcessor, DecodeAndSumInOnePassIsExactOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::kernels::FixedCoeffs coeffs =
      detail::kernels::fixed_coeffs(detail::color_coeffs(ColorMatrix::Bt709, ColorRange::Limited));
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(29);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      std::vector<uint8_t> yuv(static_cast<std::size_t>(3 * n));
      for (auto& b : yuv) b = static_cast<uint8_t>(rng());
      const auto w = static_cast<int16_t>(rng() % 32768);
      for (bool first : {true, false}) {
        std::vector<int16_t> start(static_cast<std::size_t>(3 * n));
        for (auto& v : start) v = static_cast<int16_t>(rng() % 16384);
        std::vector<int16_t> fused = start, decoded(static_cast<std::size_t>(3 * n)), twice = start;
        detail::kernels::yuv_to_rgb_q6_accumulate(yuv.data(), yuv.data() + n, yuv.data() + 2 * n, n, coeffs, w,
                                                  fused.data(), fused.data() + n, fused.data() + 2 * n, first);
        detail::kernels::yuv_to_rgb_q6(yuv.data(), yuv.data() + n, yuv.data() + 2 * n, n, coeffs, decoded.data(),
                                       decoded.data() + n, decoded.data() + 2 * n);
        for (int c = 0; c < 3; ++c)
          detail::kernels::accumulate_q6(decoded.data() + c * n, w, twice.data() + c * n, n, first);
        ASSERT_EQ(fused, twice) << hwy::TargetName(target) << ": " << n << " pixels, weight " << w
                                << (first ? ", first line" : "");
      }
    }
  }
}

// Packed 4:2:2 rows of an area downscale are decoded and summed straight from their
// macropixels: exactly what splitting them (split_packed_422) and then decoding and summing
// (yuv_to_rgb_q6_accumulate) give, for YUYV, UYVY and VYUY, every count from 0 to past two
// vectors (odd ones end inside a macropixel), first line or not, on every instruction set.
TEST(ImageProcessor, PackedRowsDecodeAndSumWithoutSplittingOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::kernels::FixedCoeffs coeffs =
      detail::kernels::fixed_coeffs(detail::color_coeffs(ColorMatrix::Bt709, ColorRange::Limited));
  const std::array<int, 4> orders[] = {{0, 1, 2, 3}, {1, 0, 3, 2}, {1, 2, 3, 0}};  // Y0, U, Y1, V offsets
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(67);
    for (const auto& pos : orders) {
      for (int64_t n = 0; n <= 70; n += (n < 40 ? 1 : 9)) {
        std::vector<uint8_t> row(static_cast<std::size_t>(2 * n + 2));  // a whole last macropixel
        for (auto& b : row) b = static_cast<uint8_t>(rng());
        const auto w = static_cast<int16_t>(rng() % 32768);
        for (bool first : {true, false}) {
          std::vector<int16_t> start(static_cast<std::size_t>(3 * n + 1));
          for (auto& v : start) v = static_cast<int16_t>(rng() % 16384);
          std::vector<int16_t> fused = start, split = start;
          detail::kernels::packed_422_to_rgb_q6_accumulate(row.data(), pos.data(), n, coeffs, w, fused.data(),
                                                           fused.data() + n, fused.data() + 2 * n, first);
          std::vector<uint8_t> yuv(static_cast<std::size_t>(3 * n));
          detail::kernels::split_packed_422(row.data(), pos.data(), n, yuv.data(), yuv.data() + n, yuv.data() + 2 * n);
          detail::kernels::yuv_to_rgb_q6_accumulate(yuv.data(), yuv.data() + n, yuv.data() + 2 * n, n, coeffs, w,
                                                    split.data(), split.data() + n, split.data() + 2 * n, first);
          ASSERT_EQ(fused, split) << hwy::TargetName(target) << ": order " << pos[0] << pos[1] << pos[2] << pos[3]
                                  << ", " << n << " pixels, weight " << w << (first ? ", first line" : "");
        }
      }
    }
  }
}

// Pair weights for the Q6 pairs kernels' tests: random ones (a quarter of them 1/2), every one
// 1/2 (an exact 2:1's, which the kernels blend by halving sums), and all but the last 1/2.
std::vector<std::pair<const char*, std::vector<int16_t>>> q6_pair_weights(std::mt19937& rng, int64_t n) {
  std::vector<int16_t> random(static_cast<std::size_t>(n)), halves(static_cast<std::size_t>(n), 16384);
  for (auto& w : random) w = rng() % 4 == 0 ? 16384 : static_cast<int16_t>(rng() % 32768);
  std::vector<int16_t> but_last = halves;
  if (n > 0) but_last.back() = 16383;
  return {{"random", random}, {"all 1/2", halves}, {"all 1/2 but the last", but_last}};
}

// A 2:1 downscale of semi-planar lines in one pass gives exactly what the three passes it
// replaced give (the chroma pairs split, each line decoded by yuv_to_rgb_q6 and its pixel pairs
// blended by resample_pairs_q6, the two lines blended by blend_q6): U or V first, any pair and
// line weights (0 among them; every one 1/2, as an exact 2:1 has them, which the kernel blends
// by halving sums; all but one 1/2), each line with its chroma line or both on one (a 4:2:0
// source's pair of lines, whose chroma the kernel decodes once), every count from 0 to past two
// vectors, on every instruction set.
TEST(ImageProcessor, SemiPlanarPairsInOnePassAreExactOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::kernels::FixedCoeffs coeffs =
      detail::kernels::fixed_coeffs(detail::color_coeffs(ColorMatrix::Bt601, ColorRange::Full));
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(59);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      const std::vector<uint8_t> ya = random_bytes(rng, 2 * n), uva = random_bytes(rng, 2 * n),
                                 yb = random_bytes(rng, 2 * n), uvb_own = random_bytes(rng, 2 * n);
      for (const auto& [kind, weight] : q6_pair_weights(rng, n)) {
        for (bool shared : {false, true}) {
          const std::vector<uint8_t>& uvb = shared ? uva : uvb_own;
          for (bool vu : {false, true}) {
            for (int16_t wv : {int16_t{0}, int16_t{16384}, static_cast<int16_t>(rng() % 32768)}) {
              std::vector<int16_t> fused(static_cast<std::size_t>(3 * n + 1), -7);
              detail::kernels::semi_planar_pairs_q6(ya.data(), uva.data(), yb.data(), uvb.data(), vu, weight.data(), wv,
                                                    n, coeffs, fused.data(), fused.data() + n, fused.data() + 2 * n);
              // The three passes.
              std::vector<int16_t> lines[2];
              const std::pair<const std::vector<uint8_t>*, const std::vector<uint8_t>*> from[2] = {{&ya, &uva},
                                                                                                   {&yb, &uvb}};
              for (int l = 0; l < 2; ++l) {
                std::vector<uint8_t> u(static_cast<std::size_t>(2 * n)), v(static_cast<std::size_t>(2 * n));
                detail::kernels::split_chroma_pairs(from[l].second->data(), vu, 2 * n, u.data(), v.data());
                std::vector<int16_t> decoded(static_cast<std::size_t>(6 * n));
                detail::kernels::yuv_to_rgb_q6(from[l].first->data(), u.data(), v.data(), 2 * n, coeffs, decoded.data(),
                                               decoded.data() + 2 * n, decoded.data() + 4 * n);
                lines[l].resize(static_cast<std::size_t>(3 * n));
                for (int c = 0; c < 3; ++c) {
                  detail::kernels::resample_pairs_q6(decoded.data() + 2 * c * n, weight.data(), lines[l].data() + c * n,
                                                     n);
                }
              }
              std::vector<int16_t> twice(static_cast<std::size_t>(3 * n + 1), -7);
              detail::kernels::blend_q6(lines[0].data(), lines[1].data(), wv, twice.data(), 3 * n);
              ASSERT_EQ(fused, twice) << hwy::TargetName(target) << ": " << n << " outputs, " << (vu ? "V" : "U")
                                      << " first, pair weights " << kind << ", line weight " << wv
                                      << (shared ? ", one chroma line" : "");
            }
          }
        }
      }
    }
  }
}

// Downscales by more than 2 do the same from picked per-pixel bytes, each pixel with its own
// chroma: exactly what decoding each line's pixels (yuv_to_rgb_q6), blending their pairs
// (resample_pairs_q6) and then the lines (blend_q6) give, on every instruction set.
TEST(ImageProcessor, PickedPairsInOnePassAreExactOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::kernels::FixedCoeffs coeffs =
      detail::kernels::fixed_coeffs(detail::color_coeffs(ColorMatrix::Bt709, ColorRange::Full));
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(71);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      const std::vector<uint8_t> bytes = random_bytes(rng, 12 * n);  // two lines, Y, U, V of 2n pixels
      const auto row = [&](int l, int plane) { return bytes.data() + (3 * l + plane) * 2 * n; };
      const uint8_t* const a[3] = {row(0, 0), row(0, 1), row(0, 2)};
      const uint8_t* const b[3] = {row(1, 0), row(1, 1), row(1, 2)};
      for (const auto& [kind, weight] : q6_pair_weights(rng, n)) {
        for (int16_t wv : {int16_t{0}, int16_t{16384}, static_cast<int16_t>(rng() % 32768)}) {
          std::vector<int16_t> fused(static_cast<std::size_t>(3 * n + 1), -7);
          detail::kernels::yuv_pairs_q6(a, b, weight.data(), wv, n, coeffs, fused.data(), fused.data() + n,
                                        fused.data() + 2 * n);
          std::vector<int16_t> lines[2];
          for (int l = 0; l < 2; ++l) {
            std::vector<int16_t> decoded(static_cast<std::size_t>(6 * n));
            detail::kernels::yuv_to_rgb_q6(row(l, 0), row(l, 1), row(l, 2), 2 * n, coeffs, decoded.data(),
                                           decoded.data() + 2 * n, decoded.data() + 4 * n);
            lines[l].resize(static_cast<std::size_t>(3 * n));
            for (int c = 0; c < 3; ++c) {
              detail::kernels::resample_pairs_q6(decoded.data() + 2 * c * n, weight.data(), lines[l].data() + c * n, n);
            }
          }
          std::vector<int16_t> thrice(static_cast<std::size_t>(3 * n + 1), -7);
          detail::kernels::blend_q6(lines[0].data(), lines[1].data(), wv, thrice.data(), 3 * n);
          ASSERT_EQ(fused, thrice) << hwy::TargetName(target) << ": " << n << " outputs, pair weights " << kind
                                   << ", line weight " << wv;
        }
      }
    }
  }
}

// Packed 4:2:2 lines at 2:1 (YUYV webcams at 720p) go straight from their macropixels: what
// the picked-pairs kernels give from the split Y, U and V bytes, to the bit on the integer path
// and to float rounding on the float one (aarch64's compilers fuse multiply-adds differently in
// two instances of the same scalar end), for each byte order, on every instruction set.
TEST(ImageProcessor, PackedPairsInOnePassAreThePickedPairsOfTheSplitBytesOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::ColorCoeffs coeffs = detail::color_coeffs(ColorMatrix::Bt601, ColorRange::Limited);
  const detail::kernels::FixedCoeffs fixed = detail::kernels::fixed_coeffs(coeffs);
  const std::pair<const char*, std::array<int, 4>> orders[] = {
      {"YUYV", {0, 1, 2, 3}}, {"UYVY", {1, 0, 3, 2}}, {"VYUY", {1, 2, 3, 0}}};
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(67);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      const std::vector<uint8_t> packed[2] = {random_bytes(rng, 4 * n), random_bytes(rng, 4 * n)};
      for (const auto& [kind, weight] : q6_pair_weights(rng, n)) {
        std::vector<float> weight_f(static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < weight.size(); ++i) weight_f[i] = weight[i] / 32768.0f;
        for (const auto& [name, pos] : orders) {
          std::vector<uint8_t> split(static_cast<std::size_t>(12 * n));  // two lines, Y, U, V of 2n pixels
          const auto row = [&](int l, int plane) { return split.data() + (3 * l + plane) * 2 * n; };
          for (int l = 0; l < 2; ++l) {
            detail::kernels::split_packed_422(packed[l].data(), pos.data(), 2 * n, row(l, 0), row(l, 1), row(l, 2));
          }
          const uint8_t* const a[3] = {row(0, 0), row(0, 1), row(0, 2)};
          const uint8_t* const b[3] = {row(1, 0), row(1, 1), row(1, 2)};
          for (int16_t wv : {int16_t{0}, int16_t{16384}, static_cast<int16_t>(rng() % 32768)}) {
            std::vector<int16_t> fused(static_cast<std::size_t>(3 * n + 1), -7), picked = fused;
            detail::kernels::packed_422_pairs_q6(packed[0].data(), packed[1].data(), pos.data(), weight.data(), wv, n,
                                                 fixed, fused.data(), fused.data() + n, fused.data() + 2 * n);
            detail::kernels::yuv_pairs_q6(a, b, weight.data(), wv, n, fixed, picked.data(), picked.data() + n,
                                          picked.data() + 2 * n);
            ASSERT_EQ(fused, picked) << hwy::TargetName(target) << ": " << name << ", " << n
                                     << " outputs, pair weights " << kind << ", line weight " << wv;
            const float wf = wv / 32768.0f;
            std::vector<float> fused_f(static_cast<std::size_t>(3 * n + 1), -7.0f), picked_f = fused_f;
            detail::kernels::packed_422_pairs(packed[0].data(), packed[1].data(), pos.data(), weight_f.data(), wf, n,
                                              coeffs, fused_f.data(), fused_f.data() + n, fused_f.data() + 2 * n);
            detail::kernels::yuv_pairs(a, b, weight_f.data(), wf, n, coeffs, picked_f.data(), picked_f.data() + n,
                                       picked_f.data() + 2 * n);
            for (std::size_t k = 0; k < fused_f.size(); ++k) {
              ASSERT_NEAR(fused_f[k], picked_f[k], 1e-3) << hwy::TargetName(target) << ": " << name << ", " << n
                                                         << " outputs (float), value " << k << ", line weight " << wf;
            }
          }
        }
      }
    }
  }
}

// Q6 rows go to interleaved 8-bit pixels in one pass: exactly what rounding each channel
// (q6_to_8bit) and interleaving the bytes (interleave_8bit) give, for RGB, BGR, RGBA and BGRA
// (alpha from a row or opaque), u8 and i8 (flipped), every count from 0 to past two vectors, on
// every instruction set.
TEST(ImageProcessor, Q6RowsToPixelsInOnePassAreTheRoundedBytesInterleavedOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const std::pair<const char*, std::vector<int>> layouts[] = {
      {"RGB", {0, 1, 2}}, {"BGR", {2, 1, 0}}, {"RGBA", {0, 1, 2, 3}}, {"BGRA", {2, 1, 0, 3}}};
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(73);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      std::vector<int16_t> q(static_cast<std::size_t>(4 * n));
      for (auto& v : q) v = static_cast<int16_t>(rng() % (255 * 64 + 1));
      for (const auto& [name, order] : layouts) {
        const int channels = static_cast<int>(order.size());
        for (bool alpha : {false, true}) {
          if (alpha && channels == 3) continue;
          for (uint8_t flip : {uint8_t{0}, uint8_t{0x80}}) {
            std::vector<int16_t> rows = q;
            if (!alpha) std::fill(rows.begin() + 3 * n, rows.end(), int16_t{255 * 64});
            std::vector<uint8_t> bytes(static_cast<std::size_t>(4 * n));
            const uint8_t* in[4];
            for (int j = 0; j < channels; ++j) {
              detail::kernels::q6_to_8bit(rows.data() + order[j] * n, flip, bytes.data() + j * n, n);
              in[j] = bytes.data() + j * n;
            }
            std::vector<uint8_t> want(static_cast<std::size_t>(channels * n + 1), 7), got = want;
            detail::kernels::interleave_8bit(in, channels, want.data(), n);
            detail::kernels::q6_to_8bit_pixels(q.data(), q.data() + n, q.data() + 2 * n,
                                               alpha ? q.data() + 3 * n : nullptr, n, order.data(), channels, flip,
                                               got.data());
            ASSERT_EQ(got, want) << hwy::TargetName(target) << ": " << name << (alpha ? " with alpha" : "") << ", " << n
                                 << " pixels, flip " << int(flip);
          }
        }
      }
    }
  }
}

// The Q6 pairs kernels decode in their own arithmetic (each channel's complement, clamped by
// saturation): every Y, U and V code, both matrices, both ranges, through each kernel and each of
// its paths gives what yuv_to_rgb_q6 gives. A pixel repeated four times (all weights 1/2: the
// halving path, the semi-planar kernel's shared-chroma box) or weighed alone (weights 0: the
// weighted path, one chroma line a line) is its decode. Every kernel and path takes every U and
// V with the Y codes where the clamps turn; on the machine's best instruction set the decode
// they share (luma_c, chroma_c, channel_c) also takes every other Y, through one path (the
// whole sweep through every path took 75 s an emulated CPU under qemu).
TEST(ImageProcessor, PairsKernelsDecodeEveryYuvCodeAsTheIntegerPathOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  constexpr int64_t n = 256 * 256;  // one output for each U and V
  std::vector<uint8_t> u(n), v(n), uv(2 * n), packed(4 * n), y2(2 * n), u2(2 * n), v2(2 * n);
  for (int64_t i = 0; i < n; ++i) u[i] = static_cast<uint8_t>(i >> 8), v[i] = static_cast<uint8_t>(i & 0xFF);
  const std::vector<int16_t> halves(n, 16384), zeros(n, 0);
  const std::array<int, 4> yuyv = {0, 1, 2, 3};
  std::vector<int16_t> expected(3 * n), got(3 * n);
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    const std::vector<int> turns = {0, 1, 15, 16, 17, 64, 127, 128, 200, 234, 235, 236, 254, 255};
    std::vector<int> ys = turns;
    if (target == targets.all.front()) {
      ys.resize(256);
      for (int y = 0; y < 256; ++y) ys[y] = y;
    }
    for (ColorMatrix matrix : {ColorMatrix::Bt601, ColorMatrix::Bt709}) {
      for (ColorRange range : {ColorRange::Limited, ColorRange::Full}) {
        const auto coeffs = detail::kernels::fixed_coeffs(detail::color_coeffs(matrix, range));
        for (int y : ys) {
          const std::vector<uint8_t> luma(n, static_cast<uint8_t>(y));
          for (int64_t i = 0; i < n; ++i) {
            uv[2 * i] = u[i], uv[2 * i + 1] = v[i];
            packed[4 * i] = packed[4 * i + 2] = static_cast<uint8_t>(y), packed[4 * i + 1] = u[i],
                       packed[4 * i + 3] = v[i];
            y2[2 * i] = y2[2 * i + 1] = static_cast<uint8_t>(y), u2[2 * i] = u2[2 * i + 1] = u[i],
                   v2[2 * i] = v2[2 * i + 1] = v[i];
          }
          const std::vector<uint8_t> uv_other = uv;  // another chroma line: the per-line path
          detail::kernels::yuv_to_rgb_q6(luma.data(), u.data(), v.data(), n, coeffs, expected.data(),
                                         expected.data() + n, expected.data() + 2 * n);
          const uint8_t* const picked[3] = {y2.data(), u2.data(), v2.data()};
          const std::pair<const char*, std::function<void(const std::vector<int16_t>&)>> kernels[] = {
              {"semi-planar, one chroma line",
               [&](const std::vector<int16_t>& w) {
                 detail::kernels::semi_planar_pairs_q6(y2.data(), uv.data(), y2.data(), uv.data(), false, w.data(),
                                                       w[0], n, coeffs, got.data(), got.data() + n, got.data() + 2 * n);
               }},
              {"semi-planar, two chroma lines",
               [&](const std::vector<int16_t>& w) {
                 detail::kernels::semi_planar_pairs_q6(y2.data(), uv.data(), y2.data(), uv_other.data(), false,
                                                       w.data(), w[0], n, coeffs, got.data(), got.data() + n,
                                                       got.data() + 2 * n);
               }},
              {"packed",
               [&](const std::vector<int16_t>& w) {
                 detail::kernels::packed_422_pairs_q6(packed.data(), packed.data(), yuyv.data(), w.data(), w[0], n,
                                                      coeffs, got.data(), got.data() + n, got.data() + 2 * n);
               }},
              {"picked",
               [&](const std::vector<int16_t>& w) {
                 detail::kernels::yuv_pairs_q6(picked, picked, w.data(), w[0], n, coeffs, got.data(), got.data() + n,
                                               got.data() + 2 * n);
               }},
          };
          const bool turn = std::find(turns.begin(), turns.end(), y) != turns.end();
          for (const auto& [name, kernel] : kernels) {
            for (const auto* w : {&halves, &zeros}) {
              if (!turn && (w != &zeros || std::string_view(name) != "semi-planar, two chroma lines")) continue;
              std::fill(got.begin(), got.end(), int16_t{-7});
              kernel(*w);
              ASSERT_EQ(got, expected) << hwy::TargetName(target) << ": " << name << ", Y " << y << ", matrix "
                                       << int(matrix) << ", range " << int(range) << ", weights "
                                       << (w == &halves ? "1/2" : "0");
            }
          }
        }
      }
    }
  }
}

// The float path's 2:1 pass likewise: what decoding both lines (semi_planar_to_rgb), blending
// them (blend_2) and then the pixel pairs (resample_pairs) give, to float rounding (the
// decode's vector and scalar parts split the row at different pixels).
TEST(ImageProcessor, FloatSemiPlanarPairsInOnePassMatchTheThreePassesOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::ColorCoeffs coeffs = detail::color_coeffs(ColorMatrix::Bt709, ColorRange::Limited);
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(61);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      const std::vector<uint8_t> ya = random_bytes(rng, 2 * n), uva = random_bytes(rng, 2 * n),
                                 yb = random_bytes(rng, 2 * n), uvb = random_bytes(rng, 2 * n);
      std::vector<float> weight(static_cast<std::size_t>(n));
      for (auto& w : weight) w = rng() % 4 == 0 ? 0.5f : static_cast<float>(rng() % 1000) / 1000.0f;
      for (bool vu : {false, true}) {
        for (float wv : {0.0f, 0.5f, static_cast<float>(rng() % 1000) / 1000.0f}) {
          std::vector<float> fused(static_cast<std::size_t>(3 * n + 1), -7.0f);
          detail::kernels::semi_planar_pairs(ya.data(), uva.data(), yb.data(), uvb.data(), vu, weight.data(), wv, n,
                                             coeffs, fused.data(), fused.data() + n, fused.data() + 2 * n);
          std::vector<float> a(static_cast<std::size_t>(6 * n)), b(static_cast<std::size_t>(6 * n));
          detail::kernels::semi_planar_to_rgb(ya.data(), uva.data(), vu, 2 * n, coeffs, a.data(), a.data() + 2 * n,
                                              a.data() + 4 * n);
          detail::kernels::semi_planar_to_rgb(yb.data(), uvb.data(), vu, 2 * n, coeffs, b.data(), b.data() + 2 * n,
                                              b.data() + 4 * n);
          detail::kernels::blend_2(a.data(), b.data(), wv, a.data(), 6 * n);
          std::vector<float> thrice(static_cast<std::size_t>(3 * n + 1), -7.0f);
          for (int c = 0; c < 3; ++c) {
            detail::kernels::resample_pairs(a.data() + 2 * c * n, weight.data(), thrice.data() + c * n, n);
          }
          for (std::size_t i = 0; i < fused.size(); ++i) {
            ASSERT_NEAR(fused[i], thrice[i], 1e-3) << hwy::TargetName(target) << ": " << n << " outputs, value " << i
                                                   << (vu ? ", V first" : ", U first") << ", line weight " << wv;
          }
        }
      }
    }
  }
}

// And from picked per-pixel bytes, each pixel with its own chroma (downscales by more than 2):
// what planar_yuv_to_rgb, blend_2 and resample_pairs give, to float rounding.
TEST(ImageProcessor, FloatPickedPairsInOnePassMatchTheThreePassesOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::ColorCoeffs coeffs = detail::color_coeffs(ColorMatrix::Bt601, ColorRange::Limited);
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(73);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      const std::vector<uint8_t> bytes = random_bytes(rng, 12 * n);  // two lines, Y, U, V of 2n pixels
      const auto row = [&](int l, int plane) { return bytes.data() + (3 * l + plane) * 2 * n; };
      const uint8_t* const a[3] = {row(0, 0), row(0, 1), row(0, 2)};
      const uint8_t* const b[3] = {row(1, 0), row(1, 1), row(1, 2)};
      std::vector<float> weight(static_cast<std::size_t>(n));
      for (auto& w : weight) w = rng() % 4 == 0 ? 0.5f : static_cast<float>(rng() % 1000) / 1000.0f;
      for (float wv : {0.0f, 0.5f, static_cast<float>(rng() % 1000) / 1000.0f}) {
        std::vector<float> fused(static_cast<std::size_t>(3 * n + 1), -7.0f);
        detail::kernels::yuv_pairs(a, b, weight.data(), wv, n, coeffs, fused.data(), fused.data() + n,
                                   fused.data() + 2 * n);
        std::vector<float> lines(static_cast<std::size_t>(12 * n));
        for (int l = 0; l < 2; ++l) {
          float* at = lines.data() + 6 * l * n;
          detail::kernels::planar_yuv_to_rgb(row(l, 0), row(l, 1), row(l, 2), 2 * n, coeffs, at, at + 2 * n,
                                             at + 4 * n);
        }
        detail::kernels::blend_2(lines.data(), lines.data() + 6 * n, wv, lines.data(), 6 * n);
        std::vector<float> thrice(static_cast<std::size_t>(3 * n + 1), -7.0f);
        for (int c = 0; c < 3; ++c) {
          detail::kernels::resample_pairs(lines.data() + 2 * c * n, weight.data(), thrice.data() + c * n, n);
        }
        for (std::size_t i = 0; i < fused.size(); ++i) {
          ASSERT_NEAR(fused[i], thrice[i], 1e-3)
              << hwy::TargetName(target) << ": " << n << " outputs, value " << i << ", line weight " << wv;
        }
      }
    }
  }
}

// The float area path's fused pass likewise: what decoding (planar_yuv_to_rgb) and then weighting
// (accumulate) give, to float rounding (a multiply-add may be fused in one and not the other).
TEST(ImageProcessor, FloatDecodeAndSumInOnePassMatchesTwoPassesOnEveryInstructionSet) {
  ForcedTargets targets;
  if (targets.all.empty()) GTEST_SKIP() << kNoTarget;
  const detail::ColorCoeffs coeffs = detail::color_coeffs(ColorMatrix::Bt601, ColorRange::Limited);
  for (int64_t target : targets.all) {
    hwy::SetSupportedTargetsForTest(target);
    std::mt19937 rng(31);
    for (int64_t n = 0; n <= 70; n += (n < 34 ? 1 : 9)) {
      std::vector<uint8_t> yuv(static_cast<std::size_t>(3 * n));
      for (auto& b : yuv) b = static_cast<uint8_t>(rng());
      const float w = static_cast<float>(rng() % 1000 + 1) / 1000.0f;
      for (bool first : {true, false}) {
        std::vector<float> start(static_cast<std::size_t>(3 * n) + 1, -7.0f);
        for (int64_t i = 0; i < 3 * n; ++i) start[i] = static_cast<float>(rng() % 25500) / 100.0f;
        std::vector<float> fused = start, decoded(static_cast<std::size_t>(3 * n)), twice = start;
        detail::kernels::yuv_to_rgb_accumulate(yuv.data(), yuv.data() + n, yuv.data() + 2 * n, n, coeffs, w,
                                               fused.data(), fused.data() + n, fused.data() + 2 * n, first);
        detail::kernels::planar_yuv_to_rgb(yuv.data(), yuv.data() + n, yuv.data() + 2 * n, n, coeffs, decoded.data(),
                                           decoded.data() + n, decoded.data() + 2 * n);
        for (int c = 0; c < 3; ++c)
          detail::kernels::accumulate(decoded.data() + c * n, w, twice.data() + c * n, n, first);
        for (std::size_t i = 0; i < fused.size(); ++i) {
          ASSERT_NEAR(fused[i], twice[i], 1e-3) << hwy::TargetName(target) << ": " << n << " pixels, value " << i
                                                << ", weight " << w << (first ? ", first line" : "");
        }
      }
    }
  }
}

// Every Y, U and V code (1:1, so no resampling blurs the decode): the fixed-point decoder of
// the integer path within +-1 of the reference, both matrices, both ranges.
TEST(ImageProcessor, IntegerDecodeOfEveryYuvCodeMatchesTheReference) {
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(256, 256, PixelFormat::Nv24, MemoryKind::Mem));
  {
    auto map = *src.map(CpuAccess::Write);
    const auto planes = map.layout().planes();
    for (int64_t y = 0; y < 256; ++y) {
      for (int64_t x = 0; x < 256; ++x) {
        map.plane(0)[y * planes[0].pitch + x] = std::byte(x);
        map.plane(1)[y * planes[1].pitch + 2 * x] = std::byte(y);
        map.plane(1)[y * planes[1].pitch + 2 * x + 1] = std::byte((x * 7 + y * 13) & 0xFF);
      }
    }
  }
  auto proc = processor(1);
  for (ColorMatrix matrix : {ColorMatrix::Bt601, ColorMatrix::Bt709}) {
    for (ColorRange range : {ColorRange::Limited, ColorRange::Full}) {
      ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(256, 256, PixelFormat::Rgb, MemoryKind::Mem));
      ConvertOptions o;
      o.matrix = matrix;
      o.range = range;
      ASSERT_OK(proc.convert(src, dst, o));
      EXPECT_EQ(report(reference::compare(src, dst, o)), "") << int(matrix) << " " << int(range);
    }
  }
}

// Letterbox bars that are one value repeated go down as string stores over whole runs of rows
// (fill_rows_like), others row by row: over a destination full of stale bytes, at dense and
// padded pitches, for bars above and below and at the sides, every bar byte is the reference's.
TEST(ImageProcessor, LetterboxBarsOverStaleBytesMatchTheReference) {
  std::mt19937 rng(23);
  struct Pad {
    std::array<uint8_t, 4> value;
  };
  for (unsigned threads : {1u, 3u}) {
    auto proc = processor(threads);
    for (DType dtype : {DType::U8, DType::I8, DType::F16, DType::F32}) {
      for (PixelFormat to : {PixelFormat::PlanarRgb, PixelFormat::PlanarRgba, PixelFormat::Rgb, PixelFormat::Rgba,
                             PixelFormat::Bgra, PixelFormat::Grey}) {
        for (Pad pad : {Pad{{114, 114, 114, 114}}, Pad{{10, 200, 30, 255}}}) {
          for (int64_t alignment : {1, 64}) {
            for (bool wide : {true, false}) {
              ASSERT_OK_AND_ASSIGN(Tensor src,
                                   Tensor::image(wide ? 64 : 24, wide ? 24 : 64, PixelFormat::Nv12, MemoryKind::Mem));
              ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(40, 40, to, MemoryKind::Mem, dtype, alignment));
              fill_random(src, rng);
              fill_random(dst, rng);
              ConvertOptions o;
              o.resize = ResizeMode::Letterbox;
              o.pad = pad.value;
              o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
              o.std = {0.229f, 0.224f, 0.225f, 0.25f};
              ASSERT_OK(proc.convert(src, dst, o));
              EXPECT_EQ(report(reference::compare(src, dst, o)), "")
                  << to_string(to) << " " << to_string(dtype) << " pad " << int(pad.value[0]) << " alignment "
                  << alignment << (wide ? " bars above and below" : " bars at the sides") << ", " << threads
                  << " threads";
            }
          }
        }
      }
    }
  }
}

TEST(ImageProcessor, FillRowsLikeRepeatsOneValueAndRefusesRowsThatAreNot) {
  // Four rows of 6 three-channel u16 pixels, 4 bytes of padding after each.
  constexpr int64_t kWidth = 6, kRow = kWidth * 6 + 4;
  std::vector<std::byte> bytes(4 * kRow, std::byte{0xA5});
  detail::ImageRef image;
  image.format = PixelFormat::Rgb;
  image.dtype = DType::F16;
  image.width = kWidth;
  image.height = 4;
  image.plane_count = 1;
  image.planes[0] = {.base = bytes.data(), .row = kRow, .pixel = 6, .comp = 2};
  const auto set_row = [&](int64_t y, std::array<uint16_t, 3> pixel) {
    for (int64_t x = 0; x < kWidth; ++x) std::memcpy(bytes.data() + y * kRow + 6 * x, pixel.data(), 6);
  };
  // Channels alike: rows 1 and 2 become row 0, padding bytes untouched.
  set_row(0, {0x3C00, 0x3C00, 0x3C00});
  ASSERT_TRUE(detail::fill_rows_like(image, 0, 1, 3));
  for (int64_t y = 1; y < 3; ++y) {
    EXPECT_EQ(std::memcmp(bytes.data() + y * kRow, bytes.data(), kWidth * 6), 0) << y;
    for (int64_t b = kWidth * 6; b < kRow; ++b) EXPECT_EQ(bytes[y * kRow + b], std::byte{0xA5}) << y << " " << b;
  }
  EXPECT_EQ(bytes[3 * kRow], std::byte{0xA5});
  // Channels unlike, or pixels unlike along the row: refused, nothing written.
  const std::vector<std::byte> before = bytes;
  set_row(0, {0x3C00, 0x4000, 0x3C00});
  const std::vector<std::byte> unlike = bytes;
  EXPECT_FALSE(detail::fill_rows_like(image, 0, 1, 4));
  EXPECT_EQ(bytes, unlike);
  set_row(0, {0x3C00, 0x3C00, 0x3C00});
  std::memset(bytes.data() + 6 * (kWidth - 1), 0, 2);
  const std::vector<std::byte> ragged = bytes;
  EXPECT_FALSE(detail::fill_rows_like(image, 0, 1, 4));
  EXPECT_EQ(bytes, ragged);
}

TEST(ImageProcessor, FillRepeatedWritesExactlyCountValuesAtAnyAlignment) {
  for (int size : {1, 2, 4}) {
    for (int64_t offset : {0, 1, 3}) {
      for (int64_t count : {0, 1, 7, 64, 1000, 4099}) {
        std::vector<uint8_t> out(static_cast<std::size_t>(4 * count + 16), 0xA5);
        const uint32_t value = 0x12345678u;
        detail::kernels::fill_repeated(out.data() + offset, &value, size, count);
        for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
          const int64_t at = i - offset;
          const bool inside = at >= 0 && at < count * size;
          const uint8_t want = inside ? reinterpret_cast<const uint8_t*>(&value)[at % size] : uint8_t{0xA5};
          ASSERT_EQ(out[static_cast<std::size_t>(i)], want)
              << "size " << size << " offset " << offset << " count " << count << " byte " << i;
        }
      }
    }
  }
}

TEST(ImageProcessor, WritesOneImageOfABatchAndLeavesTheOthersAlone) {
  ASSERT_OK_AND_ASSIGN(Tensor batch, Tensor::create({3, 3, 16, 16}, DType::F32, MemoryKind::Mem));
  {
    auto map = *batch.map(CpuAccess::Write);
    auto floats = *map.span<float>();
    std::fill(floats.begin(), floats.end(), -7.0f);
  }
  ASSERT_OK_AND_ASSIGN(Tensor one, batch.slice(0, 1, 2));
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(32, 24, PixelFormat::Yuyv, MemoryKind::Mem));
  std::mt19937 rng(5);
  fill_random(src, rng);
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  auto proc = processor();
  ASSERT_OK(proc.convert(src, one, o));
  EXPECT_EQ(report(reference::compare(src, one, o)), "");
  auto map = *batch.map(CpuAccess::Read);
  auto floats = *map.span<const float>();
  const std::size_t image = 3 * 16 * 16;
  for (std::size_t i = 0; i < image; ++i) {
    ASSERT_EQ(floats[i], -7.0f) << i;
    ASSERT_EQ(floats[2 * image + i], -7.0f) << i;
  }
}

// Rows go to the threads in bands, and a thread done with its band takes chunks of the others'
// from their backs (RowBands), so which thread converts a row varies from call to call: on
// every path (float, direct planar float, integer, 4:2:0 row pairs, area, odd heights, bars
// above and below or at the sides) any thread count gives the bytes of one thread. Five threads
// on a 2-core machine make the late and the stolen bands common.
TEST(ImageProcessor, ThreadCountsGiveIdenticalBytes) {
  std::mt19937 rng(11);
  struct Conversion {
    int64_t src_w, src_h;
    PixelFormat src_format;
    int64_t dst_w, dst_h;
    PixelFormat dst_format;
    DType dtype;
    Interpolation interpolation;
  };
  const Conversion cases[] = {
      {320, 180, PixelFormat::Nv12, 96, 96, PixelFormat::Rgb, DType::U8, Interpolation::Bilinear},
      {320, 180, PixelFormat::Nv12, 97, 131, PixelFormat::PlanarRgb, DType::F32, Interpolation::Bilinear},
      {200, 300, PixelFormat::Yuyv, 128, 64, PixelFormat::PlanarRgb, DType::F16, Interpolation::Bilinear},
      {320, 240, PixelFormat::Rgb, 160, 120, PixelFormat::Nv12, DType::U8, Interpolation::Bilinear},
      {320, 240, PixelFormat::Nv12, 96, 150, PixelFormat::I420, DType::U8, Interpolation::Bilinear},
      {640, 360, PixelFormat::Nv12, 101, 77, PixelFormat::Bgra, DType::U8, Interpolation::Area},
      {640, 360, PixelFormat::Nv12, 64, 99, PixelFormat::PlanarRgb, DType::F32, Interpolation::Area},
      {120, 90, PixelFormat::Rgba, 255, 193, PixelFormat::Grey, DType::U8, Interpolation::Nearest},
  };
  for (const Conversion& c : cases) {
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(c.src_w, c.src_h, c.src_format, MemoryKind::Mem));
    fill_random(src, rng);
    ConvertOptions o;
    o.resize = ResizeMode::Letterbox;
    o.interpolation = c.interpolation;
    if (c.dtype != DType::U8) {
      o.mean = {0.485f, 0.456f, 0.406f, 0};
      o.std = {0.229f, 0.224f, 0.225f, 1};
    }
    const std::string what = std::string(to_string(c.src_format)) + " " + std::to_string(c.src_w) + "x" +
                             std::to_string(c.src_h) + " -> " + std::string(to_string(c.dst_format)) + " " +
                             std::to_string(c.dst_w) + "x" + std::to_string(c.dst_h);
    std::vector<std::byte> one;
    for (unsigned threads : {1u, 2u, 3u, 5u}) {
      auto proc = processor(threads);
      EXPECT_EQ(proc.threads(), threads);
      ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(c.dst_w, c.dst_h, c.dst_format, MemoryKind::Mem, c.dtype));
      for (int call = 0; call < 20; ++call) {
        fill_random(dst, rng);  // stale bytes: every row must be written again
        ASSERT_TRUE(proc.convert(src, dst, o)) << what;
        auto map = *dst.map(CpuAccess::Read);
        std::vector<std::byte> bytes(map.data(), map.data() + map.size_bytes());
        if (threads == 1 && call == 0) one = bytes;
        ASSERT_TRUE(bytes == one) << what << ", " << threads << " threads, call " << call;
        if (threads == 1) break;
      }
    }
  }
}

TEST(ImageProcessor, DefaultsMatchTheDesign) {
  const ConvertOptions o;
  EXPECT_FALSE(o.crop.has_value());
  EXPECT_EQ(o.flip, Flip::None);
  EXPECT_EQ(o.rotation, Rotation::None);
  EXPECT_EQ(o.resize, ResizeMode::Stretch);
  EXPECT_EQ(o.interpolation, Interpolation::Bilinear);
  EXPECT_EQ(o.pad, (std::array<uint8_t, 4>{114, 114, 114, 255}));
  EXPECT_EQ(o.matrix, ColorMatrix::Bt601);
  EXPECT_EQ(o.range, ColorRange::Limited);
  EXPECT_EQ(o.mean, (std::array<float, 4>{0, 0, 0, 0}));
  EXPECT_EQ(o.std, (std::array<float, 4>{1, 1, 1, 1}));
  auto proc = processor(0);
  EXPECT_GE(proc.threads(), 1u);
}

// Bad input: a clear error, and not one byte of the destination written.
class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(9);
    src_ = *Tensor::image(64, 48, PixelFormat::Nv12, MemoryKind::Mem);
    fill_random(src_, rng);
    dst_ = *Tensor::image(32, 32, PixelFormat::Rgb, MemoryKind::Mem);
    auto map = *dst_.map(CpuAccess::Write);
    std::fill(map.data(), map.data() + map.size_bytes(), std::byte{0x5A});
  }
  void expect_untouched() {
    auto map = *dst_.map(CpuAccess::Read);
    for (std::size_t i = 0; i < map.size_bytes(); ++i) ASSERT_EQ(map.data()[i], std::byte{0x5A}) << i;
  }
  Tensor src_ = *Tensor::create({1}, DType::U8, MemoryKind::Mem);
  Tensor dst_ = *Tensor::create({1}, DType::U8, MemoryKind::Mem);
  ImageProcessor proc_ = processor();
};

TEST_F(BadInput, CropOutsideTheSourceIsRejected) {
  ConvertOptions o;
  o.crop = Rect{40, 0, 30, 10};
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(src_, dst_, o));
  o.crop = Rect{0, 0, 0, 10};
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(src_, dst_, o));
  expect_untouched();
}

TEST_F(BadInput, CropSplittingAChromaSampleIsRejected) {
  ConvertOptions o;
  o.crop = Rect{3, 2, 10, 10};
  auto result = proc_.convert(src_, dst_, o);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(result.error().message().find("nv12"), std::string::npos) << result.error().message();
  expect_untouched();
}

TEST_F(BadInput, UnsupportedPairNamesBothFormats) {
  ASSERT_OK_AND_ASSIGN(Tensor nv21, Tensor::image(32, 32, PixelFormat::Nv21, MemoryKind::Mem));
  auto result = proc_.convert(src_, nv21, {});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), ErrorCode::NotImplemented);
  EXPECT_NE(result.error().message().find("nv12"), std::string::npos);
  EXPECT_NE(result.error().message().find("nv21"), std::string::npos);
}

TEST_F(BadInput, BatchDestinationAndWrongShapeAreRejected) {
  ASSERT_OK_AND_ASSIGN(Tensor batch, Tensor::create({2, 3, 16, 16}, DType::F32, MemoryKind::Mem));
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(src_, batch, {}));
  ASSERT_OK_AND_ASSIGN(Tensor odd, Tensor::create({16, 16, 5}, DType::U8, MemoryKind::Mem));
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(src_, odd, {}));
  ASSERT_OK_AND_ASSIGN(Tensor three, Tensor::create({16, 16, 3}, DType::U8, MemoryKind::Mem));
  ConvertOptions o;
  o.dst_format = PixelFormat::Rgba;
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(src_, three, o));
  expect_untouched();
}

TEST_F(BadInput, ZeroStdAndForeignEnumsAreRejected) {
  ConvertOptions o;
  o.std[1] = 0.0f;
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(src_, dst_, o));
  ConvertOptions bad_enum;
  bad_enum.rotation = static_cast<Rotation>(9);
  auto refused = proc_.convert(src_, dst_, bad_enum);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(refused.error().message(), "ConvertOptions::rotation holds code 9, which is no Rotation");
  bad_enum = {};
  bad_enum.range = static_cast<ColorRange>(2);
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(src_, dst_, bad_enum));
  EXPECT_ERROR(ErrorCode::InvalidArgument, ImageProcessor::create({.backend = static_cast<ImageBackend>(2)}));
  expect_untouched();
}

TEST_F(BadInput, SourceWithoutPixelFormatOrWideDtypeIsRejected) {
  ASSERT_OK_AND_ASSIGN(Tensor plain, Tensor::create({8, 8, 3}, DType::U8, MemoryKind::Mem));
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc_.convert(plain, dst_, {}));
  ASSERT_OK_AND_ASSIGN(Tensor wide, Tensor::image(8, 8, PixelFormat::Rgb, MemoryKind::Mem, DType::U16));
  EXPECT_ERROR(ErrorCode::NotImplemented, proc_.convert(wide, dst_, {}));
  expect_untouched();
}

TEST_F(BadInput, UnmappableMemoryIsRefused) {
  // CUDA device memory handed over as a frame payload becomes a Cuda tensor without any GPU:
  // memhal never dereferences the device pointers, and the CPU cannot map them.
  bool released = false;
  {
    OwnedCudaBuffer cuda;
    cuda.format = PixelFormat::Nv12;
    cuda.width = 64;
    cuda.height = 48;
    cuda.plane_count = 2;
    cuda.device_pointers = {0x7f0000000000, 0x7f0000000000 + 64 * 48};
    cuda.pitches = {64, 64};
    cuda.keep_alive = KeepAlive::of(std::shared_ptr<int>(new int(0), [&](int* p) {
      released = true;
      delete p;
    }));
    ASSERT_OK_AND_ASSIGN(const Tensor gpu, MemoryDomain(std::move(cuda)).to_tensor());
    ASSERT_EQ(gpu.memory(), MemoryKind::Cuda);
    EXPECT_ERROR(ErrorCode::NotHostAddressable, proc_.convert(gpu, dst_, {}));
    EXPECT_ERROR(ErrorCode::NotHostAddressable, src_.copy_to(gpu));
    EXPECT_ERROR(ErrorCode::NotHostAddressable, gpu.copy_to(src_));
    EXPECT_FALSE(released) << "the tensor keeps the device buffer alive";
  }
  EXPECT_TRUE(released);
  expect_untouched();
}

// convert_batch: frames of different sizes and formats into one {N, C, H, W} or {N, H, W, C}
// batch, each image as convert would write it; called twice, so the cached plans of every
// geometry are reused in between; a bad frame leaves the whole batch unwritten.
TEST(ImageProcessorBatch, FramesOfDifferentSizesAndFormatsFillEachImage) {
  std::mt19937 rng(29);
  auto proc = processor(2);
  std::vector<Tensor> frames;
  const std::array<std::tuple<int64_t, int64_t, PixelFormat>, 4> kinds{
      std::tuple{64, 48, PixelFormat::Nv12}, std::tuple{50, 30, PixelFormat::Yuyv},
      std::tuple{33, 41, PixelFormat::Bgr}, std::tuple{64, 48, PixelFormat::Nv12}};
  for (const auto& [w, h, format] : kinds) {
    ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::image(w, h, format, MemoryKind::Mem));
    fill_random(t, rng);
    frames.push_back(std::move(t));
  }
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
  o.std = {0.229f, 0.224f, 0.225f, 0.25f};
  for (const bool planar : {true, false}) {
    ASSERT_OK_AND_ASSIGN(Tensor batch, planar ? Tensor::create({4, 3, 24, 32}, DType::F32, MemoryKind::Mem)
                                              : Tensor::create({4, 24, 32, 3}, DType::U8, MemoryKind::Mem));
    for (int round = 0; round < 2; ++round) {
      ASSERT_OK(proc.convert_batch(frames, batch, o));
      for (int64_t i = 0; i < 4; ++i) {
        ASSERT_OK_AND_ASSIGN(Tensor one, batch.slice(0, i, i + 1));
        EXPECT_EQ(report(reference::compare(frames[static_cast<std::size_t>(i)], one, o)), "")
            << "image " << i << (planar ? " planar f32" : " interleaved u8") << " round " << round;
      }
    }
  }
}

TEST(ImageProcessorBatch, ABadFrameOrBatchShapeWritesNothing) {
  auto proc = processor(1);
  ASSERT_OK_AND_ASSIGN(Tensor good, Tensor::image(16, 16, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor wide, Tensor::image(16, 16, PixelFormat::Rgb, MemoryKind::Mem, DType::F32));
  ASSERT_OK_AND_ASSIGN(Tensor batch, Tensor::create({2, 3, 8, 8}, DType::F32, MemoryKind::Mem));
  {
    auto map = *batch.map(CpuAccess::Write);
    auto floats = *map.span<float>();
    std::fill(floats.begin(), floats.end(), -7.0f);
  }
  const std::vector<Tensor> bad{good, wide};  // f32 sources are not converted
  const auto error = proc.convert_batch(bad, batch);
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().code(), ErrorCode::NotImplemented);
  EXPECT_NE(error.error().message().find("frame 1 of 2"), std::string::npos) << error.error().message();
  const std::vector<Tensor> three{good, good, good};
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc.convert_batch(three, batch));
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc.convert_batch(std::span<const Tensor>(), batch));
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(8, 8, PixelFormat::Rgb, MemoryKind::Mem));
  const std::vector<Tensor> one{good};
  EXPECT_ERROR(ErrorCode::InvalidArgument, proc.convert_batch(one, image));
  auto map = *batch.map(CpuAccess::Read);
  const auto floats = *map.span<const float>();
  for (float v : floats) ASSERT_EQ(v, -7.0f);
}

}  // namespace
}  // namespace memhal
