#include <memhal/memory_domain.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

// One payload of every kind, in code order, built with nothing but this process.
std::vector<MemoryDomain> one_of_each_kind() {
  auto view =
      SystemView::create(SharedBytes::adopt(std::vector<std::byte>(24)), *TensorView::contiguous({2, 3, 4}, DType::U8));
  OwnedDmaBuf dmabuf;
  dmabuf.format = PixelFormat::Nv12;
  dmabuf.width = 1920;
  dmabuf.height = 1080;
  dmabuf.plane_count = 2;
  return {SystemSlice::adopt(std::vector<std::byte>(16)),
          *view,
          dmabuf,
          OwnedVulkanTexture{.width = 8, .height = 4},
          OwnedWebGPUBuffer{.size = 64},
          OwnedCudaBuffer{.width = 640, .height = 480, .device_ordinal = 3},
          OwnedD3D11Texture{.width = 8, .height = 4},
          OwnedCvPixelBuffer{.width = 8, .height = 4},
          OwnedWebGPUExternalTexture{.width = 8, .height = 4},
          OwnedWgpuTexture{.width = 8, .height = 4},
          OwnedWgpuBuffer{.size = 128}};
}

TEST(DomainSet, AllCoversEveryKindInTheVocabularyAndNothingElse) {
  constexpr DomainSet all = DomainSet::all();
  EXPECT_EQ(all.size(), VocabularyTraits<MemoryDomainKind>::entries.size());
  for (const MemoryDomainKind kind : memhal::all<MemoryDomainKind>()) {
    EXPECT_TRUE(all.contains(kind)) << to_string(kind);
    EXPECT_NE(all.bits() & (uint64_t{1} << code(kind)), 0u) << "bit = code for " << to_string(kind);
  }
  EXPECT_EQ(all.bits(), (uint64_t{1} << 11) - 1);
}

TEST(DomainSet, InsertEraseUnionAndIntersectionWork) {
  DomainSet cpu{MemoryDomainKind::System, MemoryDomainKind::SystemView};
  EXPECT_EQ(cpu.size(), 2u);
  EXPECT_FALSE(cpu.contains(MemoryDomainKind::DmaBuf));
  const DomainSet gpu{MemoryDomainKind::Cuda, MemoryDomainKind::VulkanTexture};
  EXPECT_EQ((cpu | gpu).size(), 4u);
  EXPECT_TRUE((cpu & gpu).empty());
  cpu.erase(MemoryDomainKind::SystemView).insert(MemoryDomainKind::DmaBuf);
  EXPECT_EQ(to_string(cpu), "system|dmabuf");
  EXPECT_EQ(to_string(DomainSet{}), "");
}

TEST(DomainSet, FromBitsRejectsBitsThatNameNoKind) {
  EXPECT_EQ(DomainSet::from_bits(0b101)->size(), 2u);
  EXPECT_FALSE(DomainSet::from_bits(uint64_t{1} << 11).has_value());
  EXPECT_FALSE(DomainSet::from_bits(uint64_t{1} << 63).has_value());
}

TEST(MemoryDomain, EveryKindIsConstructibleAndReportsItsKind) {
  const std::vector<MemoryDomain> domains = one_of_each_kind();
  ASSERT_EQ(domains.size(), memhal::all<MemoryDomainKind>().size());
  for (std::size_t i = 0; i < domains.size(); ++i) {
    EXPECT_EQ(domains[i].kind(), memhal::all<MemoryDomainKind>()[i]);
    EXPECT_EQ(domains[i].describe().rfind(to_string(domains[i].kind()), 0), 0u) << domains[i].describe();
  }
  EXPECT_EQ(MemoryDomain().kind(), MemoryDomainKind::System);
}

TEST(MemoryDomain, DescribeNamesWhatAPersonNeedsToRecogniseTheFrame) {
  const std::vector<MemoryDomain> domains = one_of_each_kind();
  EXPECT_EQ(domains[0].describe(), "system (16 bytes, owned)");
  EXPECT_EQ(domains[1].describe(), "system_view (u8 [2, 3, 4], contiguous)");
  EXPECT_EQ(domains[2].describe(), "dmabuf (nv12 1920x1080, 2 planes, modifier 0x0)");
  EXPECT_EQ(domains[5].describe(), "cuda (tensor 640x480 on device 3)");
}

