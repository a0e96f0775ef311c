// Tensors over fds: imports of buffers made elsewhere, and the fds of our own.
#include <fcntl.h>

#include <algorithm>
#include <memhal/pixel_format.hpp>
#include <memhal/tensor.hpp>

#include "core/strings.hpp"
#include "storage/import.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal {
namespace {

// "nv12 1920x1080" for an image, "u8 [2, 3]" otherwise: what an import is asked to be.
std::string describe(const Layout& layout) {
  if (layout.pixel_format()) {
    const bool planar =
        layout.rank() == 3 && !layout.is_multi_plane() && layout.shape()[0] <= 4 && is_planar(*layout.pixel_format());
    const int64_t width = planar ? layout.shape()[2] : layout.shape()[1];
    const int64_t height = planar ? layout.shape()[1] : layout.shape()[0];
    return detail::cat(to_string(*layout.pixel_format()), " ", width, "x", height);
  }
  std::string text = detail::cat(to_string(layout.dtype()), " [");
  for (std::size_t i = 0; i < layout.rank(); ++i) text += detail::cat(i ? ", " : "", layout.shape()[i]);
  return text + "]";
}

}  // namespace

Result<Tensor> Tensor::from_fd(int fd, const Layout& layout, std::optional<MemoryKind> kind) {
  if (layout.buffer_count() != 1) {
    return detail::fail(ErrorCode::InvalidArgument, "import of fd ", fd, " as ", describe(layout),
                        ": the layout spans ", layout.buffer_count(),
                        " buffers; use Tensor::from_planes with one fd each");
  }
  return from_planes(std::span<const int>(&fd, 1), layout, kind);
}

Result<Tensor> Tensor::from_planes(std::span<const int> fds, const Layout& layout, std::optional<MemoryKind> kind) {
  if (kind && *kind != MemoryKind::Shm && *kind != MemoryKind::DmaBuf) {
    return detail::fail(ErrorCode::InvalidArgument, "import as ", to_string(*kind),
                        ": only shm (memfd) and dmabuf buffers can be imported from an fd");
  }
  if (fds.size() != layout.buffer_count()) {
    return detail::fail(ErrorCode::InvalidArgument, "import of ", describe(layout), " from ", fds.size(),
                        " fds: the layout spans ", layout.buffer_count(), " buffers");
  }
  Buffers buffers{};
  for (std::size_t i = 0; i < fds.size(); ++i) {
    for (std::size_t j = 0; j < i && !buffers[i]; ++j) {
      if (fds[j] == fds[i]) buffers[i] = buffers[j];
    }
    if (buffers[i]) continue;
    // An fd given for several buffers is imported once, mapped as far as the furthest of them
    // reaches; the import maps no further than that.
    int64_t needed = 0;
    for (std::size_t j = i; j < fds.size(); ++j) {
      if (fds[j] == fds[i]) needed = std::max(needed, layout.byte_extent(static_cast<uint32_t>(j)).end);
    }
    const std::string what = detail::cat("import of fd ", fds[i], " as ", describe(layout),
                                         fds.size() > 1 ? detail::cat(" (buffer ", i, ")") : std::string());
    MEMHAL_ASSIGN_OR_RETURN(buffers[i], detail::import_fd(fds[i], kind, static_cast<std::size_t>(needed), what));
    if (i > 0 && buffers[i]->kind() != buffers[0]->kind()) {
      return detail::fail(ErrorCode::InvalidArgument, what, ": buffer 0 is ", to_string(buffers[0]->kind()),
                          ", this one ", to_string(buffers[i]->kind()), "; one tensor has one memory kind");
    }
  }
  return detail::TensorAccess::make(layout, std::move(buffers));
}

int Tensor::fd(std::size_t buffer) const noexcept {
  if (buffer >= buffers_.size() || !buffers_[buffer]) return -1;
  return buffers_[buffer]->fd();
}

Result<UniqueFd> Tensor::clone_fd(std::size_t buffer) const {
  const int own = fd(buffer);
  if (own < 0) {
    return detail::fail(ErrorCode::InvalidArgument, "clone_fd of buffer ", buffer, " of tensor '", name(), "' (",
                        to_string(memory()),
                        "): ", buffer < layout_.buffer_count() ? "this memory kind has no fd" : "no such buffer");
  }
  UniqueFd copy(::fcntl(own, F_DUPFD_CLOEXEC, 0));
  if (!copy) return detail::fail_errno(ErrorCode::Io, errno, "dup of fd ", own, " of tensor '", name(), "' failed");
  return copy;
}

}  // namespace memhal
