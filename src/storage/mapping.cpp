#include "storage/mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include "core/strings.hpp"

namespace memhal::detail {

Result<Mapping> Mapping::create(int fd, std::size_t size, bool writable, std::string_view what, bool populate) {
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  const int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  void* base = ::mmap(nullptr, size, prot, flags, fd, 0);
  if (base == MAP_FAILED) {
    return fail_errno(code_for_errno(errno) == ErrorCode::OutOfMemory ? ErrorCode::OutOfMemory : ErrorCode::Io, errno,
                      "mmap of ", size, " bytes of ", what, " (fd ", fd, writable ? ", read-write" : ", read-only",
                      ") failed");
  }
  return Mapping(static_cast<std::byte*>(base), size);
}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, size_);
    base_ = other.base_;
    size_ = other.size_;
    other.base_ = nullptr;
  }
  return *this;
}

Mapping::~Mapping() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

std::size_t page_round(std::size_t bytes) noexcept {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes == 0) return page;
  if (bytes > SIZE_MAX - page) return 0;
  return (bytes + page - 1) / page * page;
}

}  // namespace memhal::detail
