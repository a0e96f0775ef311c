#include <memhal/error.hpp>
#include <memhal/vocabulary.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

struct GoldenRow {
  uint32_t code;
  std::string wire;
  std::vector<std::string> aliases;
};

// vocabulary name -> rows in file order
std::map<std::string, std::vector<GoldenRow>> read_golden() {
  std::ifstream in(std::string(MEMHAL_TEST_DATA_DIR) + "/core/vocabulary_golden.txt");
  EXPECT_TRUE(in.good()) << "cannot open the golden file";
  std::map<std::string, std::vector<GoldenRow>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string vocabulary;
    GoldenRow row;
    fields >> vocabulary >> row.code >> row.wire;
    for (std::string alias; fields >> alias;) row.aliases.push_back(alias);
    rows[vocabulary].push_back(row);
  }
  return rows;
}

template <class E>
class VocabularyTest : public ::testing::Test {};

using Vocabularies =
    ::testing::Types<MemoryKind, DType, PixelFormat, Compression, CpuAccess, MemoryDomainKind, ErrorCode, Flip,
                     Rotation, ResizeMode, Interpolation, ColorMatrix, ColorRange, ImageBackend>;
TYPED_TEST_SUITE(VocabularyTest, Vocabularies);

TYPED_TEST(VocabularyTest, TableMatchesGoldenFile) {
  using E = TypeParam;
  const auto golden = read_golden();
  const std::string name(VocabularyTraits<E>::name);
  ASSERT_TRUE(golden.count(name)) << name << " is missing from the golden file";
  const auto& rows = golden.at(name);
  const auto& entries = VocabularyTraits<E>::entries;
  ASSERT_EQ(rows.size(), entries.size()) << name;
  ASSERT_EQ(all<E>().size(), entries.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const E value = all<E>()[i];
    EXPECT_EQ(code(value), rows[i].code) << name << " row " << i;
    EXPECT_EQ(to_string(value), rows[i].wire) << name << " row " << i;
    std::vector<std::string> aliases;
    for (auto alias : entries[i].aliases) {
      if (!alias.empty()) aliases.emplace_back(alias);
    }
    EXPECT_EQ(aliases, rows[i].aliases) << name << " " << rows[i].wire;
  }
}

TYPED_TEST(VocabularyTest, CodesAndStringsRoundTrip) {
  using E = TypeParam;
  for (E value : all<E>()) {
    EXPECT_EQ(from_code<E>(code(value)), value);
    EXPECT_EQ(from_string<E>(to_string(value)), value);
  }
}

TYPED_TEST(VocabularyTest, AliasesParseButAreNeverWritten) {
  using E = TypeParam;
  std::set<std::string_view> written;
  for (E value : all<E>()) written.insert(to_string(value));
  for (const auto& entry : VocabularyTraits<E>::entries) {
    for (auto alias : entry.aliases) {
      if (alias.empty()) continue;
      EXPECT_EQ(from_string<E>(alias), entry.value) << alias;
      EXPECT_FALSE(written.count(alias)) << alias << " is written by to_string";
    }
  }
}

TYPED_TEST(VocabularyTest, StringsMatchIgnoringAsciiCase) {
  using E = TypeParam;
  for (E value : all<E>()) {
    std::string upper(to_string(value));
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(from_string<E>(upper), value) << upper;
    // to_string always writes lower case
    for (char c : to_string(value)) EXPECT_FALSE(c >= 'A' && c <= 'Z');
  }
}

TYPED_TEST(VocabularyTest, UnknownCodesAreRejected) {
  using E = TypeParam;
  uint32_t highest = 0;
  for (E value : all<E>()) highest = std::max(highest, code(value));
  EXPECT_EQ(from_code<E>(highest + 1), std::nullopt) << "one past the last code";
  EXPECT_EQ(from_code<E>(highest + 1000), std::nullopt);
  EXPECT_EQ(from_code<E>(UINT32_MAX), std::nullopt);
  EXPECT_EQ(from_code<E>(UINT32_MAX - 1), std::nullopt);
  EXPECT_EQ(from_code<E>(0x80000000u), std::nullopt);
  EXPECT_TRUE(to_string(static_cast<E>(highest + 1)).empty());
}

TYPED_TEST(VocabularyTest, UnknownStringsAreRejected) {
  using E = TypeParam;
  EXPECT_EQ(from_string<E>(""), std::nullopt);
  EXPECT_EQ(from_string<E>(" "), std::nullopt);
  EXPECT_EQ(from_string<E>("unknown"), std::nullopt);
  for (E value : all<E>()) {
    const std::string wire(to_string(value));
    EXPECT_EQ(from_string<E>(wire + " "), std::nullopt) << "trailing space: " << wire;
    EXPECT_EQ(from_string<E>(" " + wire), std::nullopt) << "leading space: " << wire;
    EXPECT_NE(from_string<E>(wire.substr(0, wire.size() - 1)), value) << "prefix of " << wire;
    EXPECT_EQ(from_string<E>(wire + "x"), std::nullopt) << wire << "x";
    EXPECT_EQ(from_string<E>(std::string_view(wire.c_str(), wire.size() + 1)), std::nullopt) << "NUL after " << wire;
  }
  for (const auto& entry : VocabularyTraits<E>::entries) {
    // A code is not a string, unless an alias spells it with the same meaning (Rotation's "0"
    // degrees is its code 0, none).
    const std::string digits = std::to_string(code(entry.value));
    if (std::find(entry.aliases.begin(), entry.aliases.end(), digits) == entry.aliases.end()) {
      EXPECT_EQ(from_string<E>(digits), std::nullopt) << "a code is not a string: " << digits;
    }
  }
}

