// The DmaBuf backend on a real kernel's DMA heaps and udmabuf. This host has neither, so these
// tests skip here with the reason; CTest label `dmaheap` runs the same tests statically linked
// inside a VM whose kernel has both (run-in-dmaheap-vm), where MEMHAL_TEST_REQUIRE_DMABUF=1
// turns a skip into a failure.
#include <fcntl.h>
#include <grp.h>
#include <linux/dma-heap.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memhal/dma_buf_source.hpp>
#include <memhal/memory.hpp>
#include <memhal/tensor.hpp>
#include <memhal/tensor_pool.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "storage/dmabuf_sync.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

#define SKIP_WITHOUT_DMABUF()                                                                           \
  do {                                                                                                  \
    if (!is_available(MemoryKind::DmaBuf)) {                                                            \
      if (std::getenv("MEMHAL_TEST_REQUIRE_DMABUF")) FAIL() << availability(MemoryKind::DmaBuf).reason; \
      GTEST_SKIP() << "no DMA-BUF source here: " << availability(MemoryKind::DmaBuf).reason;            \
    }                                                                                                   \
  } while (false)

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string exp_name(int fd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("exp_name:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 9));
  }
  return {};
}

struct SyncSnapshot {
  uint64_t starts, ends, reads, writes;
  static SyncSnapshot now() {
    auto& c = detail::dmabuf_sync_counters();
    return {c.starts.load(), c.ends.load(), c.reads.load(), c.writes.load()};
  }
  SyncSnapshot operator-(const SyncSnapshot& o) const {
    return {starts - o.starts, ends - o.ends, reads - o.reads, writes - o.writes};
  }
};

TEST(DmaBuf, SourcesAreListedWithTheirState) {
  const auto sources = dma_buf_sources();
  ASSERT_FALSE(sources.empty());
  EXPECT_EQ(sources.back().name, "udmabuf");
  for (const auto& source : sources) EXPECT_FALSE(source.state.empty()) << source.path;
  // The probe's reason names the node that served it, or every node that could not.
  EXPECT_NE(availability(MemoryKind::DmaBuf).reason.find("/dev/"), std::string::npos);
}

TEST(DmaBuf, AvailabilityOnAHostWithoutSourcesSaysWhy) {
  if (is_available(MemoryKind::DmaBuf)) GTEST_SKIP() << "this machine has a DMA-BUF source";
  const std::string reason = availability(MemoryKind::DmaBuf).reason;
  EXPECT_NE(reason.find("/dev/dma_heap"), std::string::npos) << reason;
  EXPECT_NE(reason.find("/dev/udmabuf"), std::string::npos) << reason;
  EXPECT_ERROR(ErrorCode::Unavailable, Tensor::create({16}, DType::U8, MemoryKind::DmaBuf));
}

TEST(DmaBuf, AllocationIsAZeroedDmaBufFromTheHeap) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({3, 1000}, DType::U8, MemoryKind::DmaBuf));
  EXPECT_EQ(tensor.memory(), MemoryKind::DmaBuf);
  ASSERT_GE(tensor.fd(), 0);
  EXPECT_FALSE(exp_name(tensor.fd()).empty());
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(auto bytes, map.span<const uint8_t>());
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), 3000);
}

TEST(DmaBuf, AutoSelectionPrefersDmaBufForTensorsAndImages) {
  SKIP_WITHOUT_DMABUF();
  ScopedEnv env("MEMHAL_FORCE_MEM", nullptr);
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({16}, DType::F32));
  EXPECT_EQ(tensor.memory(), MemoryKind::DmaBuf);
  EXPECT_TRUE(tensor.allocation_notes().empty());
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(64, 48, PixelFormat::Nv12));
  EXPECT_EQ(image.memory(), MemoryKind::DmaBuf);
  ScopedEnv force("MEMHAL_FORCE_MEM", "1");
  ASSERT_OK_AND_ASSIGN(Tensor forced, Tensor::image(64, 48, PixelFormat::Nv12));
  EXPECT_EQ(forced.memory(), MemoryKind::Mem);
}

