// What a receiver maps: only the extent the layout reaches, however large the fd behind it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memhal/channel.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace memhal::ipc {
namespace {

constexpr off_t kOneTebibyte = off_t{1} << 40;

// A sparse memfd of `size` bytes, sealed against shrinking and growing.
UniqueFd sparse_memfd(off_t size) {
  UniqueFd fd(::memfd_create("sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.valid()) << std::strerror(errno);
  EXPECT_EQ(::ftruncate(fd.get(), size), 0) << std::strerror(errno);
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0) << std::strerror(errno);
  return fd;
}

// Bytes of the mapping (/proc/self/maps) that holds `address`; 0 when none does.
std::size_t mapping_size_at(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto where = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2 && where >= begin && where < end) return end - begin;
  }
  return 0;
}

TEST(ChannelImport, AReceiverMapsOnlyWhatTheLayoutReachesOfAHugeSparseBuffer) {
  ASSERT_OK_AND_ASSIGN(auto ends, Channel::pair());
  ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::contiguous({64}, DType::U8));
  // Every received 64-byte tensor stays alive: had each mapped its whole 1 TiB buffer, the
  // address space (128 TiB) would run out after about 127 of them.
  std::vector<Tensor> received;
  for (int i = 0; i < 300; ++i) {
    UniqueFd fd = sparse_memfd(kOneTebibyte);
    ASSERT_EQ(::pwrite(fd.get(), &i, sizeof i, 0), static_cast<ssize_t>(sizeof i));
    ASSERT_OK_AND_ASSIGN(const Tensor sent, Tensor::from_fd(fd.get(), layout, MemoryKind::Shm));
    ASSERT_OK(ends.first.send(sent));
    ASSERT_OK_AND_ASSIGN(Tensor tensor, ends.second.receive(std::chrono::milliseconds(5000)));
    received.push_back(std::move(tensor));
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  for (int i = 0; i < 300; ++i) {
    ASSERT_OK_AND_ASSIGN(const TensorMap map, received[i].map(CpuAccess::Read));
    int value = -1;
    std::memcpy(&value, map.const_data(), sizeof value);
    EXPECT_EQ(value, i);
    EXPECT_EQ(mapping_size_at(map.const_data()), static_cast<std::size_t>(page)) << "tensor " << i;
  }
}

TEST(ChannelImport, AnFdImportMapsOnlyWhatTheLayoutReachesAndStillChecksTheSize) {
  UniqueFd fd = sparse_memfd(kOneTebibyte);
  ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::contiguous({3, 4096}, DType::U8));
  ASSERT_OK_AND_ASSIGN(const Tensor tensor, Tensor::from_fd(fd.get(), layout));
  ASSERT_OK_AND_ASSIGN(const TensorMap map, tensor.map(CpuAccess::ReadWrite));
  EXPECT_EQ(mapping_size_at(map.data()), 3u * 4096u);
  // The last byte the layout reaches is mapped.
  map.data()[3 * 4096 - 1] = std::byte{5};
  UniqueFd small = sparse_memfd(4096);
  EXPECT_ERROR(ErrorCode::OutOfRange, Tensor::from_fd(small.get(), layout));
}

TEST(ChannelImport, OneFdForTwoPlanesIsMappedAsFarAsTheFurthestPlane) {
  ASSERT_OK_AND_ASSIGN(const Tensor source, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::Shm));
  const auto planes = source.layout().planes();
  const std::vector<PlaneLayout> in_two_buffers{{0, planes[0].offset, planes[0].pitch},
                                                {1, planes[1].offset, planes[1].pitch}};
  ASSERT_OK_AND_ASSIGN(const Layout split, Layout::image_planes(64, 32, PixelFormat::Nv12, in_two_buffers));
  const int fds[] = {source.fd(), source.fd()};
  ASSERT_OK_AND_ASSIGN(const Tensor imported, Tensor::from_planes(fds, split));
  ASSERT_OK_AND_ASSIGN(const TensorMap write, source.map(CpuAccess::Write));
  const int64_t last = planes[1].pitch * 15 + 63;
  write.plane(1)[last] = std::byte{200};
  ASSERT_OK_AND_ASSIGN(const TensorMap map, imported.map(CpuAccess::Read));
  EXPECT_EQ(map.const_plane(1)[last], std::byte{200});
}

}  // namespace
}  // namespace memhal::ipc
