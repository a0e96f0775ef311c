#include <memhal/descriptor.hpp>
#include <memhal/tensor.hpp>
#include <random>

#include "test_support.hpp"

namespace memhal::ipc {
namespace {

Descriptor random_descriptor(std::mt19937_64& rng) {
  Descriptor d;
  d.memory_code = static_cast<uint32_t>(rng() % 8);  // includes codes unknown to this build
  d.memory_name = std::string(rng() % 12, 'k');
  d.dtype_code = static_cast<uint32_t>(rng() % 14);
  d.pixel_format_code = static_cast<uint32_t>(rng() % 17);
  d.compression_code = static_cast<uint32_t>(rng() % 7);
  d.drm_modifier = rng();
  const std::size_t rank = rng() % (kMaxRank + 1);
  for (std::size_t i = 0; i < rank; ++i) {
    d.shape.push_back(static_cast<int64_t>(rng() % 5000));
    d.strides.push_back(static_cast<int64_t>(rng()) >> (rng() % 63));
  }
  d.offset = static_cast<int64_t>(rng() >> 1);
  for (std::size_t i = rng() % (kMaxPlanes + 1); i > 0; --i) {
    d.planes.push_back({static_cast<uint32_t>(rng() % 4), static_cast<int64_t>(rng() % 100000),
                        static_cast<int64_t>(rng() % 10000), 0, 0, 0});
  }
  for (std::size_t i = rng() % (kMaxPlanes + 1); i > 0; --i) d.buffer_sizes.push_back(rng());
  if (rng() % 2) {
    Descriptor::FrameFields frame;
    frame.timing.pts = static_cast<int64_t>(rng() >> 1);
    if (rng() % 2) frame.timing.dts = -static_cast<int64_t>(rng() % 1000);
    frame.timing.duration = 33'333'333;
    frame.sequence = rng();
    d.frame = frame;
  }
  d.name = std::string(rng() % 40, 'n');
  return d;
}

TEST(Descriptor, EncodeThenDecodeGivesAnEqualDescriptor) {
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 20000; ++trial) {
    const Descriptor original = random_descriptor(rng);
    ASSERT_OK_AND_ASSIGN(auto bytes, original.encode());
    ASSERT_OK_AND_ASSIGN(Descriptor decoded, Descriptor::decode(bytes));
    ASSERT_TRUE(decoded == original) << "trial " << trial;
  }
}

TEST(Descriptor, EveryTruncationIsCorrupt) {
  std::mt19937_64 rng(7);
  const Descriptor original = random_descriptor(rng);
  ASSERT_OK_AND_ASSIGN(auto bytes, original.encode());
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    SCOPED_TRACE(length);
    EXPECT_ERROR(ErrorCode::Corrupt, Descriptor::decode(std::span(bytes).first(length)));
  }
  bytes.push_back(std::byte{0});
  EXPECT_ERROR(ErrorCode::Corrupt, Descriptor::decode(bytes));
}

TEST(Descriptor, NewerVersionIsAProtocolErrorAndBadMagicIsCorrupt) {
  Descriptor d;
  ASSERT_OK_AND_ASSIGN(auto bytes, d.encode());
  auto newer = bytes;
  newer[4] = std::byte{3};
  auto result = Descriptor::decode(newer);
  EXPECT_ERROR(ErrorCode::Protocol, result);
  EXPECT_NE(result.error().message().find("version 3"), std::string::npos);
  auto bad = bytes;
  bad[0] = std::byte{'X'};
  EXPECT_ERROR(ErrorCode::Corrupt, Descriptor::decode(bad));
}

TEST(Descriptor, LimitsAreEnforcedOnBothSides) {
  Descriptor d;
  d.shape.assign(kMaxRank + 1, 1);
  d.strides.assign(kMaxRank + 1, 1);
  EXPECT_ERROR(ErrorCode::InvalidArgument, d.encode());
  d.shape = {1};
  d.strides = {1, 2};
  EXPECT_ERROR(ErrorCode::InvalidArgument, d.encode());
  d.strides = {1};
  d.name.assign(kMaxDescriptorName + 1, 'x');
  EXPECT_ERROR(ErrorCode::InvalidArgument, d.encode());
}

