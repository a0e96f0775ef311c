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

TEST(Error, AndThenChainsValuesAndStopsAtTheFirstError) {
  auto twice = [](int value) { return doubled(value); };
  Result<int> chained = parse_positive(3).and_then(twice).and_then(twice);
  EXPECT_EQ(*chained, 12);
  int calls = 0;
  Result<int> stopped = parse_positive(-3).and_then([&](int value) {
    ++calls;
    return doubled(value);
  });
  EXPECT_ERROR(ErrorCode::InvalidArgument, stopped);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(checked(1).and_then([] { return parse_positive(5); }).value(), 5);
  EXPECT_ERROR(ErrorCode::InvalidArgument, checked(0).and_then([] { return parse_positive(5); }));
}

TEST(Error, ResultIsTheExpectedItWraps) {
  // Code written against tl::expected (a map(), a converting copy) still yields a Result.
  Result<long> widened = parse_positive(7);
  EXPECT_EQ(*widened, 7);
  Result<int> from_base = ResultBase<int>(9);
  EXPECT_EQ(*from_base, 9);
  Result<int> from_error = unexpected(Error(ErrorCode::Busy, "all slots in use"));
  EXPECT_ERROR(ErrorCode::Busy, from_error);
}

}  // namespace
}  // namespace memhal
