#include <memhal/tee.hpp>

#include <atomic>

#include "test_support.hpp"

namespace memhal {
namespace {

struct Native {
  explicit Native(std::atomic<int>* counter) : releases(counter) {}
  ~Native() { releases->fetch_add(1); }
  std::atomic<int>* releases;
};

// What a payload's memory is: the bytes of a view, the native object of a foreign handle.
const void* identity(const MemoryDomain& domain) {
  return std::visit(
      [](const auto& payload) -> const void* {
        if constexpr (requires { payload.keep_alive; }) {
          return payload.keep_alive.object().get();
        } else if constexpr (requires { payload.view(); }) {
          return payload.bytes().data();
        } else {
          return payload.data();
        }
      },
      domain.payload());
}

TEST(Tee, RefusesZeroBranches) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tee::create(0));
}

TEST(Tee, ABranchCountNoMachineCanHoldIsOutOfMemoryNotAnException) {
  for (const std::size_t branches : {std::size_t{1} << 62, std::size_t{1} << 40, SIZE_MAX}) {
    ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(branches));
    Frame frame{SystemSlice::adopt(std::vector<std::byte>(64)), {}, 1, {}};
    const auto pushed = tee.push(std::move(frame));
    ASSERT_FALSE(pushed.has_value()) << branches;
    EXPECT_EQ(pushed.error().code(), ErrorCode::OutOfMemory) << pushed.error().to_string();
    EXPECT_NE(pushed.error().message().find(std::to_string(branches)), std::string::npos) << pushed.error().message();
  }
}

TEST(Tee, FansOwnedBytesOutWithoutCopyingAny) {
  std::vector<std::byte> bytes(3840 * 2160 * 4);
  const std::byte* data = bytes.data();
  Frame frame{SystemSlice::adopt(std::move(bytes)), {}, 1, {}};
  ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(16));
  ASSERT_OK_AND_ASSIGN(const std::vector<Frame> branches, tee.push(std::move(frame)));
  ASSERT_EQ(branches.size(), 16u);
  for (const Frame& branch : branches) {
    EXPECT_EQ(branch.payload.as_system_slice()->data(), data);
    EXPECT_EQ(branch.payload.get_if<SystemSlice>()->ownership(), SystemSlice::Ownership::Shared);
  }
  EXPECT_EQ(branches[0].payload.get_if<SystemSlice>()->shared_bytes().use_count(), 16);
}

TEST(Tee, ABranchThatWritesGetsItsOwnCopyAndTheOthersKeepTheOriginal) {
  Frame frame{SystemSlice::adopt(std::vector<std::byte>(64, std::byte{5})), {}, 1, {}};
  frame.metadata.set("camera", 0);
  ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(3));
  ASSERT_OK_AND_ASSIGN(std::vector<Frame> branches, tee.push(std::move(frame)));
  ASSERT_OK_AND_ASSIGN(SystemSlice * slice, branches[1].payload.require_system_slice("draw-boxes"));
  ASSERT_OK_AND_ASSIGN(const std::span<std::byte> bytes, slice->mutable_bytes());
  bytes[0] = std::byte{9};
  branches[1].metadata.set("boxes", 2);
  EXPECT_EQ(branches[0].payload.as_system_slice()->front(), std::byte{5});
  EXPECT_EQ(branches[2].payload.as_system_slice()->front(), std::byte{5});
  EXPECT_FALSE(branches[0].metadata.contains("boxes"));
  EXPECT_TRUE(same_table(branches[0].metadata, branches[2].metadata));
}

TEST(Tee, FansEveryDomainOutAsCountBumps) {
  std::atomic<int> releases{0};
  auto view =
      SystemView::create(SharedBytes::adopt(std::vector<std::byte>(48)), *TensorView::contiguous({4, 4, 3}, DType::U8));
  ASSERT_TRUE(view.has_value());
  OwnedDmaBuf dmabuf;
  dmabuf.plane_count = 1;
  dmabuf.keep_alive = KeepAlive::of(std::make_shared<Native>(&releases));
  const std::vector<MemoryDomain> payloads = {
      *view->flip(0),
      dmabuf,
      OwnedCudaBuffer{.device_pointers = {0xD00D}, .keep_alive = KeepAlive::of(std::make_shared<Native>(&releases))},
      OwnedVulkanTexture{.image = 5, .keep_alive = KeepAlive::of(std::make_shared<Native>(&releases))},
      OwnedWgpuBuffer{.buffer = 6, .keep_alive = KeepAlive::of(std::make_shared<Native>(&releases))},
  };
  dmabuf = OwnedDmaBuf();
  ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(4));
  for (const MemoryDomain& payload : payloads) {
    ASSERT_OK_AND_ASSIGN(MemoryDomain copy, payload.share());
    ASSERT_OK_AND_ASSIGN(const std::vector<Frame> branches, tee.push(Frame{std::move(copy), {}, 0, {}}));
    for (const Frame& branch : branches) {
      EXPECT_EQ(branch.payload.kind(), payload.kind());
      EXPECT_EQ(identity(branch.payload), identity(payload)) << payload.describe();
    }
  }
  EXPECT_EQ(releases.load(), 0);
}

}  // namespace
}  // namespace memhal
