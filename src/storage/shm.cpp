#include "storage/shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>

#include "core/strings.hpp"
#include "storage/mapping.hpp"

namespace memhal::detail {
namespace {

// Write maps use the one read-write mapping made with the storage; read maps a second,
// read-only mapping of the same pages, made on the first read map, so that the MMU refuses
// writes through a read map (DESIGN §4). A read-only import has only the read-only mapping.
class ShmStorage final : public Storage {
 public:
  ShmStorage(UniqueFd fd, Mapping mapping, bool writable)
      : fd_(std::move(fd)), mapping_(std::move(mapping)), writable_(writable) {}
  MemoryKind kind() const noexcept override { return MemoryKind::Shm; }
  std::size_t size() const noexcept override { return mapping_.size(); }
  Result<std::byte*> begin_access(CpuAccess access) override {
    if (can_write(access)) {
      if (!writable_) {
        return fail(ErrorCode::PermissionDenied, to_string(access), " map of shm fd ", fd_.get(),
                    ": the import is read-only (fd opened O_RDONLY or sealed against writes)");
      }
      return mapping_.base();
    }
    if (!writable_) return mapping_.base();
    std::lock_guard lock(mutex_);
    if (!read_mapping_.valid()) {
      MEMHAL_ASSIGN_OR_RETURN(read_mapping_, Mapping::create(fd_.get(), mapping_.size(), false, "shm memfd"));
    }
    return read_mapping_.base();
  }
  void end_access(CpuAccess) noexcept override {}
  const UniqueFd* owned_fd() const noexcept override { return &fd_; }

 private:
  UniqueFd fd_;
  Mapping mapping_;  // read-write when writable_, else read-only
  bool writable_;
  std::mutex mutex_;
  Mapping read_mapping_;  // a writable storage's read-only view, made on the first read map
};

}  // namespace

Result<UniqueFd> create_sealed_memfd(const char* name, std::size_t bytes, unsigned seals) {
  const std::size_t size = page_round(bytes);
  if (size == 0) return fail(ErrorCode::OutOfMemory, "memfd of ", bytes, " bytes overflows");
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fail_errno(code_for_errno(errno), errno, "memfd_create(\"", name, "\") failed");
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    const int err = errno;
    return fail_errno(err == EFBIG || err == EINVAL ? ErrorCode::OutOfMemory : code_for_errno(err), err,
                      "ftruncate of memfd \"", name, "\" to ", size, " bytes failed");
  }
  if (seals != 0 && ::fcntl(fd.get(), F_ADD_SEALS, seals) != 0) {
    return fail_errno(ErrorCode::Io, errno, "sealing memfd \"", name, "\" (seals 0x", std::hex, seals, ") failed");
  }
  return fd;
}

Result<std::shared_ptr<Storage>> allocate_shm(std::size_t bytes) {
  MEMHAL_ASSIGN_OR_RETURN(UniqueFd fd, create_sealed_memfd("memhal-shm", bytes, F_SEAL_SHRINK | F_SEAL_GROW));
  MEMHAL_ASSIGN_OR_RETURN(Mapping mapping, Mapping::create(fd.get(), page_round(bytes), true, "shm memfd"));
  return std::make_shared<ShmStorage>(std::move(fd), std::move(mapping), true);
}

Result<std::shared_ptr<Storage>> import_shm(UniqueFd fd, std::size_t size, bool writable, std::string_view source) {
  MEMHAL_ASSIGN_OR_RETURN(Mapping mapping, Mapping::create(fd.get(), size, writable, source));
  return std::make_shared<ShmStorage>(std::move(fd), std::move(mapping), writable);
}

Availability probe_shm() {
  auto storage = allocate_shm(1);
  if (!storage) return {false, storage.error().message(), ErrorCode::Unavailable};
  return {true, "memfd_create, sealed against shrink and grow, mapped once", ErrorCode::Unavailable};
}

}  // namespace memhal::detail
