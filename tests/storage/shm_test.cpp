// The Shm backend (sealed memfds) and the import of fds made elsewhere, on real memfds,
// pipes, sockets and files.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <cstring>
#include <memhal/memory.hpp>
#include <memhal/tensor.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

UniqueFd make_memfd(std::size_t size, unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING) {
  UniqueFd fd(::memfd_create("shm-test", flags));
  EXPECT_TRUE(fd.valid()) << std::strerror(errno);
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0) << std::strerror(errno);
  return fd;
}

TEST(Shm, IsAvailableWithAReasonThatNamesMemfd) {
  ASSERT_TRUE(is_available(MemoryKind::Shm)) << availability(MemoryKind::Shm).reason;
  EXPECT_NE(availability(MemoryKind::Shm).reason.find("memfd"), std::string::npos);
}

TEST(Shm, AllocationIsAZeroedSealedMemfdWithAnFd) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({1000}, DType::U8, MemoryKind::Shm));
  EXPECT_EQ(tensor.memory(), MemoryKind::Shm);
  ASSERT_GE(tensor.fd(), 0);
  const int seals = ::fcntl(tensor.fd(), F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
  EXPECT_EQ(seals & F_SEAL_WRITE, 0);
  EXPECT_NE(::fcntl(tensor.fd(), F_GETFD) & FD_CLOEXEC, 0);
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(auto bytes, map.span<const uint8_t>());
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), 1000);
}

TEST(Shm, MapsSeeOneBufferAndOutliveTheTensor) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({64}, DType::U8, MemoryKind::Shm));
  ASSERT_OK_AND_ASSIGN(TensorMap first, tensor.map(CpuAccess::Write));
  ASSERT_OK_AND_ASSIGN(TensorMap second, tensor.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(TensorMap third, tensor.map(CpuAccess::Read));
  EXPECT_EQ(second.const_data(), third.const_data()) << "read maps share one read-only mapping";
  first.data()[5] = std::byte{42};
  tensor = Tensor::create({1}, DType::U8, MemoryKind::Mem).value();
  EXPECT_EQ(second.const_data()[5], std::byte{42});
}

TEST(Shm, TheMmuRefusesWritesThroughAReadMap) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4096}, DType::U8, MemoryKind::Shm));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap read, tensor.map(CpuAccess::Read));
    EXPECT_TRUE(testing::write_faults(read.data())) << "a read map of shm must lie in a PROT_READ mapping";
    EXPECT_ERROR(ErrorCode::PermissionDenied, read.mutable_data());
    EXPECT_ERROR(ErrorCode::PermissionDenied, read.span<uint8_t>());
  }
  ASSERT_OK_AND_ASSIGN(TensorMap write, tensor.map(CpuAccess::ReadWrite));
  EXPECT_FALSE(testing::write_faults(write.data()));
  ASSERT_OK_AND_ASSIGN(std::byte * bytes, write.mutable_data());
  bytes[7] = std::byte{9};
  ASSERT_OK_AND_ASSIGN(TensorMap read, tensor.map(CpuAccess::Read));
  EXPECT_EQ(read.const_data()[7], std::byte{9});
}

TEST(Shm, AReadMapOfAReadOnlyImportFaultsOnWriteToo) {
  UniqueFd fd = make_memfd(4096);
  ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_WRITE), 0) << std::strerror(errno);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::from_fd(fd.get(), layout));
  ASSERT_OK_AND_ASSIGN(TensorMap read, tensor.map(CpuAccess::Read));
  EXPECT_TRUE(testing::write_faults(read.data()));
}

TEST(Shm, CloneFdIsANewFdOnTheSameBytes) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({4096}, DType::U8, MemoryKind::Shm));
  ASSERT_OK_AND_ASSIGN(UniqueFd copy, tensor.clone_fd());
  EXPECT_NE(copy.get(), tensor.fd());
  EXPECT_NE(::fcntl(copy.get(), F_GETFD) & FD_CLOEXEC, 0);
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Write));
    std::memcpy(map.data(), "hello", 5);
  }
  char text[6] = {};
  ASSERT_EQ(::pread(copy.get(), text, 5, 0), 5);
  EXPECT_STREQ(text, "hello");
}

