#include <memhal/error.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0) return unexpected(Error(ErrorCode::InvalidArgument, "not positive", 0));
  return value;
}

Result<int> doubled(int value) {
  MEMHAL_ASSIGN_OR_RETURN(int parsed, parse_positive(value));
  return parsed * 2;
}

Result<void> checked(int value) {
  MEMHAL_TRY(parse_positive(value));
  return {};
}

TEST(Error, CarriesCodeErrnoAndMessage) {
  Error error(ErrorCode::Io, "read of /dev/x failed", 5);
  EXPECT_EQ(error.code(), ErrorCode::Io);
  EXPECT_EQ(error.sys_errno(), 5);
  EXPECT_EQ(error.message(), "read of /dev/x failed");
  EXPECT_EQ(error.to_string(), "io: read of /dev/x failed");
}

TEST(Error, CodesAreTheDesignedIntegers) {
  EXPECT_EQ(static_cast<uint32_t>(ErrorCode::InvalidArgument), 1u);
  EXPECT_EQ(static_cast<uint32_t>(ErrorCode::Busy), 10u);
  EXPECT_EQ(static_cast<uint32_t>(ErrorCode::Internal), 13u);
}

TEST(Error, AssignOrReturnPropagatesErrorsAndValues) {
  EXPECT_EQ(*doubled(4), 8);
  EXPECT_ERROR(ErrorCode::InvalidArgument, doubled(-1));
  EXPECT_EQ(doubled(0).error().message(), "not positive");
}

TEST(Error, TryPropagatesErrors) {
  EXPECT_OK(checked(1));
  EXPECT_ERROR(ErrorCode::InvalidArgument, checked(0));
}

}  // namespace
}  // namespace memhal
