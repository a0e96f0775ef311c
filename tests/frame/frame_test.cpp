#include <memhal/frame.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

struct Detection {
  float score;
  int label;
};

TEST(Metadata, StoresTypedEntriesAndAnswersOnlyForTheStoredType) {
  Metadata metadata;
  metadata.set("exposure_us", int64_t{8000});
  metadata.set("detection", Detection{0.9f, 3});
  metadata.set("sensor", std::string("imx477"));
  ASSERT_NE(metadata.get<int64_t>("exposure_us"), nullptr);
  EXPECT_EQ(*metadata.get<int64_t>("exposure_us"), 8000);
  EXPECT_EQ(metadata.get<int>("exposure_us"), nullptr);
  EXPECT_EQ(metadata.get<Detection>("detection")->label, 3);
  EXPECT_EQ(*metadata.get<std::string>("sensor"), "imx477");
  EXPECT_EQ(metadata.get<int64_t>("missing"), nullptr);
  EXPECT_EQ(metadata.keys(), (std::vector<std::string>{"detection", "exposure_us", "sensor"}));
  metadata.set("exposure_us", 1.5);
  EXPECT_EQ(metadata.get<int64_t>("exposure_us"), nullptr);
  EXPECT_EQ(*metadata.get<double>("exposure_us"), 1.5);
  EXPECT_TRUE(metadata.erase("sensor"));
  EXPECT_FALSE(metadata.erase("sensor"));
  EXPECT_EQ(metadata.size(), 2u);
}

TEST(Metadata, CopiesShareTheTableUntilOneIsModified) {
  Metadata original;
  original.set("a", 1);
  const Metadata copy = original;
  EXPECT_TRUE(same_table(original, copy));
  const int* before = copy.get<int>("a");
  Metadata branch = copy;
  branch.set("b", 2);
  EXPECT_FALSE(same_table(branch, copy));
  EXPECT_TRUE(same_table(original, copy)) << "the untouched copies still share";
  EXPECT_FALSE(copy.contains("b"));
  EXPECT_EQ(branch.get<int>("a"), before) << "entries are shared even after the table is copied";
  Metadata sole;
  sole.set("x", 1);
  const int* x = sole.get<int>("x");
  sole.set("y", 2);
  EXPECT_EQ(sole.get<int>("x"), x);
}

TEST(Frame, ShareCarriesTimingSequenceAndSharedMetadata) {
  Frame frame{SystemSlice::adopt(std::vector<std::byte>(100)), FrameTiming{1000, 900, 33}, 7, {}};
  frame.metadata.set("camera", std::string("front"));
  frame.make_shareable();
  ASSERT_OK_AND_ASSIGN(const Frame share, frame.share());
  EXPECT_EQ(share.timing, (FrameTiming{1000, 900, 33}));
  EXPECT_EQ(share.sequence, 7u);
  EXPECT_TRUE(same_table(share.metadata, frame.metadata));
  EXPECT_EQ(share.payload.as_system_slice()->data(), frame.payload.as_system_slice()->data());
}

TEST(Frame, ShareBeforeMakeShareableDeepCopiesOwnedBytes) {
  const Frame frame{SystemSlice::adopt(std::vector<std::byte>(100)), {}, 0, {}};
  ASSERT_OK_AND_ASSIGN(const Frame share, frame.share());
  EXPECT_NE(share.payload.as_system_slice()->data(), frame.payload.as_system_slice()->data());
}

}  // namespace
}  // namespace memhal