TEST(Shm, MemTensorsHaveNoFd) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({16}, DType::U8, MemoryKind::Mem));
  EXPECT_EQ(tensor.fd(), -1);
  EXPECT_ERROR(ErrorCode::InvalidArgument, tensor.clone_fd());
}

TEST(Shm, APeerCannotShrinkTheBufferUnderTheMapping) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({1 << 16}, DType::U8, MemoryKind::Shm));
  ASSERT_OK_AND_ASSIGN(UniqueFd peer, tensor.clone_fd());
  EXPECT_EQ(::ftruncate(peer.get(), 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(::ftruncate(peer.get(), 1 << 20), -1);
  // The last page is still there: touching it would SIGBUS had the truncate succeeded.
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::ReadWrite));
  map.data()[(1 << 16) - 1] = std::byte{7};
  EXPECT_EQ(map.data()[(1 << 16) - 1], std::byte{7});
}

TEST(Shm, MapWithNoAccessIsInvalid) {
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({16}, DType::U8, MemoryKind::Shm));
  EXPECT_ERROR(ErrorCode::InvalidArgument, tensor.map(CpuAccess::None));
}

TEST(ShmImport, SeesTheBytesOfAMemfdMadeElsewhere) {
  UniqueFd fd = make_memfd(4096);
  ASSERT_EQ(::pwrite(fd.get(), "\x01\x02\x03\x04", 4, 0), 4);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({2, 2}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::from_fd(fd.get(), layout));
  EXPECT_EQ(tensor.memory(), MemoryKind::Shm);
  EXPECT_NE(tensor.fd(), fd.get()) << "the import must hold its own duplicate";
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(auto bytes, map.span<const uint8_t>());
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), (std::vector<uint8_t>{1, 2, 3, 4}));
  fd.reset();  // the caller's fd is its own to close
  EXPECT_EQ(bytes[3], 4);
}

TEST(ShmImport, RoundTripsThroughCloneFdWithOffsetAndStrides) {
  ASSERT_OK_AND_ASSIGN(Tensor source, Tensor::image(6, 4, PixelFormat::Rgba, MemoryKind::Shm));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, source.map(CpuAccess::Write));
    for (int64_t y = 0; y < 4; ++y) map.data()[y * source.strides()[0]] = std::byte(y + 1);
  }
  ASSERT_OK_AND_ASSIGN(UniqueFd fd, source.clone_fd());
  ASSERT_OK_AND_ASSIGN(Tensor imported, Tensor::from_fd(fd.get(), source.layout(), MemoryKind::Shm));
  ASSERT_OK_AND_ASSIGN(Tensor row2, imported.slice(0, 2, 3));
  ASSERT_OK_AND_ASSIGN(TensorMap map, row2.map(CpuAccess::Read));
  EXPECT_EQ(map.data()[0], std::byte{3});
}

TEST(ShmImport, AnUnsealedMemfdIsSealedAgainstShrinkingOnImport) {
  UniqueFd fd = make_memfd(4096);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::from_fd(fd.get(), layout));
  EXPECT_NE(::fcntl(fd.get(), F_GET_SEALS) & F_SEAL_SHRINK, 0);
  EXPECT_EQ(::ftruncate(fd.get(), 0), -1);
}

TEST(ShmImport, AReadOnlyFdMapsForReadingOnly) {
  UniqueFd fd = make_memfd(4096);
  ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0) << std::strerror(errno);
  UniqueFd read_only(::open(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(read_only.valid()) << std::strerror(errno);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::from_fd(read_only.get(), layout));
  EXPECT_OK(tensor.map(CpuAccess::Read));
  EXPECT_ERROR(ErrorCode::PermissionDenied, tensor.map(CpuAccess::Write));
  EXPECT_ERROR(ErrorCode::PermissionDenied, tensor.map(CpuAccess::ReadWrite));
}

// The refusal names the missing seal and the fix.
void expect_refused_for_the_seal(const Result<Tensor>& tensor) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, tensor);
  if (tensor) return;
  const std::string& message = tensor.error().message();
  EXPECT_NE(message.find("F_SEAL_SHRINK"), std::string::npos) << message;
  EXPECT_NE(message.find("MFD_ALLOW_SEALING"), std::string::npos) << message;
}

