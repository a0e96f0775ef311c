// The CPU image kernels on every Highway target the running CPU has, forced in turn and checked
// against the reference (reference.cpp), and which target the dispatcher picks on its own. Each
// run prints the targets it exercised ("[ SIMD     ]" lines); a run that exercised none fails.
// scripts/cross-test.sh runs this once per emulated aarch64 CPU (NEON, SVE, SVE2, SVE2_128 and
// a CPU without AES) and names, through the environment, what each CPU must give:
//   MEMHAL_TEST_EXPECT_SIMD_PICK     the target the dispatcher must pick (e.g. NEON)
//   MEMHAL_TEST_EXPECT_SIMD_TARGETS  the targets that must run, best first (e.g. "SVE2 SVE NEON")
//
// Which target ran is read from a function of this file compiled for every target (as the
// kernels are, with the same flags): the dispatcher's choice is one index shared by every
// Highway dispatch table of the process.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd_target_test.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace memhal::HWY_NAMESPACE {
const char* CompiledTargetName() {
  return hwy::TargetName(HWY_TARGET);
}
}  // namespace memhal::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdio>
#include <cstdlib>
#include <memhal/image_processor.hpp>
#include <random>
#include <string>
#include <vector>

#include "image_test_util.hpp"
#include "reference.hpp"
#include "test_support.hpp"

