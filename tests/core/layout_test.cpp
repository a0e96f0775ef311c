#include <memhal/layout.hpp>
#include <memhal/pixel_format.hpp>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

std::vector<int64_t> vec(std::span<const int64_t> s) {
  return {s.begin(), s.end()};
}

TEST(Layout, ContiguousIsRowMajorInBytes) {
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({2, 3, 4}, DType::F32));
  EXPECT_EQ(vec(layout.shape()), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(vec(layout.strides()), (std::vector<int64_t>{48, 16, 4}));
  EXPECT_EQ(layout.nbytes(), 96);
  EXPECT_TRUE(layout.is_contiguous());
  EXPECT_EQ(layout.byte_extent().end, 96);
}

TEST(Layout, NegativeDimensionIsInvalid) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::contiguous({2, -1}, DType::U8));
}

TEST(Layout, OverflowingShapeIsInvalid) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::contiguous({int64_t{1} << 62, 4}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::contiguous({int64_t{1} << 61, 2}, DType::F64));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::contiguous({INT64_MAX}, DType::U16));
  EXPECT_ERROR(ErrorCode::InvalidArgument,
               Layout::contiguous({1 << 16, 1 << 16, 1 << 16, 1 << 16}, DType::U8));  // 2^64
}

TEST(Layout, RankAboveEightIsInvalid) {
  EXPECT_OK(Layout::contiguous({1, 1, 1, 1, 1, 1, 1, 1}, DType::U8));
  auto result = Layout::contiguous({1, 1, 1, 1, 1, 1, 1, 1, 1}, DType::U8);
  EXPECT_ERROR(ErrorCode::InvalidArgument, result);
  EXPECT_NE(result.error().message().find("at most 8"), std::string::npos) << result.error().message();
}

TEST(Layout, UnknownDTypeIsInvalid) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::contiguous({1}, static_cast<DType>(99)));
}

TEST(Layout, ZeroSizedDimensionMakesAnEmptyLayout) {
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({3, 0, 5}, DType::F32));
  EXPECT_TRUE(layout.empty());
  EXPECT_EQ(layout.nbytes(), 0);
  EXPECT_TRUE(layout.is_contiguous());
  EXPECT_EQ(layout.byte_extent().end - layout.byte_extent().begin, 0);
}

TEST(Layout, ScalarHasOneElement) {
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous(std::span<const int64_t>{}, DType::F64));
  EXPECT_EQ(layout.element_count(), 1);
  EXPECT_EQ(layout.nbytes(), 8);
}

TEST(Layout, StridedRejectsExtentsBeforeTheBuffer) {
  const std::vector<int64_t> shape{4}, back{-4};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::strided(shape, back, 0, DType::F32));
  ASSERT_OK_AND_ASSIGN(Layout ok, Layout::strided(shape, back, 12, DType::F32));
  EXPECT_EQ(ok.byte_extent().begin, 0);
  EXPECT_EQ(ok.byte_extent().end, 16);
  const std::vector<int64_t> two{2, 2};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::strided(two, back, 0, DType::F32));  // rank mismatch
  const std::vector<int64_t> huge_strides{4, INT64_MAX / 2};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::strided(std::vector<int64_t>{2, 3}, huge_strides, 0, DType::U8));
  const std::vector<int64_t> down{-(INT64_MAX / 2)};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::strided(std::vector<int64_t>{4}, down, 0, DType::U8));
  // Reaching exactly INT64_MIN before the buffer is reported without negating it (found by descriptor_fuzz).
  const std::vector<int64_t> lowest{INT64_MIN};
  const auto at_lowest = Layout::strided(std::vector<int64_t>{2}, lowest, 0, DType::U8);
  ASSERT_FALSE(at_lowest.has_value());
  EXPECT_NE(at_lowest.error().to_string().find("9223372036854775808 bytes before the buffer"), std::string::npos)
      << at_lowest.error().to_string();
}

TEST(Layout, SliceFlipTransposeComposeStrides) {
  ASSERT_OK_AND_ASSIGN(Layout base, Layout::contiguous({4, 6}, DType::U16));
  ASSERT_OK_AND_ASSIGN(Layout sliced, base.slice(1, 2, 5));
  EXPECT_EQ(vec(sliced.shape()), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(sliced.offset(), 4);
  ASSERT_OK_AND_ASSIGN(Layout flipped, sliced.flip(0));
  EXPECT_EQ(flipped.offset(), 4 + 3 * 12);
  EXPECT_EQ(vec(flipped.strides()), (std::vector<int64_t>{-12, 2}));
  ASSERT_OK_AND_ASSIGN(Layout transposed, flipped.transpose(0, 1));
  EXPECT_EQ(vec(transposed.strides()), (std::vector<int64_t>{2, -12}));
  EXPECT_FALSE(transposed.is_contiguous());
}

TEST(Layout, OutOfRangeViewsAreErrors) {
  ASSERT_OK_AND_ASSIGN(Layout base, Layout::contiguous({4, 6}, DType::U8));
  EXPECT_ERROR(ErrorCode::OutOfRange, base.slice(2, 0, 1));
  EXPECT_ERROR(ErrorCode::OutOfRange, base.slice(0, 0, 5));
  EXPECT_ERROR(ErrorCode::OutOfRange, base.slice(0, -1, 2));
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.slice(0, 3, 2));
  EXPECT_OK(base.slice(0, 4, 4));  // empty slice at the end is allowed
  EXPECT_ERROR(ErrorCode::OutOfRange, base.flip(2));
  EXPECT_ERROR(ErrorCode::OutOfRange, base.transpose(0, 7));
  const std::vector<std::size_t> repeated{0, 0}, short_axes{0}, bad{0, 9};
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.permute(repeated));
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.permute(short_axes));
  EXPECT_ERROR(ErrorCode::OutOfRange, base.permute(bad));
}

