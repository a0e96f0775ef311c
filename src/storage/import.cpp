#include "storage/import.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/strings.hpp"
#include "storage/dmabuf.hpp"
#include "storage/mapping.hpp"
#include "storage/shm.hpp"

namespace memhal::detail {
namespace {

// The fields of /proc/self/fdinfo/<fd> a DMA-BUF import needs; exp_name exists only for DMA-BUFs.
struct FdInfo {
  std::optional<std::string> exp_name;
  std::optional<std::size_t> size;
};

Result<FdInfo> read_fdinfo(int fd) {
  const std::string path = cat("/proc/self/fdinfo/", fd);
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::Io, "cannot read ", path, " to identify fd ", fd, " (is /proc mounted?)");
  FdInfo info;
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string_view key(line.data(), colon);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key == "exp_name") info.exp_name = value;
    if (key == "size") info.size = std::strtoull(value.c_str(), nullptr, 10);
  }
  return info;
}

const char* file_type(mode_t mode) {
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISREG(mode)) return "a regular file on a disk file system (not a memfd or shmem file)";
  return "not a buffer";
}

}  // namespace

Result<FdIdentity> identify_fd(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return fail_errno(ErrorCode::InvalidArgument, errno, "fd ", fd, " is not an open fd");
  const bool opened_for_write = (flags & O_ACCMODE) != O_RDONLY;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail_errno(ErrorCode::Io, errno, "fstat of fd ", fd, " failed");
  // F_GET_SEALS answers only for shmem (memfd, /dev/shm) and hugetlbfs files: the files whose
  // pages can be shared by mapping and, with seals, protected from a peer's truncate. It is
  // asked first because it costs one fcntl, where fdinfo costs an open and read of /proc.
  const int seals = S_ISREG(st.st_mode) ? ::fcntl(fd, F_GET_SEALS) : -1;
  if (seals >= 0) {
    const bool write_sealed = (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) != 0;
    return FdIdentity{MemoryKind::Shm, static_cast<std::size_t>(st.st_size), opened_for_write && !write_sealed,
                      (seals & F_SEAL_SEAL) ? "shmem" : "memfd"};
  }
  MEMHAL_ASSIGN_OR_RETURN(FdInfo info, read_fdinfo(fd));
  if (info.exp_name) {
    if (!info.size) return fail(ErrorCode::Io, "fdinfo of DMA-BUF fd ", fd, " has no size");
    return FdIdentity{MemoryKind::DmaBuf, *info.size, opened_for_write, *info.exp_name};
  }
  return fail(ErrorCode::InvalidArgument, "fd ", fd, " is ", file_type(st.st_mode), ", not a DMA-BUF or memfd");
}

Result<void> require_shrink_seal(int fd, std::string_view what) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0)
    return fail_errno(ErrorCode::InvalidArgument, errno, what, ": fd ", fd, " does not answer F_GET_SEALS");
  if ((seals & F_SEAL_SHRINK) != 0 || ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0) return {};
  const int err = errno;
  const bool read_only = (::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY;
  return fail(ErrorCode::InvalidArgument, what, ": memfd/shmem fd ", fd,
              " is not sealed against shrinking (F_SEAL_SHRINK) and cannot be sealed here (",
              (seals & F_SEAL_SEAL) != 0 ? "F_SEAL_SEAL is set: made without MFD_ALLOW_SEALING, or a shm_open file"
              : read_only                ? "the fd is opened O_RDONLY"
                                         : std::strerror(err),
              "), so its owner could truncate it under the mapping and turn the next read into a SIGBUS. "
              "Create it with memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING) and seal it with "
              "fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), or hand over a writable fd so that memhal can seal it");
}

Result<std::shared_ptr<Storage>> import_fd(int fd, std::optional<MemoryKind> kind, std::size_t needed,
                                           std::string_view what) {
  MEMHAL_ASSIGN_OR_RETURN(FdIdentity identity, identify_fd(fd));
  if (kind && *kind != identity.kind) {
    return fail(ErrorCode::InvalidArgument, what, ": fd ", fd, " is ", to_string(identity.kind), " (",
                identity.exporter, "), not ", to_string(*kind));
  }
  if (identity.size < needed || identity.size == 0) {
    return fail(ErrorCode::OutOfRange, what, " needs ", needed, " bytes, the buffer has ", identity.size);
  }
  // A peer could shrink an unsealed memfd under our mapping (SIGBUS on access): refuse what is
  // not sealed and cannot be sealed here.
  if (identity.kind == MemoryKind::Shm) MEMHAL_TRY(require_shrink_seal(fd, what));
  UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy) return fail_errno(code_for_errno(errno), errno, what, ": dup of fd ", fd, " failed");
  // Map only what the layout reaches (whole pages, within the buffer): a huge sparse buffer
  // behind a small tensor must not cost its size in address space.
  const std::size_t mapped = std::min(identity.size, page_round(std::max<std::size_t>(needed, 1)));
  std::string source = cat(to_string(identity.kind), " fd ", fd, " from ", identity.exporter);
  if (identity.kind == MemoryKind::DmaBuf) {
    return import_dmabuf(std::move(copy), mapped, identity.writable, std::move(source));
  }
  return import_shm(std::move(copy), mapped, identity.writable, std::move(source));
}

}  // namespace memhal::detail