TEST(DmaBuf, MapsAreBracketedBySyncIoctlsInTheDirectionOfAccess) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4096}, DType::U8, MemoryKind::DmaBuf));
  auto before = SyncSnapshot::now();
  { ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Write)); }
  auto delta = SyncSnapshot::now() - before;
  EXPECT_EQ(delta.starts, 1u);
  EXPECT_EQ(delta.ends, 1u);
  EXPECT_EQ(delta.writes, 2u);
  EXPECT_EQ(delta.reads, 0u);

  before = SyncSnapshot::now();
  { ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read)); }
  delta = SyncSnapshot::now() - before;
  EXPECT_EQ(delta.starts, 1u);
  EXPECT_EQ(delta.ends, 1u);
  EXPECT_EQ(delta.reads, 2u);
  EXPECT_EQ(delta.writes, 0u);

  before = SyncSnapshot::now();
  { ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::ReadWrite)); }
  delta = SyncSnapshot::now() - before;
  EXPECT_EQ(delta.starts, 1u);
  EXPECT_EQ(delta.reads, 2u);
  EXPECT_EQ(delta.writes, 2u);
}

TEST(DmaBuf, NestedReadMapsShareOneBracketAndAWriteMapIsExclusive) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4096}, DType::U8, MemoryKind::DmaBuf));
  ASSERT_OK_AND_ASSIGN(Tensor view, tensor.slice(0, 100, 200));
  const auto before = SyncSnapshot::now();
  {
    ASSERT_OK_AND_ASSIGN(TensorMap outer, tensor.map(CpuAccess::Read));
    ASSERT_OK_AND_ASSIGN(TensorMap inner, view.map(CpuAccess::Read));
    EXPECT_EQ(inner.data(), outer.data() + 100);
    EXPECT_EQ((SyncSnapshot::now() - before).starts, 1u);
    EXPECT_EQ((SyncSnapshot::now() - before).ends, 0u);
    EXPECT_ERROR(ErrorCode::Busy, tensor.map(CpuAccess::Write));
  }
  EXPECT_EQ((SyncSnapshot::now() - before).ends, 1u);
  ASSERT_OK_AND_ASSIGN(TensorMap writer, tensor.map(CpuAccess::Write));
  EXPECT_ERROR(ErrorCode::Busy, view.map(CpuAccess::Read));
  EXPECT_ERROR(ErrorCode::Busy, tensor.map(CpuAccess::Write));
}

TEST(DmaBuf, ReadMapsFromManyThreadsJoinTheOpenBracket) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4096}, DType::U8, MemoryKind::DmaBuf));
  std::atomic<int> failures{0};
  {
    ASSERT_OK_AND_ASSIGN(TensorMap held, tensor.map(CpuAccess::Read));
    const auto before = SyncSnapshot::now();
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) {
      readers.emplace_back([&] {
        for (int i = 0; i < 100; ++i) failures += !tensor.map(CpuAccess::Read).has_value();
      });
    }
    for (auto& reader : readers) reader.join();
    EXPECT_EQ((SyncSnapshot::now() - before).starts, 0u);
    EXPECT_EQ((SyncSnapshot::now() - before).ends, 0u);
  }
  EXPECT_EQ(failures.load(), 0);
  const auto after = SyncSnapshot::now();
  EXPECT_EQ(after.starts, after.ends) << "every bracket opened was closed";
}

TEST(DmaBuf, BytesWrittenThroughOneMappingAreReadBackThroughAFreshImport) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::image(64, 32, PixelFormat::Rgba, MemoryKind::DmaBuf));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Write));
    for (int64_t y = 0; y < 32; ++y) std::memset(map.data() + y * tensor.strides()[0], int(y), 64 * 4);
  }
  ASSERT_OK_AND_ASSIGN(UniqueFd fd, tensor.clone_fd());
  ASSERT_OK_AND_ASSIGN(Tensor imported, Tensor::from_fd(fd.get(), tensor.layout()));
  EXPECT_EQ(imported.memory(), MemoryKind::DmaBuf);
  EXPECT_FALSE(same_storage(imported, tensor));
  ASSERT_OK_AND_ASSIGN(TensorMap map, imported.map(CpuAccess::Read));
  EXPECT_NE(map.data(), tensor.map(CpuAccess::Read)->data()) << "a fresh import has a mapping of its own";
  for (int64_t y = 0; y < 32; ++y) EXPECT_EQ(map.data()[y * imported.strides()[0] + 255], std::byte(y)) << y;
}