TEST(MemoryDomain, AsSystemSliceGivesBytesOnlyForSystem) {
  const std::vector<MemoryDomain> domains = one_of_each_kind();
  ASSERT_TRUE(domains[0].as_system_slice().has_value());
  EXPECT_EQ(domains[0].as_system_slice()->size(), 16u);
  for (std::size_t i = 1; i < domains.size(); ++i) EXPECT_FALSE(domains[i].as_system_slice()) << domains[i].describe();
}

TEST(MemoryDomain, RequireSystemSliceRefusesEveryOtherKindNamingElementAndDomain) {
  std::vector<MemoryDomain> domains = one_of_each_kind();
  ASSERT_OK_AND_ASSIGN(const SystemSlice* slice, std::as_const(domains[0]).require_system_slice("jpeg-encoder"));
  EXPECT_EQ(slice, domains[0].get_if<SystemSlice>());
  ASSERT_OK_AND_ASSIGN(SystemSlice * writable, domains[0].require_system_slice("jpeg-encoder"));
  EXPECT_EQ(writable, domains[0].get_if<SystemSlice>());
  for (std::size_t i = 1; i < domains.size(); ++i) {
    const auto result = domains[i].require_system_slice("jpeg-encoder");
    ASSERT_FALSE(result.has_value()) << domains[i].describe();
    const Error& error = result.error();
    EXPECT_EQ(error.code(), ErrorCode::UnsupportedDomain);
    EXPECT_NE(error.message().find("jpeg-encoder"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find(std::string(to_string(domains[i].kind())) + " ("), std::string::npos)
        << error.message();
    EXPECT_TRUE(error.message().find("first") != std::string::npos ||
                error.message().find("converter") != std::string::npos)
        << "a hint: " << error.message();
  }
}

TEST(MemoryDomain, RequireSystemBytesBorrowsSystemBytesAndMaterialisesViews) {
  std::vector<MemoryDomain> domains = one_of_each_kind();
  ASSERT_OK_AND_ASSIGN(const SharedBytes bytes, domains[0].require_system_bytes("crc"));
  EXPECT_EQ(bytes.data(), domains[0].as_system_slice()->data()) << "system bytes are borrowed, not copied";
  const SystemView& view = *domains[1].get_if<SystemView>();
  ASSERT_OK_AND_ASSIGN(const SharedBytes packed, domains[1].require_system_bytes("crc"));
  EXPECT_EQ(packed.data(), view.bytes().data()) << "a contiguous view needs no copy";
  const MemoryDomain flipped(*view.flip(2));
  ASSERT_OK_AND_ASSIGN(const SharedBytes gathered, flipped.require_system_bytes("crc"));
  EXPECT_EQ(gathered.size(), 24u);
  EXPECT_FALSE(same_block(gathered, view.bytes()));
  for (std::size_t i = 2; i < domains.size(); ++i) {
    const auto result = domains[i].require_system_bytes("crc");
    ASSERT_FALSE(result.has_value());
    EXPECT_EQ(result.error().code(), ErrorCode::UnsupportedDomain);
    EXPECT_NE(result.error().message().find("crc needs"), std::string::npos) << result.error().message();
    EXPECT_NE(result.error().message().find(to_string(domains[i].kind())), std::string::npos);
  }
}

TEST(MemoryDomain, ARefusedDmaBufSaysWhatArrivedAndWhatToDo) {
  const MemoryDomain dmabuf = one_of_each_kind()[2];
  const auto result = dmabuf.require_system_bytes("jpeg-encoder");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().message(),
            "jpeg-encoder needs system memory or a system view but the frame arrived as dmabuf (nv12 1920x1080, "
            "2 planes, modifier 0x0): map or download it to system memory first, or insert a converter before "
            "jpeg-encoder");
}

TEST(MemoryDomain, ShareCopiesOnlyOwnedSystemBytesNotYetShareable) {
  std::vector<MemoryDomain> domains = one_of_each_kind();
  ASSERT_OK_AND_ASSIGN(const MemoryDomain deep, domains[0].share());
  EXPECT_NE(deep.as_system_slice()->data(), domains[0].as_system_slice()->data());
  domains[0].make_shareable();
  ASSERT_OK_AND_ASSIGN(const MemoryDomain bump, domains[0].share());
  EXPECT_EQ(bump.as_system_slice()->data(), domains[0].as_system_slice()->data());
  ASSERT_OK_AND_ASSIGN(const MemoryDomain view, domains[1].share());
  EXPECT_TRUE(same_block(view.get_if<SystemView>()->bytes(), domains[1].get_if<SystemView>()->bytes()));
}

}  // namespace
}  // namespace memhal
