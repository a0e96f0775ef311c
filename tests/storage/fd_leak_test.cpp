// No fd leaks: 10^4 allocate / import / map / free cycles of each backend, and every refused
// import, leave /proc/self/fd as they found it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <memhal/memory.hpp>
#include <memhal/tensor.hpp>
#include <memhal/tensor_pool.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

// 10^4 by default; the DMA-heap VM (an emulated CPU, 50-80x slower) asks for fewer.
int cycles() {
  const char* text = std::getenv("MEMHAL_TEST_FD_CYCLES");
  return text ? std::atoi(text) : 10000;
}

int open_fd_count() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count - 1;  // the directory's own fd
}

// One allocate + clone_fd + import + map (write, then read through the import) + free.
Result<void> cycle(MemoryKind kind, int i) {
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, Tensor::create({64, 64}, DType::U8, kind));
  {
    MEMHAL_ASSIGN_OR_RETURN(TensorMap map, tensor.map(CpuAccess::Write));
    map.data()[i % 4096] = std::byte(i & 0xff);
  }
  if (kind == MemoryKind::Mem) return {};
  MEMHAL_ASSIGN_OR_RETURN(UniqueFd fd, tensor.clone_fd());
  MEMHAL_ASSIGN_OR_RETURN(Tensor imported, Tensor::from_fd(fd.get(), tensor.layout(), kind));
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, imported.map(CpuAccess::Read));
  if (map.data()[i % 4096] != std::byte(i & 0xff)) return unexpected(Error(ErrorCode::Internal, "import lost a byte"));
  return {};
}

void expect_no_leak(MemoryKind kind) {
  if (!is_available(kind)) {
    if (kind == MemoryKind::DmaBuf && std::getenv("MEMHAL_TEST_REQUIRE_DMABUF")) FAIL() << availability(kind).reason;
    GTEST_SKIP() << to_string(kind) << " is not available here: " << availability(kind).reason;
  }
  ASSERT_OK(cycle(kind, 0));  // opens what the backend keeps for the whole process (heap fds)
  const int before = open_fd_count();
  ASSERT_GT(before, 0);
  for (int i = 0, n = cycles(); i < n; ++i) {
    auto done = cycle(kind, i);
    ASSERT_TRUE(done.has_value()) << "cycle " << i << ": " << done.error().to_string();
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(FdLeak, MemCyclesOpenNoFds) {
  expect_no_leak(MemoryKind::Mem);
}

TEST(FdLeak, ShmCyclesCloseEveryFd) {
  expect_no_leak(MemoryKind::Shm);
}

TEST(FdLeak, DmaBufCyclesCloseEveryFd) {
  expect_no_leak(MemoryKind::DmaBuf);
}

TEST(FdLeak, RefusedImportsCloseEveryFd) {
  UniqueFd memfd(::memfd_create("leak-test", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(memfd.get(), 4096), 0);
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  ASSERT_OK_AND_ASSIGN(Layout too_big, Layout::contiguous({8192}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Layout fits, Layout::contiguous({4096}, DType::U8));
  const int before = open_fd_count();
  for (int i = 0, n = cycles() / 10; i < n; ++i) {
    EXPECT_ERROR(ErrorCode::OutOfRange, Tensor::from_fd(memfd.get(), too_big));
    EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_fd(read_end.get(), fits));
    EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_fd(memfd.get(), fits, MemoryKind::DmaBuf));
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(FdLeak, PoolsCloseEveryFdWhenTheLastTensorDrops) {
  const MemoryKind kind = is_available(MemoryKind::DmaBuf) ? MemoryKind::DmaBuf : MemoryKind::Shm;
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  const int before = open_fd_count();
  {
    std::optional<Tensor> out;
    {
      ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(layout, 4, kind));
      EXPECT_EQ(open_fd_count(), before + 4);
      ASSERT_OK_AND_ASSIGN(out, pool.try_acquire());
    }
    EXPECT_EQ(open_fd_count(), before + 1) << "the tensor still out keeps its buffer";
  }
  EXPECT_EQ(open_fd_count(), before);
}

}  // namespace
}  // namespace memhal