TEST(Layout, ReshapeOfContiguousAlwaysWorks) {
  ASSERT_OK_AND_ASSIGN(Layout base, Layout::contiguous({2, 3, 4}, DType::F32));
  const std::vector<int64_t> flat{24}, inferred{4, -1}, with_ones{1, 6, 1, 4};
  ASSERT_OK_AND_ASSIGN(Layout a, base.reshape(flat));
  EXPECT_TRUE(a.is_contiguous());
  ASSERT_OK_AND_ASSIGN(Layout b, base.reshape(inferred));
  EXPECT_EQ(vec(b.shape()), (std::vector<int64_t>{4, 6}));
  ASSERT_OK_AND_ASSIGN(Layout c, base.reshape(with_ones));
  EXPECT_TRUE(c.is_contiguous());
}

TEST(Layout, ReshapeThatNeedsACopyIsRefused) {
  ASSERT_OK_AND_ASSIGN(Layout base, Layout::contiguous({2, 3}, DType::F32));
  ASSERT_OK_AND_ASSIGN(Layout transposed, base.transpose(0, 1));
  const std::vector<int64_t> flat{6};
  auto result = transposed.reshape(flat);
  EXPECT_ERROR(ErrorCode::InvalidArgument, result);
  EXPECT_NE(result.error().message().find("materialize"), std::string::npos);
  // Splitting a dimension of a strided view needs no copy.
  ASSERT_OK_AND_ASSIGN(Layout wide, Layout::contiguous({4, 8}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Layout cols, wide.slice(1, 0, 4));
  const std::vector<int64_t> split{2, 2, 4};
  ASSERT_OK_AND_ASSIGN(Layout s, cols.reshape(split));
  EXPECT_EQ(vec(s.strides()), (std::vector<int64_t>{16, 8, 1}));
}

TEST(Layout, ReshapeWithWrongCountIsInvalid) {
  ASSERT_OK_AND_ASSIGN(Layout base, Layout::contiguous({2, 3}, DType::F32));
  const std::vector<int64_t> wrong{7}, two_inferred{-1, -1}, negative{-2, 3}, cannot_infer{4, -1};
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.reshape(wrong));
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.reshape(two_inferred));
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.reshape(negative));
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.reshape(cannot_infer));
  const std::vector<int64_t> too_many(9, 1);
  EXPECT_ERROR(ErrorCode::InvalidArgument, base.reshape(too_many));
}

TEST(Layout, InterleavedImageHasAlignedRows) {
  ASSERT_OK_AND_ASSIGN(Layout rgb, Layout::image(1001, 3, PixelFormat::Rgb));
  EXPECT_EQ(vec(rgb.shape()), (std::vector<int64_t>{3, 1001, 3}));
  EXPECT_EQ(rgb.strides()[0], 3008);  // 3003 rounded up to 64
  EXPECT_EQ(rgb.pixel_format(), PixelFormat::Rgb);
  ASSERT_OK_AND_ASSIGN(Layout packed, Layout::image(1001, 3, PixelFormat::Rgb, DType::U8, 1));
  EXPECT_TRUE(packed.is_contiguous());
}

TEST(Layout, Nv12ImageHasTwoPlanes) {
  ASSERT_OK_AND_ASSIGN(Layout nv12, Layout::image(1920, 1080, PixelFormat::Nv12));
  ASSERT_EQ(nv12.planes().size(), 2u);
  EXPECT_EQ(nv12.planes()[0].pitch, 1920);
  EXPECT_EQ(nv12.planes()[1].offset, 1920 * 1080);
  EXPECT_EQ(nv12.planes()[1].height, 540);
  EXPECT_EQ(nv12.nbytes(), 1920 * 1080 * 3 / 2);
  EXPECT_EQ(nv12.byte_extent().end, 1920 * 1080 * 3 / 2);
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image(1919, 1080, PixelFormat::Nv12));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image(0, 1080, PixelFormat::Nv12));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image(64, 64, static_cast<PixelFormat>(0)));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image(64, 64, PixelFormat::Rgb, DType::U8, 48));
}