TEST(Descriptor, FromTensorRoundTripsTheLayout) {
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor crop, image.crop(8, 4, 16, 8));
  ASSERT_OK_AND_ASSIGN(Descriptor d, Descriptor::from_tensor(crop));
  EXPECT_EQ(d.memory_name, "mem");
  EXPECT_EQ(d.pixel_format_code, code(PixelFormat::Nv12));
  ASSERT_OK_AND_ASSIGN(auto bytes, d.encode());
  ASSERT_OK_AND_ASSIGN(Descriptor decoded, Descriptor::decode(bytes));
  ASSERT_OK_AND_ASSIGN(Layout layout, decoded.layout());
  EXPECT_TRUE(layout == crop.layout());

  ASSERT_OK_AND_ASSIGN(Tensor rgb, Tensor::image(10, 6, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor flipped, rgb.flip(1));
  ASSERT_OK_AND_ASSIGN(Descriptor rgb_d, Descriptor::from_tensor(flipped));
  ASSERT_OK_AND_ASSIGN(Layout rgb_layout, rgb_d.layout());
  EXPECT_TRUE(rgb_layout == flipped.layout());
}

TEST(Descriptor, UnknownCodesAreNamedNotGuessed) {
  Descriptor d;
  d.memory_code = 42;
  d.memory_name = "metalbuffer";
  d.dtype_code = 99;
  d.shape = {4};
  d.strides = {1};
  EXPECT_EQ(d.memory(), std::nullopt);
  EXPECT_EQ(d.memory_description(), "metalbuffer (code 42, unknown to this build)");
  auto layout = d.layout();
  EXPECT_ERROR(ErrorCode::NotImplemented, layout);
  EXPECT_NE(layout.error().message().find("99"), std::string::npos);
  d.dtype_code = code(DType::U8);
  d.pixel_format_code = 77;
  EXPECT_ERROR(ErrorCode::NotImplemented, d.layout());
}

TEST(Descriptor, CompressedOrTiledBytesAreRefusedByNameNotReadAsLinear) {
  Descriptor linear;
  linear.memory_code = code(MemoryKind::DmaBuf);
  linear.memory_name = "dmabuf";
  linear.dtype_code = code(DType::U8);
  linear.pixel_format_code = code(PixelFormat::Rgba);
  linear.shape = {4, 8, 4};
  linear.strides = {32, 4, 1};
  linear.buffer_sizes = {128};
  linear.name = "scanout";
  ASSERT_OK(linear.layout());
  struct Case {
    uint32_t compression;
    uint64_t modifier;
    std::vector<std::string> named;  // what the message must say
  };
  const uint64_t intel_x_tiled = (uint64_t{1} << 56) | 1;
  const uint64_t invalid = (uint64_t{1} << 56) - 1;
  const std::vector<Case> cases{
      {code(Compression::Ubwc), 0, {"compression ubwc (code 2)", "scanout"}},
      {code(Compression::Any), 0, {"compression any"}},
      {999, 0, {"compression code 999 (unknown to this build)"}},
      {0, intel_x_tiled, {"0x0100000000000001", "vendor intel", "I915_FORMAT_MOD_X_TILED", "DRM_FORMAT_MOD_LINEAR"}},
      {0, invalid, {"0x00ffffffffffffff", "DRM_FORMAT_MOD_INVALID"}},
      {0, (uint64_t{2} << 56) | 0x1234, {"0x0200000000001234", "vendor amd"}},
      {0, (uint64_t{0x42} << 56) | 7, {"0x4200000000000007", "vendor 0x42, unknown to this build"}},
  };
  for (const Case& c : cases) {
    Descriptor d = linear;
    d.compression_code = c.compression;
    d.drm_modifier = c.modifier;
    // Decoding keeps it (a reader can list and name it); building a layout refuses it.
    ASSERT_OK_AND_ASSIGN(auto encoded, d.encode());
    ASSERT_OK_AND_ASSIGN(Descriptor decoded, Descriptor::decode(encoded));
    EXPECT_TRUE(decoded == d);
    const auto layout = decoded.layout();
    ASSERT_FALSE(layout.has_value()) << c.compression << " " << c.modifier;
    EXPECT_EQ(layout.error().code(), ErrorCode::NotImplemented) << layout.error().to_string();
    for (const std::string& part : c.named) {
      EXPECT_NE(layout.error().message().find(part), std::string::npos) << part << " in " << layout.error().message();
    }
  }
}

TEST(Descriptor, InvalidLayoutsAreRefusedWhenBuilt) {
  Descriptor d;
  d.dtype_code = code(DType::U8);
  d.shape = {-3};
  d.strides = {1};
  EXPECT_ERROR(ErrorCode::InvalidArgument, d.layout());
  d.shape = {4, 4};
  d.strides = {4, 1};
  d.pixel_format_code = code(PixelFormat::Rgb);  // {4, 4} is not an rgb image
  EXPECT_ERROR(ErrorCode::InvalidArgument, d.layout());
}

}  // namespace
}  // namespace memhal::ipc
