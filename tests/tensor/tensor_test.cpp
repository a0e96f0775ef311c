#include <memhal/tensor.hpp>
#include <numeric>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

std::vector<int64_t> vec(std::span<const int64_t> s) {
  return {s.begin(), s.end()};
}

Tensor iota_tensor(std::initializer_list<int64_t> shape) {
  auto tensor = Tensor::create(shape, DType::I32, MemoryKind::Mem);
  EXPECT_TRUE(tensor.has_value());
  auto map = tensor->map(CpuAccess::Write);
  auto values = *map->span<int32_t>();
  std::iota(values.begin(), values.end(), 0);
  return *tensor;
}

std::vector<int32_t> contents(const Tensor& tensor) {
  auto dense = tensor.materialize();
  EXPECT_TRUE(dense.has_value()) << dense.error().to_string();
  auto map = dense->map(CpuAccess::Read);
  auto values = *map->span<const int32_t>();
  return {values.begin(), values.end()};
}

TEST(Tensor, CreateReportsShapeStridesAndName) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({1, 3, 224, 224}, DType::F32, std::nullopt, "input"));
  EXPECT_EQ(vec(tensor.shape()), (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(vec(tensor.strides()), (std::vector<int64_t>{3 * 224 * 224 * 4, 224 * 224 * 4, 224 * 4, 4}));
  EXPECT_EQ(tensor.dtype(), DType::F32);
  EXPECT_EQ(tensor.nbytes(), 3 * 224 * 224 * 4);
  EXPECT_EQ(tensor.name(), "input");
  EXPECT_TRUE(tensor.is_contiguous());
}

TEST(Tensor, BadShapesAreInvalidArguments) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::create({-1}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::create({int64_t{1} << 40, int64_t{1} << 40}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::create({1, 1, 1, 1, 1, 1, 1, 1, 1}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::create({4}, static_cast<DType>(12)));
}

TEST(Tensor, HugeButValidShapeFailsAsOutOfMemoryNotACrash) {
  auto result = Tensor::create({int64_t{1} << 50}, DType::U8, MemoryKind::Mem);
  EXPECT_ERROR(ErrorCode::OutOfMemory, result);
}

TEST(Tensor, EmptyTensorsWorkLikeNumpy) {
  ASSERT_OK_AND_ASSIGN(Tensor empty, Tensor::create({0, 5}, DType::F32));
  EXPECT_EQ(empty.nbytes(), 0);
  ASSERT_OK_AND_ASSIGN(TensorMap map, empty.map(CpuAccess::Read));
  EXPECT_EQ(map.size_bytes(), 0u);
  EXPECT_EQ(map.span<const float>()->size(), 0u);
  ASSERT_OK_AND_ASSIGN(Tensor sliced, empty.slice(1, 1, 3));
  ASSERT_OK_AND_ASSIGN(Tensor dense, sliced.flip(1)->materialize());
  EXPECT_EQ(vec(dense.shape()), (std::vector<int64_t>{0, 2}));
}

TEST(Tensor, MapWithNoAccessIsInvalid) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, tensor.map(CpuAccess::None));
  EXPECT_ERROR(ErrorCode::InvalidArgument, tensor.map(static_cast<CpuAccess>(4)));
}

TEST(Tensor, TypedSpansCheckDTypeAccessAndContiguity) {
  Tensor tensor = iota_tensor({2, 3});
  ASSERT_OK_AND_ASSIGN(TensorMap read, tensor.map(CpuAccess::Read));
  EXPECT_EQ(read.size_bytes(), 24u);
  ASSERT_OK_AND_ASSIGN(auto values, read.span<const int32_t>());
  EXPECT_EQ(values[5], 5);
  EXPECT_ERROR(ErrorCode::PermissionDenied, read.span<int32_t>());
  EXPECT_ERROR(ErrorCode::InvalidArgument, read.span<const float>());
  EXPECT_EQ(read.span<const std::byte>()->size(), 24u);
  ASSERT_OK_AND_ASSIGN(Tensor column, tensor.slice(1, 1, 2));
  ASSERT_OK_AND_ASSIGN(TensorMap strided, column.map(CpuAccess::Read));
  EXPECT_ERROR(ErrorCode::InvalidArgument, strided.span<const int32_t>());
  EXPECT_EQ(*reinterpret_cast<const int32_t*>(strided.data() + strided.strides()[0]), 4);
}

TEST(Tensor, ReadMapsGiveConstBytesAndRefuseMutableAccess) {
  ASSERT_OK_AND_ASSIGN(Tensor nv12, Tensor::image(8, 4, PixelFormat::Nv12, MemoryKind::Mem));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap write, nv12.map(CpuAccess::Write));
    ASSERT_OK_AND_ASSIGN(std::byte * y, write.mutable_data());
    EXPECT_EQ(y, write.data());
    ASSERT_OK_AND_ASSIGN(std::byte * uv, write.mutable_plane(1));
    uv[0] = std::byte{128};
    EXPECT_ERROR(ErrorCode::OutOfRange, write.mutable_plane(2));
  }
  ASSERT_OK_AND_ASSIGN(TensorMap read, nv12.map(CpuAccess::Read));
  static_assert(std::is_same_v<decltype(read.const_data()), const std::byte*>);
  static_assert(std::is_same_v<decltype(read.const_plane(0)), const std::byte*>);
  EXPECT_EQ(read.const_plane(1)[0], std::byte{128});
  EXPECT_ERROR(ErrorCode::PermissionDenied, read.mutable_data());
  EXPECT_ERROR(ErrorCode::PermissionDenied, read.mutable_plane(1));
  ASSERT_OK_AND_ASSIGN(TensorMap both, nv12.map(CpuAccess::ReadWrite));
  EXPECT_OK(both.mutable_data());
}