TEST(DmaBuf, AReadOnlyImportRefusesWriteMaps) {
  SKIP_WITHOUT_DMABUF();
  int heap = -1;
  for (const auto& source : dma_buf_sources()) {
    if (source.usable && source.name != "udmabuf" && heap < 0) heap = ::open(source.path.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (heap < 0) GTEST_SKIP() << "no DMA heap (udmabuf only)";
  UniqueFd heap_fd(heap);
  dma_heap_allocation_data request{};
  request.len = 4096;
  request.fd_flags = O_RDONLY | O_CLOEXEC;
  ASSERT_EQ(::ioctl(heap_fd.get(), DMA_HEAP_IOCTL_ALLOC, &request), 0) << std::strerror(errno);
  UniqueFd read_only(static_cast<int>(request.fd));
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::from_fd(read_only.get(), layout));
  EXPECT_OK(tensor.map(CpuAccess::Read));
  EXPECT_ERROR(ErrorCode::PermissionDenied, tensor.map(CpuAccess::Write));
}

TEST(DmaBuf, TheMmuRefusesWritesThroughAReadMap) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4096}, DType::U8, MemoryKind::DmaBuf));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap read, tensor.map(CpuAccess::Read));
    EXPECT_TRUE(testing::write_faults(read.data())) << "a read map of a DMA-BUF must lie in a PROT_READ mapping";
    EXPECT_ERROR(ErrorCode::PermissionDenied, read.mutable_data());
  }
  {
    ASSERT_OK_AND_ASSIGN(TensorMap write, tensor.map(CpuAccess::ReadWrite));
    EXPECT_FALSE(testing::write_faults(write.data()));
    ASSERT_OK_AND_ASSIGN(std::byte * bytes, write.mutable_data());
    bytes[7] = std::byte{9};
  }
  ASSERT_OK_AND_ASSIGN(TensorMap read, tensor.map(CpuAccess::Read));
  EXPECT_EQ(read.const_data()[7], std::byte{9});
}

TEST(DmaBuf, AnImportMapsOnlyWhatTheLayoutReaches) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor big, Tensor::create({1 << 20}, DType::U8, MemoryKind::DmaBuf));
  ASSERT_OK_AND_ASSIGN(Layout small, Layout::contiguous({64}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor imported, Tensor::from_fd(big.fd(), small));
  ASSERT_OK_AND_ASSIGN(TensorMap map, imported.map(CpuAccess::Read));
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto address = reinterpret_cast<uintptr_t>(map.const_data());
  bool found = false;
  while (std::getline(maps, line)) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) != 2 || address < begin || address >= end) continue;
    found = true;
    EXPECT_EQ(end - begin, static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE))) << line;
  }
  EXPECT_TRUE(found);
}

TEST(DmaBuf, ImportsCheckTheSizeAndTheKind) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4096}, DType::U8, MemoryKind::DmaBuf));
  ASSERT_OK_AND_ASSIGN(Layout too_big, Layout::image(1920, 1080, PixelFormat::Nv12, DType::U8, 1));
  auto imported = Tensor::from_fd(tensor.fd(), too_big);
  EXPECT_ERROR(ErrorCode::OutOfRange, imported);
  if (!imported) {
    EXPECT_NE(imported.error().message().find("needs 3110400 bytes, the buffer has 4096"), std::string::npos);
  }
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_fd(tensor.fd(), layout, MemoryKind::Shm));
  EXPECT_OK(Tensor::from_fd(tensor.fd(), layout, MemoryKind::DmaBuf));
}

TEST(DmaBuf, ASizeBeyondTheMachineIsRefusedBeforeTheHeapCallsTheOomKiller) {
  SKIP_WITHOUT_DMABUF();
  auto tensor = Tensor::create({int64_t{1} << 40}, DType::U8, MemoryKind::DmaBuf);
  EXPECT_ERROR(ErrorCode::OutOfMemory, tensor);
  if (!tensor) {
    EXPECT_NE(tensor.error().message().find("1099511627776 bytes"), std::string::npos) << tensor.error().message();
  }
}