namespace memhal {
HWY_EXPORT(CompiledTargetName);
namespace {

using testing::fill_random;

/// The target HWY_DYNAMIC_DISPATCH calls now (the first dispatch chooses it).
std::string dispatched_target() {
  return HWY_DYNAMIC_DISPATCH(CompiledTargetName)();
}

std::string names(int64_t targets) {
  std::string text;
  for (int64_t t = targets; t != 0; t &= t - 1) {
    text += (text.empty() ? "" : " ") + std::string(hwy::TargetName(t & -t));
  }
  return text.empty() ? "none" : text;
}

/// The targets the running CPU has, with the vector-length ones (SVE2_128, SVE_256). Highway
/// 1.0.3's SupportedTargets() leaves the dispatcher on a choice without those, so the
/// dispatcher is reset afterwards: the next dispatch chooses afresh.
int64_t cpu_targets() {
  hwy::SetSupportedTargetsForTest(0);
  const int64_t targets = hwy::SupportedTargets();
  hwy::SetSupportedTargetsForTest(0);
  return targets;
}

void say(const std::string& line) {
  std::printf("[ SIMD     ] %s\n", line.c_str());
  std::fflush(stdout);
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string report(const std::vector<reference::Mismatch>& bad) {
  std::string text;
  for (const auto& m : bad) {
    text += m.where + ": got " + std::to_string(m.actual) + ", expected " + std::to_string(m.expected) + "\n";
  }
  return text;
}

struct Output {
  PixelFormat format;
  DType dtype;
};

/// Converts and checks one source into `dst_w` x `dst_h` of `out`; false when the pair is not
/// implemented (or the size does not suit the output format).
bool check(ImageProcessor& proc, const Tensor& src, PixelFormat from, Output out, int64_t dst_w, int64_t dst_h,
           const ConvertOptions& o, const std::string& target) {
  auto dst = Tensor::image(dst_w, dst_h, out.format, MemoryKind::Mem, out.dtype);
  if (!dst) dst = Tensor::image(dst_w + 1, dst_h + 1, out.format, MemoryKind::Mem, out.dtype);  // even sizes
  if (!dst) return false;
  const auto result = proc.convert(src, *dst, o);
  const std::string pair = std::string(to_string(from)) + " -> " + std::string(to_string(out.format)) + " " +
                           std::string(to_string(out.dtype)) + " " + std::string(to_string(o.interpolation));
  if (!result) {
    EXPECT_EQ(result.error().code(), ErrorCode::NotImplemented)
        << target << ": " << pair << ": " << result.error().message();
    return false;
  }
  EXPECT_EQ(report(reference::compare(src, *dst, o)), "") << target << ": " << pair;
  return true;
}

/// Every input format into outputs that reach every kernel (float planes, interleaved and
/// planar 8-bit, i8, f16, the YUV writers), by each interpolation, at sizes with vector tails;
/// then the main job's geometry (1080p-class NV12 into a 2 MiB+ f32 tensor: the streamed
/// stores). Returns how many conversions ran.
int convert_everything(const std::string& target) {
  const Output outputs[] = {{PixelFormat::PlanarRgb, DType::F32},  {PixelFormat::Rgb, DType::U8},
                            {PixelFormat::Bgra, DType::U8},        {PixelFormat::Grey, DType::U8},
                            {PixelFormat::PlanarRgba, DType::F16}, {PixelFormat::Rgba, DType::I8},
                            {PixelFormat::PlanarRgb, DType::U8},   {PixelFormat::Nv12, DType::U8},
                            {PixelFormat::I420, DType::U8},        {PixelFormat::Yuyv, DType::U8}};
  struct Geometry {
    Interpolation interpolation;
    int64_t src_w, src_h, dst_w, dst_h;
  };
  const Geometry geometries[] = {{Interpolation::Nearest, 70, 30, 45, 41},  // up vertically
                                 {Interpolation::Bilinear, 70, 30, 33, 17},
                                 {Interpolation::Bilinear, 34, 20, 67, 43},  // upscale
                                 {Interpolation::Area, 70, 34, 29, 13}};
  std::mt19937 rng(31);
  ImageProcessor proc = std::move(*ImageProcessor::create({.threads = 2, .backend = ImageBackend::Cpu}));
  int ran = 0;
  for (PixelFormat from : all<PixelFormat>()) {
    for (const Geometry& g : geometries) {
      auto src = Tensor::image(g.src_w, g.src_h, from, MemoryKind::Mem);
      EXPECT_TRUE(src) << to_string(from);
      if (!src) continue;
      fill_random(*src, rng);
      for (Output out : outputs) {
        ConvertOptions o;
        o.resize = ResizeMode::Letterbox;
        o.interpolation = g.interpolation;
        o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
        o.std = {0.229f, 0.224f, 0.225f, 0.25f};
        o.swap_rb = (ran % 3) == 1;
        o.matrix = (ran % 2) == 0 ? ColorMatrix::Bt601 : ColorMatrix::Bt709;
        ran += check(proc, *src, from, out, g.dst_w, g.dst_h, o, target) ? 1 : 0;
      }
    }
  }
  auto frame = Tensor::image(640, 360, PixelFormat::Nv12, MemoryKind::Mem);
  EXPECT_TRUE(frame);
  if (!frame) return ran;
  fill_random(*frame, rng);
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  o.mean = {0.485f, 0.456f, 0.406f, 0};
  o.std = {0.229f, 0.224f, 0.225f, 1};
  for (Output out : {Output{PixelFormat::PlanarRgb, DType::F32}, Output{PixelFormat::Rgb, DType::U8}}) {
    EXPECT_TRUE(check(proc, *frame, PixelFormat::Nv12, out, 640, 640, o, target))
        << target << ": the main job's geometry";
    ++ran;
  }
  return ran;
}

TEST(SimdTarget, TheDispatcherPicksAVectorTargetAndItMatchesTheReference) {
  const int64_t cpu = cpu_targets();
  const int ran = convert_everything("the dispatcher's choice");  // its first dispatch chooses
  const std::string picked = dispatched_target();
  const bool fallback = (cpu & HWY_TARGETS) == 0;
  say("compiled targets: " + names(HWY_TARGETS) + "; this CPU has: " + names(cpu));
  say("the dispatcher picks " + picked +
      (fallback ? " (no compiled target is on this CPU's list: Highway's fallback, the static target)" : "") + " and " +
      std::to_string(ran) + " conversions on it match the reference");
  EXPECT_NE(picked, "EMU128") << "the kernels fell back to emulated vectors";
  EXPECT_NE(picked, "SCALAR") << "the kernels fell back to scalar code";
  const std::string expected = env("MEMHAL_TEST_EXPECT_SIMD_PICK");
  if (!expected.empty()) {
    EXPECT_EQ(picked, expected) << "MEMHAL_TEST_EXPECT_SIMD_PICK (QEMU_CPU=" << env("QEMU_CPU") << ")";
  }
}

TEST(SimdTarget, EveryTargetTheCpuHasMatchesTheReference) {
  struct Restore {
    ~Restore() { hwy::SetSupportedTargetsForTest(0); }
  } restore;
  const int64_t cpu = cpu_targets();
  std::string ran_targets;
  for (int64_t targets = HWY_TARGETS; targets != 0; targets &= targets - 1) {
    const int64_t target = targets & -targets;
    const std::string name = hwy::TargetName(target);
    if ((cpu & target) == 0) {
      say(name + ": not on this CPU");
      continue;
    }
    hwy::SetSupportedTargetsForTest(target);
    ASSERT_EQ(dispatched_target(), name) << "forcing " << name << " did not reach the dispatcher";
    const int conversions = convert_everything(name);
    ASSERT_EQ(dispatched_target(), name);
    say(name + ": " + std::to_string(conversions) + " conversions match the reference");
    ran_targets += (ran_targets.empty() ? "" : " ") + name;
  }
  if ((cpu & HWY_TARGETS) == 0) {
    // No compiled target is on the CPU's list (Highway 1.0.3 lists NEON only with AES): the
    // dispatcher calls its fallback, the static target; check that one.
    const int conversions = convert_everything("fallback");
    const std::string name = dispatched_target();
    say(name + " (the dispatcher's fallback): " + std::to_string(conversions) + " conversions match the reference");
    ran_targets = name;
  }
  say("exercised: " + (ran_targets.empty() ? std::string("none") : ran_targets));
  EXPECT_FALSE(ran_targets.empty()) << "no Highway target ran";
  const std::string expected = env("MEMHAL_TEST_EXPECT_SIMD_TARGETS");
  if (!expected.empty()) {
    EXPECT_EQ(ran_targets, expected) << "MEMHAL_TEST_EXPECT_SIMD_TARGETS (QEMU_CPU=" << env("QEMU_CPU") << ")";
  }
}

}  // namespace
}  // namespace memhal
#endif  // HWY_ONCE