TEST(Tensor, ViewsShareStorageAndCopyNothing) {
  Tensor tensor = iota_tensor({4, 6});
  ASSERT_OK_AND_ASSIGN(TensorMap base, tensor.map(CpuAccess::Read));
  const std::vector<Result<Tensor>> views{tensor.slice(0, 1, 3), tensor.flip(1), tensor.transpose(0, 1),
                                          tensor.permute({1, 0}), tensor.reshape({2, 12})};
  for (const auto& view : views) {
    ASSERT_OK(view);
    EXPECT_TRUE(same_storage(tensor, *view));
    ASSERT_OK_AND_ASSIGN(TensorMap map, view->map(CpuAccess::Read));
    // The view's element 0 lies inside the parent's bytes: nothing was copied.
    EXPECT_GE(map.data(), base.data());
    EXPECT_LT(map.data(), base.data() + tensor.nbytes());
  }
  ASSERT_OK_AND_ASSIGN(Tensor copy, tensor.materialize());
  EXPECT_FALSE(same_storage(tensor, copy));
}

TEST(Tensor, WritesThroughAViewReachTheParent) {
  Tensor tensor = iota_tensor({3, 4});
  ASSERT_OK_AND_ASSIGN(Tensor flipped, tensor.flip(0));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, flipped.map(CpuAccess::Write));
    *reinterpret_cast<int32_t*>(map.data()) = -7;  // flipped element (0, 0) is parent (2, 0)
  }
  EXPECT_EQ(contents(tensor)[8], -7);
}

TEST(Tensor, ViewsKeepTheParentStorageAlive) {
  std::optional<Tensor> view;
  {
    Tensor tensor = iota_tensor({2, 2});
    view = *tensor.flip(0);
  }
  EXPECT_EQ(contents(*view), (std::vector<int32_t>{2, 3, 0, 1}));
}

TEST(Tensor, MaterializeGathersViews) {
  Tensor tensor = iota_tensor({2, 3});
  EXPECT_EQ(contents(*tensor.transpose(0, 1)), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(contents(*tensor.flip(1)), (std::vector<int32_t>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(contents(*tensor.slice(1, 1, 3)), (std::vector<int32_t>{1, 2, 4, 5}));
  ASSERT_OK_AND_ASSIGN(Tensor dense, tensor.transpose(0, 1)->materialize(MemoryKind::Mem));
  EXPECT_TRUE(dense.is_contiguous());
  EXPECT_EQ(dense.memory(), MemoryKind::Mem);
}

TEST(Tensor, ReshapeNeedingACopySaysMaterialize) {
  Tensor tensor = iota_tensor({2, 3});
  auto result = tensor.transpose(0, 1)->reshape({6});
  EXPECT_ERROR(ErrorCode::InvalidArgument, result);
  EXPECT_NE(result.error().message().find("materialize"), std::string::npos);
}

TEST(Tensor, CopyToChecksShapes) {
  Tensor a = iota_tensor({2, 3});
  ASSERT_OK_AND_ASSIGN(Tensor b, Tensor::create({3, 2}, DType::I32));
  EXPECT_ERROR(ErrorCode::InvalidArgument, a.copy_to(b));
  ASSERT_OK_AND_ASSIGN(Tensor bt, b.transpose(0, 1));
  EXPECT_OK(a.copy_to(bt));
  EXPECT_EQ(contents(b), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
}

TEST(Tensor, ImagesCarryTheirFormat) {
  ASSERT_OK_AND_ASSIGN(Tensor rgba, Tensor::image(640, 480, PixelFormat::Rgba, MemoryKind::Mem));
  EXPECT_EQ(rgba.pixel_format(), PixelFormat::Rgba);
  EXPECT_EQ(vec(rgba.shape()), (std::vector<int64_t>{480, 640, 4}));
  ASSERT_OK_AND_ASSIGN(Tensor nv12, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(TensorMap map, nv12.map(CpuAccess::Write));
  EXPECT_EQ(map.plane(1) - map.plane(0), 64 * 32);
  EXPECT_EQ(map.plane(2), nullptr);
}

TEST(Tensor, MultiPlaneCropMaterializesPackedPlanes) {
  ASSERT_OK_AND_ASSIGN(Tensor nv12, Tensor::image(8, 4, PixelFormat::Nv12, MemoryKind::Mem));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, nv12.map(CpuAccess::Write));
    for (int i = 0; i < 64 * 4; ++i) map.plane(0)[i] = std::byte(i & 0xff);
    for (int i = 0; i < 64 * 2; ++i) map.plane(1)[i] = std::byte(200 + (i & 7));
  }
  ASSERT_OK_AND_ASSIGN(Tensor crop, nv12.crop(2, 2, 4, 2));
  ASSERT_OK_AND_ASSIGN(Tensor dense, crop.materialize());
  ASSERT_OK_AND_ASSIGN(TensorMap map, dense.map(CpuAccess::Read));
  EXPECT_EQ(dense.layout().planes()[0].pitch, 4);
  EXPECT_EQ(map.plane(0)[0], std::byte(2 * 64 + 2));
  EXPECT_EQ(map.plane(0)[4], std::byte(3 * 64 + 2));
  EXPECT_EQ(map.plane(1) - map.plane(0), 8);
  EXPECT_EQ(map.plane(1)[0], std::byte(202));
}

}  // namespace
}  // namespace memhal
