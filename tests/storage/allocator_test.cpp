#include <cstdlib>
#include <memhal/memory.hpp>
#include <memhal/tensor.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Availability, MemIsAlwaysAvailable) {
  EXPECT_TRUE(is_available(MemoryKind::Mem));
  EXPECT_FALSE(availability(MemoryKind::Mem).reason.empty());
}

TEST(Availability, EveryKindHasAReason) {
  for (MemoryKind kind : all<MemoryKind>()) {
    const Availability answer = availability(kind);
    EXPECT_FALSE(answer.reason.empty()) << to_string(kind);
    EXPECT_EQ(answer.available, is_available(kind));
  }
}

TEST(Availability, BackendsWithoutAnAllocatorSaySo) {
  EXPECT_FALSE(is_available(MemoryKind::IoSurface));
  EXPECT_NE(availability(MemoryKind::IoSurface).reason.find("Apple"), std::string::npos);
  EXPECT_FALSE(is_available(MemoryKind::Pbo));
  EXPECT_NE(availability(MemoryKind::Pbo).reason.find("ImageProcessor::create_image"), std::string::npos);
  EXPECT_FALSE(is_available(MemoryKind::Cuda));
  EXPECT_NE(availability(MemoryKind::Cuda).reason.find("libcuda.so.1"), std::string::npos);
}

TEST(Availability, UnknownKindIsNotAvailable) {
  EXPECT_FALSE(is_available(static_cast<MemoryKind>(6)));
  EXPECT_EQ(availability(static_cast<MemoryKind>(6)).refusal, ErrorCode::InvalidArgument);
}

TEST(Allocation, PinnedRequestsNeverFallBack) {
  for (MemoryKind kind : all<MemoryKind>()) {
    auto tensor = Tensor::create({16}, DType::U8, kind);
    if (is_available(kind)) {
      ASSERT_OK(tensor);
      EXPECT_EQ(tensor->memory(), kind);
      EXPECT_TRUE(tensor->allocation_notes().empty());
    } else {
      ASSERT_FALSE(tensor.has_value()) << to_string(kind) << " fell back to " << to_string(tensor->memory());
      EXPECT_EQ(tensor.error().code(), availability(kind).refusal) << tensor.error().to_string();
      EXPECT_NE(tensor.error().message().find(to_string(kind)), std::string::npos) << tensor.error().message();
      EXPECT_NE(tensor.error().message().find(availability(kind).reason), std::string::npos);
    }
  }
}

TEST(Allocation, PboPinnedIsNotImplementedAndPointsToImageProcessor) {
  auto tensor = Tensor::create({16}, DType::U8, MemoryKind::Pbo);
  EXPECT_ERROR(ErrorCode::NotImplemented, tensor);
  EXPECT_NE(tensor.error().message().find("ImageProcessor::create_image"), std::string::npos);
}

TEST(Allocation, UnknownPinnedKindIsInvalid) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::create({16}, DType::U8, static_cast<MemoryKind>(77)));
}

TEST(Allocation, AutoSelectionKeepsTheReasonForEverySkippedKind) {
  ScopedEnv env("MEMHAL_FORCE_MEM", nullptr);
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({16}, DType::U8));
  if (is_available(MemoryKind::DmaBuf)) {
    EXPECT_EQ(tensor.memory(), MemoryKind::DmaBuf);
  } else {
    EXPECT_EQ(tensor.memory(), MemoryKind::Mem);
    EXPECT_NE(tensor.allocation_notes().find("dmabuf skipped"), std::string::npos) << tensor.allocation_notes();
    EXPECT_NE(tensor.allocation_notes().find(availability(MemoryKind::DmaBuf).reason), std::string::npos);
  }
}

TEST(Allocation, ForceMemGoesStraightToMem) {
  {
    ScopedEnv env("MEMHAL_FORCE_MEM", "1");
    EXPECT_TRUE(force_mem_requested());
    ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({16}, DType::U8));
    EXPECT_EQ(tensor.memory(), MemoryKind::Mem);
    EXPECT_NE(tensor.allocation_notes().find("MEMHAL_FORCE_MEM"), std::string::npos);
    ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(8, 8, PixelFormat::Rgba));
    EXPECT_EQ(image.memory(), MemoryKind::Mem);
  }
  for (const char* off : {"0", "false", "FALSE", ""}) {
    ScopedEnv env("MEMHAL_FORCE_MEM", off);
    EXPECT_FALSE(force_mem_requested()) << "'" << off << "'";
  }
  ScopedEnv env("MEMHAL_FORCE_MEM", "yes");
  EXPECT_TRUE(force_mem_requested());
}

TEST(Allocation, MemIsAlignedAndZeroed) {
  for (int64_t size : {1, 63, 64, 1000, 1 << 20, (1 << 20) + 3}) {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({size}, DType::U8, MemoryKind::Mem));
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(map.data()) % 64, 0u) << size;
    ASSERT_OK_AND_ASSIGN(auto bytes, map.span<const uint8_t>());
    EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), size);
  }
}

}  // namespace
}  // namespace memhal
