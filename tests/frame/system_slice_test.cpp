#include <memhal/system_slice.hpp>

#include <atomic>
#include <cstring>
#include <numeric>

#include "test_support.hpp"

namespace memhal {
namespace {

std::vector<std::byte> counting_bytes(std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(i * 7 + 1);
  return bytes;
}

TEST(SystemSlice, AllocateGivesZeroedOwnedBytes) {
  ASSERT_OK_AND_ASSIGN(const SystemSlice slice, SystemSlice::allocate(100));
  EXPECT_EQ(slice.ownership(), SystemSlice::Ownership::Owned);
  EXPECT_FALSE(slice.is_shareable());
  ASSERT_EQ(slice.size(), 100u);
  for (const std::byte b : slice.bytes()) EXPECT_EQ(b, std::byte{0});
}

TEST(SystemSlice, AdoptTakesTheVectorsBufferWithoutCopying) {
  std::vector<std::byte> bytes = counting_bytes(64);
  const std::byte* original = bytes.data();
  const SystemSlice slice = SystemSlice::adopt(std::move(bytes));
  EXPECT_EQ(slice.data(), original);
  EXPECT_EQ(slice.ownership(), SystemSlice::Ownership::Owned);
}

TEST(SystemSlice, MakeShareableKeepsTheDataPointer) {
  SystemSlice slice = SystemSlice::adopt(counting_bytes(4096));
  const std::byte* before = slice.data();
  slice.make_shareable();
  EXPECT_EQ(slice.ownership(), SystemSlice::Ownership::Shared);
  EXPECT_EQ(slice.data(), before);
  ASSERT_OK_AND_ASSIGN(const SystemSlice share, slice.share());
  EXPECT_EQ(share.data(), before);
  EXPECT_EQ(slice.shared_bytes().use_count(), 2);
}

TEST(SystemSlice, ShareOfOwnedBytesIsADeepCopy) {
  const SystemSlice slice = SystemSlice::adopt(counting_bytes(256));
  ASSERT_OK_AND_ASSIGN(const SystemSlice copy, slice.share());
  EXPECT_NE(copy.data(), slice.data());
  EXPECT_EQ(copy.ownership(), SystemSlice::Ownership::Owned);
  EXPECT_EQ(std::memcmp(copy.data(), slice.data(), 256), 0);
  EXPECT_EQ(slice.shared_bytes().use_count(), 1);
}

TEST(SystemSlice, MutableBytesOfAUniqueOwnerWritesInPlace) {
  SystemSlice slice = SystemSlice::adopt(counting_bytes(32));
  const std::byte* before = slice.data();
  ASSERT_OK_AND_ASSIGN(const std::span<std::byte> bytes, slice.mutable_bytes());
  EXPECT_EQ(bytes.data(), before);
  slice.make_shareable();
  ASSERT_OK_AND_ASSIGN(const std::span<std::byte> again, slice.mutable_bytes());
  EXPECT_EQ(again.data(), before) << "shared bytes with one holder are still unique";
}

TEST(SystemSlice, MutableBytesOfSharedBytesCopiesFirstAndLeavesTheOtherShareAlone) {
  SystemSlice slice = SystemSlice::adopt(counting_bytes(32));
  slice.make_shareable();
  ASSERT_OK_AND_ASSIGN(SystemSlice other, slice.share());
  ASSERT_OK_AND_ASSIGN(const std::span<std::byte> bytes, other.mutable_bytes());
  EXPECT_NE(bytes.data(), slice.data());
  bytes[0] = std::byte{0xEE};
  EXPECT_EQ(slice.bytes()[0], std::byte{1});
  EXPECT_EQ(other.bytes()[0], std::byte{0xEE});
  EXPECT_EQ(other.bytes()[31], slice.bytes()[31]);
  EXPECT_EQ(other.ownership(), SystemSlice::Ownership::Owned);
  EXPECT_EQ(slice.shared_bytes().use_count(), 1);
}

TEST(SystemSlice, LentBytesAreReleasedExactlyOnceOnTheLastDrop) {
  const std::vector<std::byte> storage = counting_bytes(128);
  int releases = 0;
  {
    SystemSlice slice = SystemSlice::lend(storage, [&releases] { ++releases; });
    EXPECT_EQ(slice.data(), storage.data());
    EXPECT_EQ(slice.ownership(), SystemSlice::Ownership::Lent);
    ASSERT_OK_AND_ASSIGN(SystemSlice a, slice.share());
    ASSERT_OK_AND_ASSIGN(const SystemSlice b, a.share());
    EXPECT_EQ(b.data(), storage.data());
    slice = SystemSlice();
    a = SystemSlice();
    EXPECT_EQ(releases, 0);
  }
  EXPECT_EQ(releases, 1);
}

TEST(SystemSlice, MutableBytesOfLentBytesCopiesAndNeverWritesTheLenders) {
  const std::vector<std::byte> storage = counting_bytes(16);
  int releases = 0;
  SystemSlice slice = SystemSlice::lend(storage, [&releases] { ++releases; });
  ASSERT_OK_AND_ASSIGN(const std::span<std::byte> bytes, slice.mutable_bytes());
  EXPECT_NE(bytes.data(), storage.data());
  bytes[3] = std::byte{0};
  EXPECT_EQ(storage[3], std::byte{22});
  EXPECT_EQ(releases, 1) << "the lent bytes are given back once the slice no longer needs them";
  EXPECT_EQ(slice.ownership(), SystemSlice::Ownership::Owned);
}

TEST(SystemSlice, SubrangeSharesTheBlockAndRejectsBytesOutsideIt) {
  ASSERT_OK_AND_ASSIGN(const SharedBytes bytes, SharedBytes::copy_of(counting_bytes(100)));
  ASSERT_OK_AND_ASSIGN(const SharedBytes middle, bytes.subrange(10, 20));
  EXPECT_EQ(middle.data(), bytes.data() + 10);
  EXPECT_EQ(middle.size(), 20u);
  EXPECT_TRUE(same_block(bytes, middle));
  EXPECT_ERROR(ErrorCode::OutOfRange, bytes.subrange(90, 11));
  EXPECT_ERROR(ErrorCode::OutOfRange, bytes.subrange(101, 0));
  EXPECT_ERROR(ErrorCode::OutOfRange, bytes.subrange(1, SIZE_MAX));
}

TEST(SystemSlice, EmptySliceSharesAndWritesWithoutTrouble) {
  SystemSlice slice;
  EXPECT_TRUE(slice.empty());
  ASSERT_OK_AND_ASSIGN(const SystemSlice copy, slice.share());
  EXPECT_TRUE(copy.empty());
  ASSERT_OK_AND_ASSIGN(const std::span<std::byte> bytes, slice.mutable_bytes());
  EXPECT_TRUE(bytes.empty());
}

TEST(SystemSlice, OwnershipHasReadableNames) {
  EXPECT_EQ(to_string(SystemSlice::Ownership::Owned), "owned");
  EXPECT_EQ(to_string(SystemSlice::Ownership::Lent), "lent");
  EXPECT_EQ(to_string(SystemSlice::Ownership::Shared), "shared");
}

}  // namespace
}  // namespace memhal