TEST(ShmImport, AMemfdThatCannotBeSealedIsRefused) {
  UniqueFd fd = make_memfd(4096, MFD_CLOEXEC);  // no MFD_ALLOW_SEALING: F_SEAL_SEAL is set
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  expect_refused_for_the_seal(Tensor::from_fd(fd.get(), layout));
  const int fds[] = {fd.get()};
  expect_refused_for_the_seal(Tensor::from_planes(fds, layout, MemoryKind::Shm));
}

TEST(ShmImport, AReadOnlyFdOfAnUnsealedMemfdIsRefused) {
  UniqueFd fd = make_memfd(4096);
  UniqueFd read_only(::open(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(read_only.valid()) << std::strerror(errno);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  expect_refused_for_the_seal(Tensor::from_fd(read_only.get(), layout));
  EXPECT_EQ(::fcntl(fd.get(), F_GET_SEALS) & F_SEAL_SHRINK, 0) << "a refused import leaves the seals alone";
  // Sealed by its owner, the same read-only fd imports.
  ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0) << std::strerror(errno);
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::from_fd(read_only.get(), layout));
  EXPECT_OK(tensor.map(CpuAccess::Read));
}

TEST(ShmImport, TheRefusalSparesTheImporterASigbusWhenTheOwnerTruncates) {
  // The child imports a memfd that cannot be sealed, its owner truncates it, and the child
  // reads: a SIGBUS unless the import was refused.
  EXPECT_EXIT(
      {
        UniqueFd fd = make_memfd(1 << 16, MFD_CLOEXEC);
        auto layout = Layout::contiguous({1 << 16}, DType::U8);
        auto tensor = Tensor::from_fd(fd.get(), *layout);
        if (!tensor) std::_Exit(tensor.error().code() == ErrorCode::InvalidArgument ? 0 : 3);
        if (::ftruncate(fd.get(), 0) != 0) std::_Exit(4);
        auto map = tensor->map(CpuAccess::Read);
        const auto last = static_cast<int>(*static_cast<const volatile std::byte*>(map->const_data() + 65535));
        std::_Exit(last == 0 ? 5 : 6);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(ShmImport, AWriteSealedMemfdMapsForReadingOnly) {
  UniqueFd fd = make_memfd(4096);
  ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE), 0) << std::strerror(errno);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({4096}, DType::U8));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::from_fd(fd.get(), layout));
  EXPECT_OK(tensor.map(CpuAccess::Read));
  EXPECT_ERROR(ErrorCode::PermissionDenied, tensor.map(CpuAccess::Write));
}

TEST(ShmImport, ABufferShorterThanTheLayoutIsRefusedWithBothSizes) {
  UniqueFd fd = make_memfd(1920 * 1080);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::image(1920, 1080, PixelFormat::Nv12, DType::U8, 1));
  auto tensor = Tensor::from_fd(fd.get(), layout);
  EXPECT_ERROR(ErrorCode::OutOfRange, tensor);
  const std::string& message = tensor.error().message();
  EXPECT_NE(message.find("nv12 1920x1080 needs 3110400 bytes, the buffer has 2073600"), std::string::npos) << message;
}

TEST(ShmImport, AKindMismatchIsRefused) {
  UniqueFd fd = make_memfd(4096);
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({16}, DType::U8));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_fd(fd.get(), layout, MemoryKind::DmaBuf));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_fd(fd.get(), layout, MemoryKind::Mem));
}