TEST(Vocabulary, EveryVocabularyOfTheGoldenFileIsTested) {
  // The reverse of TableMatchesGoldenFile: no vocabulary in the file lacks a test type here.
  const auto golden = read_golden();
  EXPECT_EQ(golden.size(), 14u) << "a vocabulary was added to the golden file: add it to Vocabularies";
}

TEST(Vocabulary, PixelFormatCodeZeroIsNeverAFormat) {
  EXPECT_EQ(from_code<PixelFormat>(0), std::nullopt);
  EXPECT_EQ(code(all<PixelFormat>().front()), 1u);
}

TEST(Vocabulary, DocumentedAliases) {
  EXPECT_EQ(from_string<MemoryKind>("dma"), MemoryKind::DmaBuf);
  EXPECT_EQ(from_string<MemoryKind>("DMA"), MemoryKind::DmaBuf);
  EXPECT_EQ(to_string(MemoryKind::DmaBuf), "dmabuf");
  EXPECT_EQ(from_string<PixelFormat>("gray"), PixelFormat::Grey);
  EXPECT_EQ(from_string<PixelFormat>("Y800"), PixelFormat::Grey);
  EXPECT_EQ(from_string<PixelFormat>("8bps"), PixelFormat::PlanarRgb);
  EXPECT_EQ(from_string<PixelFormat>("NV12"), PixelFormat::Nv12);
  EXPECT_EQ(to_string(PixelFormat::Grey), "grey");
}

TEST(Vocabulary, FunctionsAreConstexpr) {
  static_assert(code(MemoryKind::Cuda) == 5);
  static_assert(from_code<DType>(9) == DType::F32);
  static_assert(to_string(CpuAccess::ReadWrite) == "read_write");
  static_assert(all<Compression>().size() == 6);
}

TEST(Vocabulary, SizeOfEveryDType) {
  const std::map<DType, std::size_t> expected{{DType::U8, 1},  {DType::I8, 1},  {DType::U16, 2}, {DType::I16, 2},
                                              {DType::U32, 4}, {DType::I32, 4}, {DType::U64, 8}, {DType::I64, 8},
                                              {DType::F16, 2}, {DType::F32, 4}, {DType::F64, 8}, {DType::BF16, 2}};
  for (DType dtype : all<DType>()) EXPECT_EQ(size_of(dtype), expected.at(dtype)) << to_string(dtype);
  EXPECT_EQ(size_of(static_cast<DType>(12)), 0u);
}

TEST(Vocabulary, ErrorCodeZeroIsSuccessAndNeverAnErrorCode) {
  EXPECT_EQ(from_code<ErrorCode>(0), std::nullopt);
  EXPECT_EQ(code(all<ErrorCode>().front()), 1u);
  EXPECT_TRUE(to_string(static_cast<ErrorCode>(0)).empty());
  EXPECT_EQ(from_string<ErrorCode>("ok"), std::nullopt);
  // A code outside the table (a newer producer's) still prints.
  EXPECT_EQ(Error(static_cast<ErrorCode>(99), "from a newer peer").to_string(), "unknown: from a newer peer");
}

TEST(Vocabulary, OptionSpellings) {
  // One spelling per option on every surface; the CLI's old spellings are the aliases.
  EXPECT_EQ(from_string<Flip>("h"), Flip::Horizontal);
  EXPECT_EQ(from_string<Flip>("V"), Flip::Vertical);
  EXPECT_EQ(from_string<Flip>("horizontal"), Flip::Horizontal);
  EXPECT_EQ(to_string(Flip::Horizontal), "horizontal");
  EXPECT_EQ(from_string<Flip>("hv"), std::nullopt);
  EXPECT_EQ(from_string<Rotation>("90"), Rotation::Cw90);
  EXPECT_EQ(from_string<Rotation>("270"), Rotation::Cw270);
  EXPECT_EQ(from_string<Rotation>("CW180"), Rotation::Cw180);
  EXPECT_EQ(from_string<Rotation>("45"), std::nullopt);
  EXPECT_EQ(from_string<Rotation>("-90"), std::nullopt);
  EXPECT_EQ(to_string(Rotation::Cw90), "cw90");
  EXPECT_EQ(from_string<ColorRange>("pc"), ColorRange::Full);
  EXPECT_EQ(from_string<ColorRange>("tv"), ColorRange::Limited);
  EXPECT_EQ(from_string<ColorMatrix>("bt709"), ColorMatrix::Bt709);
  EXPECT_EQ(from_string<ImageBackend>("GL"), ImageBackend::Gl);
  EXPECT_EQ(from_string<ImageBackend>("vulkan"), std::nullopt);
  EXPECT_EQ(to_string(ErrorCode::NotHostAddressable), "not_host_addressable");
  EXPECT_EQ(from_string<ErrorCode>("INVALID_ARGUMENT"), ErrorCode::InvalidArgument);
}

}  // namespace
}  // namespace memhal
