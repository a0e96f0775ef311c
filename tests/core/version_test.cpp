// The version: the loaded library's, the headers' macros, and the project's, all one.
#include <gtest/gtest.h>
#include <memhal/memhal.h>
#include <memhal/version.hpp>

#include <cstring>
#include <string>

namespace memhal {
namespace {

TEST(Version, TheLibrarySaysTheVersionItsHeadersDefine) {
  ASSERT_NE(version(), nullptr);
  EXPECT_STREQ(version(), MEMHAL_VERSION_STRING);
  EXPECT_EQ(std::string(version()), std::to_string(MEMHAL_VERSION_MAJOR) + "." + std::to_string(MEMHAL_VERSION_MINOR) +
                                        "." + std::to_string(MEMHAL_VERSION_PATCH));
}

TEST(Version, TheCApiAnswersTheSameStorage) {
  EXPECT_EQ(memhal_version(), version());
}

}  // namespace
}  // namespace memhal
