#include <memhal/pixel_format.hpp>

#include <set>

#include "test_support.hpp"

namespace memhal {
namespace {

TEST(PixelFormat, PlaneCounts) {
  EXPECT_EQ(plane_count(PixelFormat::Rgb), 1u);
  EXPECT_EQ(plane_count(PixelFormat::Yuyv), 1u);
  EXPECT_EQ(plane_count(PixelFormat::Nv12), 2u);
  EXPECT_EQ(plane_count(PixelFormat::Nv21), 2u);
  EXPECT_EQ(plane_count(PixelFormat::I420), 3u);
  EXPECT_EQ(plane_count(PixelFormat::PlanarRgb), 3u);
  EXPECT_EQ(plane_count(PixelFormat::PlanarRgba), 4u);
  EXPECT_EQ(plane_count(static_cast<PixelFormat>(0)), 0u);
}

TEST(PixelFormat, ChromaSubsampling) {
  auto shifts = [](PixelFormat f) {
    auto info = *pixel_format_info(f);
    return std::pair<int, int>(info.chroma_shift_x, info.chroma_shift_y);
  };
  EXPECT_EQ(shifts(PixelFormat::Nv12), std::pair(1, 1));
  EXPECT_EQ(shifts(PixelFormat::I420), std::pair(1, 1));
  EXPECT_EQ(shifts(PixelFormat::Nv16), std::pair(1, 0));
  EXPECT_EQ(shifts(PixelFormat::Yuyv), std::pair(1, 0));
  EXPECT_EQ(shifts(PixelFormat::Nv24), std::pair(0, 0));
  EXPECT_EQ(shifts(PixelFormat::Rgba), std::pair(0, 0));
}

TEST(PixelFormat, PlanarAndAlphaAreProperties) {
  std::set<PixelFormat> planar, alpha;
  for (PixelFormat format : all<PixelFormat>()) {
    if (is_planar(format)) planar.insert(format);
    if (has_alpha(format)) alpha.insert(format);
    // A planar format is one plane per channel; alpha is the fourth channel.
    EXPECT_EQ(is_planar(format), !pixel_format_info(format)->yuv && plane_count(format) > 1) << to_string(format);
    EXPECT_EQ(has_alpha(format), pixel_format_info(format)->channels == 4) << to_string(format);
  }
  EXPECT_EQ(planar, (std::set{PixelFormat::PlanarRgb, PixelFormat::PlanarRgba}));
  EXPECT_EQ(alpha, (std::set{PixelFormat::Rgba, PixelFormat::Bgra, PixelFormat::PlanarRgba}));
  EXPECT_FALSE(is_planar(static_cast<PixelFormat>(0)));
  EXPECT_FALSE(has_alpha(static_cast<PixelFormat>(0)));
}

TEST(PixelFormat, ComponentOrderMatchesTheFourccs) {
  using Order = std::array<uint8_t, 4>;
  auto order = [](PixelFormat f) { return pixel_format_info(f)->order; };
  EXPECT_EQ(order(PixelFormat::Rgb), (Order{0, 1, 2, 3}));
  EXPECT_EQ(order(PixelFormat::Bgr), (Order{2, 1, 0, 3}));   // bytes B, G, R
  EXPECT_EQ(order(PixelFormat::Bgra), (Order{2, 1, 0, 3}));  // bytes B, G, R, A
  EXPECT_EQ(order(PixelFormat::Grey), (Order{0, 0, 0, 0}));
  EXPECT_EQ(order(PixelFormat::Yuyv), (Order{0, 1, 2, 3}));  // Y0 U Y1 V
  EXPECT_EQ(order(PixelFormat::Uyvy), (Order{1, 0, 3, 2}));  // U Y0 V Y1
  EXPECT_EQ(order(PixelFormat::Vyuy), (Order{1, 2, 3, 0}));  // V Y0 U Y1
  EXPECT_EQ(order(PixelFormat::Nv12), (Order{0, 1, 0, 0}));  // U V
  EXPECT_EQ(order(PixelFormat::Nv21), (Order{1, 0, 0, 0}));  // V U
}

TEST(PixelFormat, DrmFourccsMatchDrmFourccH) {
  // Values from <drm/drm_fourcc.h>.
  EXPECT_EQ(drm_fourcc(PixelFormat::Nv12), 0x3231564eu);  // DRM_FORMAT_NV12
  EXPECT_EQ(drm_fourcc(PixelFormat::Yuyv), 0x56595559u);  // DRM_FORMAT_YUYV
  EXPECT_EQ(drm_fourcc(PixelFormat::I420), 0x32315559u);  // DRM_FORMAT_YUV420
  EXPECT_EQ(drm_fourcc(PixelFormat::Rgba), 0x34324241u);  // DRM_FORMAT_ABGR8888: bytes R,G,B,A
  EXPECT_EQ(drm_fourcc(PixelFormat::Bgra), 0x34325241u);  // DRM_FORMAT_ARGB8888: bytes B,G,R,A
  EXPECT_EQ(drm_fourcc(PixelFormat::Rgb), 0x34324742u);   // DRM_FORMAT_BGR888: bytes R,G,B
  EXPECT_EQ(drm_fourcc(PixelFormat::Grey), 0x20203852u);  // DRM_FORMAT_R8
  EXPECT_EQ(drm_fourcc(PixelFormat::PlanarRgb), std::nullopt);
}

TEST(PixelFormat, FourccsAreUniqueAndRoundTrip) {
  std::set<uint32_t> seen;
  for (PixelFormat format : all<PixelFormat>()) {
    auto code = drm_fourcc(format);
    if (!code) continue;
    EXPECT_TRUE(seen.insert(*code).second) << to_string(format);
    EXPECT_EQ(from_drm_fourcc(*code), format);
  }
  EXPECT_EQ(from_drm_fourcc(0), std::nullopt);
  EXPECT_EQ(from_drm_fourcc(fourcc('X', 'X', 'X', 'X')), std::nullopt);
}

TEST(PixelFormat, EveryFormatIsDescribed) {
  for (PixelFormat format : all<PixelFormat>()) {
    auto info = pixel_format_info(format);
    ASSERT_TRUE(info) << to_string(format);
    EXPECT_GE(info->planes, 1);
    EXPECT_GE(info->channels, 1);
    for (std::size_t i = 0; i < info->planes; ++i) EXPECT_GT(info->plane_bytes_per_pixel[i], 0) << to_string(format);
  }
}

}  // namespace
}  // namespace memhal