TEST(ShmImport, FdsThatAreNotBuffersAreRefusedWithWhatTheyAre) {
  ASSERT_OK_AND_ASSIGN(Layout layout, Layout::contiguous({16}, DType::U8));
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  int socket_fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socket_fds), 0);
  UniqueFd a(socket_fds[0]), b(socket_fds[1]);
  char path[] = "/var/tmp/memhal-shm-test-XXXXXX";  // a disk file system, unlike /tmp on many hosts
  UniqueFd file(::mkostemp(path, O_CLOEXEC));
  ASSERT_TRUE(file.valid());
  ::unlink(path);
  ASSERT_EQ(::ftruncate(file.get(), 4096), 0);
  const bool tmp_is_tmpfs = ::fcntl(file.get(), F_GET_SEALS) >= 0;
  UniqueFd closed = make_memfd(4096);
  const int closed_number = closed.get();
  closed.reset();

  const std::pair<int, const char*> cases[] = {
      {read_end.get(), "pipe"}, {a.get(), "socket"}, {file.get(), "regular file"}, {closed_number, "not an open fd"}};
  for (const auto& [fd, what] : cases) {
    if (std::string(what) == "regular file" && tmp_is_tmpfs) continue;  // /tmp on tmpfs is shmem
    auto tensor = Tensor::from_fd(fd, layout);
    EXPECT_ERROR(ErrorCode::InvalidArgument, tensor);
    if (!tensor) {
      EXPECT_NE(tensor.error().message().find(what), std::string::npos) << tensor.error().message();
    }
  }
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_fd(-1, layout));
}

TEST(ShmImport, FromPlanesImportsOneFdPerBufferAndTheSameFdOnce) {
  ASSERT_OK_AND_ASSIGN(Tensor source, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::Shm, DType::U8,
                                                    kDefaultRowAlign, PlaneBuffers::PerPlane));
  ASSERT_EQ(source.layout().buffer_count(), 2u);
  ASSERT_NE(source.fd(0), source.fd(1));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, source.map(CpuAccess::Write));
    map.plane(0)[0] = std::byte{16};
    map.plane(1)[0] = std::byte{128};
  }
  ASSERT_OK_AND_ASSIGN(Tensor imported, Tensor::from_planes({source.fd(0), source.fd(1)}, source.layout()));
  ASSERT_OK_AND_ASSIGN(TensorMap map, imported.map(CpuAccess::Read));
  EXPECT_EQ(map.plane(0)[0], std::byte{16});
  EXPECT_EQ(map.plane(1)[0], std::byte{128});
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_planes({source.fd(0)}, source.layout()));
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::from_fd(source.fd(0), source.layout()));

  // Both planes in one buffer at different offsets: one fd given twice.
  ASSERT_OK_AND_ASSIGN(Tensor shared, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::Shm));
  PlaneLayout planes[2] = {shared.layout().planes()[0], shared.layout().planes()[1]};
  planes[1].buffer = 1;
  ASSERT_OK_AND_ASSIGN(Layout two_buffers, Layout::image_planes(64, 32, PixelFormat::Nv12, planes));
  ASSERT_OK_AND_ASSIGN(Tensor twice, Tensor::from_planes({shared.fd(), shared.fd()}, two_buffers));
  EXPECT_EQ(twice.fd(0), twice.fd(1));
}

TEST(ShmImages, PerPlaneImagesPutEachPlaneInItsOwnBuffer) {
  for (PixelFormat format : {PixelFormat::Nv12, PixelFormat::I420, PixelFormat::Nv24}) {
    ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(128, 64, format, MemoryKind::Shm, DType::U8, kDefaultRowAlign,
                                                     PlaneBuffers::PerPlane));
    ASSERT_EQ(image.layout().buffer_count(), image.layout().planes().size()) << to_string(format);
    for (std::size_t i = 0; i < image.layout().planes().size(); ++i) {
      EXPECT_EQ(image.layout().planes()[i].buffer, i);
      EXPECT_EQ(image.layout().planes()[i].offset, 0);
      EXPECT_EQ(image.layout().planes()[i].pitch % kDefaultRowAlign, 0);
      EXPECT_GE(image.fd(i), 0);
    }
  }
  EXPECT_ERROR(ErrorCode::InvalidArgument, Tensor::image(16, 16, PixelFormat::PlanarRgb, MemoryKind::Shm, DType::U8,
                                                         kDefaultRowAlign, PlaneBuffers::PerPlane));
}

TEST(ShmImages, AutoSelectionNeverPicksShm) {
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(32, 32, PixelFormat::Rgba));
  EXPECT_NE(image.memory(), MemoryKind::Shm);
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({32}, DType::U8));
  EXPECT_NE(tensor.memory(), MemoryKind::Shm);
}

}  // namespace
}  // namespace memhal