TEST(Layout, ImagePlanesDescribeInterleavedAndPlanarRgbAsStridedTensors) {
  const std::array<PlaneLayout, 1> rgb_plane{PlaneLayout{0, 16, 200}};
  ASSERT_OK_AND_ASSIGN(Layout rgb, Layout::image_planes(64, 10, PixelFormat::Rgb, rgb_plane));
  EXPECT_EQ(vec(rgb.shape()), (std::vector<int64_t>{10, 64, 3}));
  EXPECT_EQ(vec(rgb.strides()), (std::vector<int64_t>{200, 3, 1}));
  EXPECT_EQ(rgb.offset(), 16);
  EXPECT_EQ(rgb.pixel_format(), PixelFormat::Rgb);
  EXPECT_FALSE(rgb.is_multi_plane());
  // The planes Layout::image lays out give back the same layout, for every format.
  for (PixelFormat format : all<PixelFormat>()) {
    ASSERT_OK_AND_ASSIGN(Layout image, Layout::image(64, 10, format, DType::U8, 32));
    std::array<PlaneLayout, kMaxPlanes> planes{};
    const uint32_t count = plane_count(format);
    for (uint32_t i = 0; i < count; ++i) {
      planes[i] = image.is_multi_plane() ? image.planes()[i]
                  : count == 1           ? PlaneLayout{0, 0, image.strides()[0]}
                                         : PlaneLayout{0, i * image.strides()[0], image.strides()[1]};
    }
    ASSERT_OK_AND_ASSIGN(Layout described, Layout::image_planes(64, 10, format, std::span(planes.data(), count)));
    EXPECT_EQ(described, image) << to_string(format);
  }
  const std::array<PlaneLayout, 3> uneven{PlaneLayout{0, 0, 64}, PlaneLayout{0, 640, 64}, PlaneLayout{0, 2000, 64}};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image_planes(64, 10, PixelFormat::PlanarRgb, uneven));
  const std::array<PlaneLayout, 3> split{PlaneLayout{0, 0, 64}, PlaneLayout{1, 0, 64}, PlaneLayout{2, 0, 64}};
  EXPECT_ERROR(ErrorCode::InvalidArgument, Layout::image_planes(64, 10, PixelFormat::PlanarRgb, split));
}

TEST(Layout, CropOfMultiPlaneImageMovesEveryPlane) {
  ASSERT_OK_AND_ASSIGN(Layout nv12, Layout::image(64, 32, PixelFormat::Nv12));
  ASSERT_OK_AND_ASSIGN(Layout crop, nv12.crop(8, 4, 16, 8));
  EXPECT_EQ(crop.planes()[0].offset, 4 * 64 + 8);
  EXPECT_EQ(crop.planes()[1].offset, 64 * 32 + 2 * 64 + 8);
  EXPECT_EQ(crop.planes()[1].height, 4);
  EXPECT_ERROR(ErrorCode::InvalidArgument, nv12.crop(1, 0, 16, 8));
  EXPECT_ERROR(ErrorCode::OutOfRange, nv12.crop(60, 0, 16, 8));
  EXPECT_ERROR(ErrorCode::NotImplemented, nv12.flip(0));
}

TEST(Layout, ViewsKeepThePixelFormatOnlyWhileItStillHolds) {
  ASSERT_OK_AND_ASSIGN(Layout rgb, Layout::image(8, 4, PixelFormat::Rgb));
  EXPECT_EQ(rgb.flip(1)->pixel_format(), PixelFormat::Rgb);
  EXPECT_EQ(rgb.transpose(0, 1)->pixel_format(), PixelFormat::Rgb);
  EXPECT_EQ(rgb.slice(2, 0, 1)->pixel_format(), std::nullopt);
  EXPECT_EQ(rgb.flip(2)->pixel_format(), std::nullopt);
  ASSERT_OK_AND_ASSIGN(Layout yuyv, Layout::image(8, 4, PixelFormat::Yuyv));
  EXPECT_EQ(yuyv.flip(0)->pixel_format(), PixelFormat::Yuyv);
  EXPECT_EQ(yuyv.flip(1)->pixel_format(), std::nullopt);
  EXPECT_ERROR(ErrorCode::InvalidArgument, yuyv.crop(1, 0, 2, 2));
  ASSERT_OK_AND_ASSIGN(Layout planar, Layout::image(8, 4, PixelFormat::PlanarRgb));
  ASSERT_OK_AND_ASSIGN(Layout planar_crop, planar.crop(2, 1, 4, 2));
  EXPECT_EQ(vec(planar_crop.shape()), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(planar_crop.pixel_format(), PixelFormat::PlanarRgb);
  ASSERT_OK_AND_ASSIGN(Layout plain, Layout::contiguous({4, 4}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, plain.crop(0, 0, 1, 1));
}

}  // namespace
}  // namespace memhal
