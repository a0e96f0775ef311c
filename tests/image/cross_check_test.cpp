// ImageProcessor against OpenCV and libyuv on the conversions they share. Their fixed-point
// arithmetic differs from ours by rounding, so the bounds here are their documented
// precision, not ours (ours is checked to +-1 against the reference in image_processor_test).
#include <libyuv.h>

#include <cstdlib>
#include <memhal/image_processor.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

#include "image_test_util.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

constexpr int kW = 256, kH = 142;

// Smooth content plus noise: what a camera gives, and enough variety to exercise rounding.
// Values stay inside the limited range: below Y = 16 OpenCV clamps luma before the matrix
// (it treats footroom as black), a choice the reference does not share.
Tensor natural(PixelFormat format, int w = kW, int h = kH) {
  Tensor t = *Tensor::image(w, h, format, MemoryKind::Mem, DType::U8, 1);
  auto map = *t.map(CpuAccess::Write);
  // Packed (row_align 1): the planes follow one another from the first.
  std::byte* first = t.layout().is_multi_plane() ? map.plane(0) : map.data();
  std::mt19937 rng(2);
  for (int64_t i = 0; i < t.nbytes(); ++i) {
    first[i] = std::byte(static_cast<uint8_t>(40 + (i * 13 / 7) % 170 + (rng() % 9)));
  }
  return t;
}

// Largest absolute difference between our packed u8 output and `theirs`, both `n` bytes.
int max_diff(const Tensor& ours, const uint8_t* theirs, std::size_t n) {
  auto map = *ours.map(CpuAccess::Read);
  int worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int d = std::abs(int(static_cast<uint8_t>(map.data()[i])) - int(theirs[i]));
    if (d > worst) worst = d, at = i;
  }
  if (worst > 1) {
    std::printf("largest difference %d at byte %zu: ours %d, theirs %d\n", worst, at,
                int(static_cast<uint8_t>(map.data()[at])), int(theirs[at]));
  }
  return worst;
}

Tensor convert(const Tensor& src, int w, int h, PixelFormat to, const ConvertOptions& o = {}) {
  Tensor dst = *Tensor::image(w, h, to, MemoryKind::Mem, DType::U8, 1);
  auto proc = *ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu});
  EXPECT_OK(proc.convert(src, dst, o));
  return dst;
}

TEST(CrossCheck, Nv12ToRgbAgreesWithOpenCvAndLibyuv) {
  const Tensor src = natural(PixelFormat::Nv12);
  const Tensor ours = convert(src, kW, kH, PixelFormat::Rgb);
  auto in = *src.map(CpuAccess::Read);
  const auto* y = reinterpret_cast<const uint8_t*>(in.data());
  cv::Mat cv_rgb;
  const cv::Mat nv12(kH * 3 / 2, kW, CV_8UC1, const_cast<uint8_t*>(y));
  cv::cvtColor(nv12, cv_rgb, cv::COLOR_YUV2RGB_NV12);
  EXPECT_LE(max_diff(ours, cv_rgb.data, kW * kH * 3), 2);
  std::vector<uint8_t> raw(kW * kH * 3);
  libyuv::NV12ToRAW(y, kW, y + kW * kH, kW, raw.data(), kW * 3, kW, kH);
  EXPECT_LE(max_diff(ours, raw.data(), raw.size()), 3);
}

TEST(CrossCheck, YuyvToRgbAgreesWithOpenCvAndLibyuv) {
  const Tensor src = natural(PixelFormat::Yuyv);
  const Tensor ours = convert(src, kW, kH, PixelFormat::Bgra);
  auto in = *src.map(CpuAccess::Read);
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  cv::Mat cv_bgra;
  cv::cvtColor(cv::Mat(kH, kW, CV_8UC2, const_cast<uint8_t*>(p)), cv_bgra, cv::COLOR_YUV2BGRA_YUYV);
  EXPECT_LE(max_diff(ours, cv_bgra.data, kW * kH * 4), 2);
  std::vector<uint8_t> argb(kW * kH * 4);  // libyuv "ARGB" is B, G, R, A in memory
  libyuv::YUY2ToARGB(p, kW * 2, argb.data(), kW * 4, kW, kH);
  EXPECT_LE(max_diff(ours, argb.data(), argb.size()), 3);
}

// BT.601 only: libyuv's x86 BT.709 path clamps the blue coefficient to fit its 8-bit
// multipliers (B off by up to 10), so it is no oracle for BT.709.
TEST(CrossCheck, I420ToRgbAgreesWithLibyuv) {
  const Tensor src = natural(PixelFormat::I420);
  const Tensor ours = convert(src, kW, kH, PixelFormat::Bgra);
  auto in = *src.map(CpuAccess::Read);
  const auto* y = reinterpret_cast<const uint8_t*>(in.data());
  const uint8_t* u = y + kW * kH;
  const uint8_t* v = u + kW * kH / 4;
  std::vector<uint8_t> argb(kW * kH * 4);
  libyuv::I420ToARGB(y, kW, u, kW / 2, v, kW / 2, argb.data(), kW * 4, kW, kH);
  EXPECT_LE(max_diff(ours, argb.data(), argb.size()), 3);
}

TEST(CrossCheck, RgbToI420AgreesWithLibyuv) {
  const Tensor src = natural(PixelFormat::Rgb);
  const Tensor ours = convert(src, kW, kH, PixelFormat::I420);
  auto in = *src.map(CpuAccess::Read);
  std::vector<uint8_t> i420(kW * kH * 3 / 2);
  libyuv::RAWToI420(reinterpret_cast<const uint8_t*>(in.data()), kW * 3, i420.data(), kW, i420.data() + kW * kH, kW / 2,
                    i420.data() + kW * kH * 5 / 4, kW / 2, kW, kH);
  EXPECT_LE(max_diff(ours, i420.data(), i420.size()), 2);
}

TEST(CrossCheck, BilinearResizeAgreesWithOpenCv) {
  const Tensor src = natural(PixelFormat::Rgb);
  auto in = *src.map(CpuAccess::Read);
  const cv::Mat mat(kH, kW, CV_8UC3, in.data());
  for (auto [w, h] : {std::pair{100, 61}, std::pair{400, 300}, std::pair{kW / 2, kH / 2}}) {
    const Tensor ours = convert(src, w, h, PixelFormat::Rgb);
    cv::Mat theirs;
    cv::resize(mat, theirs, cv::Size(w, h), 0, 0, cv::INTER_LINEAR);
    EXPECT_LE(max_diff(ours, theirs.data, std::size_t(w) * h * 3), 1) << w << "x" << h;
  }
}

TEST(CrossCheck, AreaDownscaleAgreesWithOpenCv) {
  const Tensor src = natural(PixelFormat::Rgb);
  auto in = *src.map(CpuAccess::Read);
  const cv::Mat mat(kH, kW, CV_8UC3, in.data());
  ConvertOptions o;
  o.interpolation = Interpolation::Area;
  for (auto [w, h] : {std::pair{kW / 4, kH / 2}, std::pair{50, 30}}) {
    const Tensor ours = convert(src, w, h, PixelFormat::Rgb, o);
    cv::Mat theirs;
    cv::resize(mat, theirs, cv::Size(w, h), 0, 0, cv::INTER_AREA);
    EXPECT_LE(max_diff(ours, theirs.data, std::size_t(w) * h * 3), 1) << w << "x" << h;
  }
}

}  // namespace
}  // namespace memhal
