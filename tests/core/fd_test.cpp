#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memhal/shared_fd.hpp>
#include <memhal/unique_fd.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) >= 0;
}

UniqueFd make_pipe_end() {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[1]);
  return UniqueFd(fds[0]);
}

TEST(UniqueFd, ClosesOnDestruction) {
  int raw;
  {
    UniqueFd fd = make_pipe_end();
    raw = fd.get();
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(UniqueFd, MoveLeavesSourceInvalid) {
  UniqueFd a = make_pipe_end();
  const int raw = a.get();
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.get(), raw);
  UniqueFd c;
  c = std::move(b);
  EXPECT_FALSE(b.valid());
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(is_open(raw));
}

TEST(UniqueFd, ReleaseGivesUpOwnership) {
  UniqueFd fd = make_pipe_end();
  const int raw = fd.release();
  EXPECT_FALSE(fd.valid());
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

TEST(UniqueFd, ResetClosesTheOldFd) {
  UniqueFd fd = make_pipe_end();
  const int old = fd.get();
  UniqueFd other = make_pipe_end();
  const int replacement = other.release();
  fd.reset(replacement);
  EXPECT_FALSE(is_open(old));
  EXPECT_EQ(fd.get(), replacement);
}

TEST(SharedFd, LastCopyCloses) {
  UniqueFd owned = make_pipe_end();
  const int raw = owned.get();
  {
    SharedFd a(std::move(owned));
    EXPECT_EQ(a.use_count(), 1);
    {
      SharedFd b = a;
      EXPECT_EQ(b.get(), raw);
      EXPECT_EQ(a.use_count(), 2);
    }
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(SharedFd, DuplicateLeavesTheCallersFdOpen) {
  UniqueFd mine = make_pipe_end();
  {
    ASSERT_OK_AND_ASSIGN(SharedFd copy, SharedFd::duplicate(mine.get()));
    EXPECT_NE(copy.get(), mine.get());
    EXPECT_TRUE(::fcntl(copy.get(), F_GETFD) & FD_CLOEXEC);
    struct stat a {
    }, b{};
    ::fstat(copy.get(), &a);
    ::fstat(mine.get(), &b);
    EXPECT_EQ(a.st_ino, b.st_ino);
  }
  EXPECT_TRUE(is_open(mine.get()));
}

TEST(SharedFd, DuplicateOfABadFdFails) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, SharedFd::duplicate(-1));
  UniqueFd closed = make_pipe_end();
  const int raw = closed.get();
  closed.reset();
  auto result = SharedFd::duplicate(raw);
  EXPECT_ERROR(ErrorCode::Io, result);
  EXPECT_EQ(result.error().sys_errno(), EBADF);
}

TEST(SharedFd, DupGivesTheCallerANewFd) {
  SharedFd shared(make_pipe_end());
  ASSERT_OK_AND_ASSIGN(UniqueFd mine, shared.dup());
  EXPECT_NE(mine.get(), shared.get());
  EXPECT_ERROR(ErrorCode::InvalidArgument, SharedFd().dup());
}

}  // namespace
}  // namespace memhal