TEST(DmaBuf, ASourceThatRefusesTheSizeSaysWhichAndWhy) {
  SKIP_WITHOUT_DMABUF();
  if (!dma_buf_sources().back().usable) GTEST_SKIP() << "no udmabuf here";
  // udmabuf refuses buffers above its size_limit_mb module parameter (64 MiB by default).
  ScopedEnv env("MEMHAL_DMA_HEAP", "udmabuf");
  auto tensor = Tensor::create({128 << 20}, DType::U8, MemoryKind::DmaBuf);
  ASSERT_FALSE(tensor.has_value());
  EXPECT_NE(tensor.error().message().find("udmabuf create of 134217728 bytes"), std::string::npos)
      << tensor.error().message();
  EXPECT_EQ(tensor.error().sys_errno(), EINVAL) << tensor.error().message();
}

TEST(DmaBuf, TheHeapCanBeChosenByName) {
  SKIP_WITHOUT_DMABUF();
  {
    ScopedEnv env("MEMHAL_DMA_HEAP", "udmabuf");
    auto tensor = Tensor::create({4096}, DType::U8, MemoryKind::DmaBuf);
    if (dma_buf_sources().back().usable) {
      ASSERT_OK(tensor);
      EXPECT_EQ(exp_name(tensor->fd()), "udmabuf");
      ASSERT_OK_AND_ASSIGN(TensorMap map, tensor->map(CpuAccess::ReadWrite));
      map.data()[4095] = std::byte{9};
    } else {
      EXPECT_ERROR(ErrorCode::Unavailable, tensor);
    }
  }
  ScopedEnv env("MEMHAL_DMA_HEAP", "no-such-heap");
  auto tensor = Tensor::create({4096}, DType::U8, MemoryKind::DmaBuf);
  EXPECT_ERROR(ErrorCode::Unavailable, tensor);
  if (!tensor) {
    EXPECT_NE(tensor.error().message().find("no-such-heap"), std::string::npos);
  }
}

TEST(DmaBuf, PerPlaneImagesGetOneDmaBufEach) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(64, 32, PixelFormat::I420, MemoryKind::DmaBuf, DType::U8,
                                                   kDefaultRowAlign, PlaneBuffers::PerPlane));
  ASSERT_EQ(image.layout().buffer_count(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(exp_name(image.fd(i)).empty());
  ASSERT_OK_AND_ASSIGN(Tensor copy, Tensor::from_planes({image.fd(0), image.fd(1), image.fd(2)}, image.layout()));
  EXPECT_EQ(copy.memory(), MemoryKind::DmaBuf);
}

TEST(DmaBuf, PooledDmaBufsAreRecycledWithTheirSyncBrackets) {
  SKIP_WITHOUT_DMABUF();
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::image(64, 32, PixelFormat::Rgba));
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(layout, 2, MemoryKind::DmaBuf));
  {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, pool.try_acquire());
    EXPECT_EQ(tensor.memory(), MemoryKind::DmaBuf);
    const auto before = SyncSnapshot::now();
    { ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Write)); }
    EXPECT_EQ((SyncSnapshot::now() - before).starts, 1u);
    EXPECT_EQ((SyncSnapshot::now() - before).ends, 1u);
  }
  EXPECT_EQ(pool.available(), 2u);
}

TEST(DmaBufDeathTest, AnUnprivilegedUserIsToldAboutTheVideoAndRenderGroups) {
  struct stat node {};
  if (::stat("/dev/dma_heap", &node) != 0 && ::stat("/dev/udmabuf", &node) != 0) {
    GTEST_SKIP() << "no DMA-BUF device nodes here";
  }
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to drop to an unprivileged user";
  // The probe runs once per process: a fresh one (threadsafe style re-executes the binary)
  // drops to nobody before it, so the root-only nodes answer EACCES.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) std::_Exit(2);
        const std::string reason = availability(MemoryKind::DmaBuf).reason;
        std::fprintf(stderr, "%s\n", reason.c_str());
        const bool explains = reason.find("Permission denied") != std::string::npos &&
                              reason.find("'video'") != std::string::npos && reason.find("udev") != std::string::npos;
        std::_Exit(!is_available(MemoryKind::DmaBuf) && explains ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "Permission denied");
}

}  // namespace
}  // namespace memhal
