// Tensor <-> MemoryDomain without copying: host tensors lend their storage to System bytes,
// DMA-BUF tensors their fds to an OwnedDmaBuf, CUDA images their device pointers to an
// OwnedCudaBuffer; each payload remembers its tensor, and an unchanged one gives it back.
#include <memhal/memory_domain.hpp>
#include <memhal/pixel_format.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <optional>

#include "core/strings.hpp"
#include "frame/shared_bytes_access.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal {
namespace {

// A tensor's storage over shared System bytes. Writes are allowed only to a sole holder of
// bytes memhal owns: anything else would change what other shares of the frame see.
class BytesStorage final : public detail::Storage {
 public:
  explicit BytesStorage(SharedBytes bytes) : bytes_(std::move(bytes)) {}
  MemoryKind kind() const noexcept override { return MemoryKind::Mem; }
  std::size_t size() const noexcept override { return bytes_.size(); }
  Result<std::byte*> begin_access(CpuAccess access) override {
    if (can_write(access) && bytes_.mutable_data() == nullptr) {
      return detail::fail(
          ErrorCode::PermissionDenied, "write access to ", bytes_.size(), " system bytes ",
          bytes_.owned() ? "shared with other holders" : "lent to memhal or kept alive by another owner",
          ": materialize the tensor to get bytes of its own");
    }
    return const_cast<std::byte*>(bytes_.data());
  }
  void end_access(CpuAccess) noexcept override {}
  const SharedBytes& bytes() const noexcept { return bytes_; }

 private:
  SharedBytes bytes_;
};

// CUDA device memory handed over as an OwnedCudaBuffer: the tensor carries it, with its
// keep-alive, through views, frames and recordings; memhal never dereferences it and the CPU
// cannot map it.
class CudaBufferStorage final : public detail::Storage {
 public:
  CudaBufferStorage(OwnedCudaBuffer buffer, std::size_t size) : buffer_(std::move(buffer)), size_(size) {}
  MemoryKind kind() const noexcept override { return MemoryKind::Cuda; }
  std::size_t size() const noexcept override { return size_; }
  Result<std::byte*> begin_access(CpuAccess access) override {
    return detail::fail(ErrorCode::NotHostAddressable, to_string(access), " map of CUDA device memory at 0x", std::hex,
                        base(), std::dec, " (", size_, " bytes, device ", buffer_.device_ordinal,
                        "): the CPU cannot map it; copy it to host memory with CUDA (cuMemcpy2D) first");
  }
  void end_access(CpuAccess) noexcept override {}
  uint64_t base() const noexcept { return buffer_.device_pointers[0]; }
  const OwnedCudaBuffer& buffer() const noexcept { return buffer_; }

 private:
  OwnedCudaBuffer buffer_;
  std::size_t size_;
};

// Keeps a storage alive and its read access open for as long as System bytes point into it.
struct ReadAccess {
  ReadAccess(std::shared_ptr<detail::Storage> s, std::byte* b) : storage(std::move(s)), base(b) {}
  ReadAccess(const ReadAccess&) = delete;
  ReadAccess& operator=(const ReadAccess&) = delete;
  ~ReadAccess() { storage->end_access(CpuAccess::Read); }
  std::shared_ptr<detail::Storage> storage;
  std::byte* base;
};

// The whole of a host storage as shared bytes (a count bump when it already holds some).
Result<SharedBytes> storage_bytes(const std::shared_ptr<detail::Storage>& storage) {
  if (const auto* bytes = dynamic_cast<const BytesStorage*>(storage.get())) return bytes->bytes();
  MEMHAL_ASSIGN_OR_RETURN(std::byte * base, storage->begin_access(CpuAccess::Read));
  auto access = std::make_shared<const ReadAccess>(storage, base);
  return detail::SharedBytesAccess::of_storage(std::span<const std::byte>(base, storage->size()), std::move(access),
                                               storage);
}

Result<MemoryDomain> host_domain(const Tensor& tensor) {
  const Layout& layout = tensor.layout();
  if (layout.buffer_count() > 1) {
    return detail::fail(ErrorCode::NotImplemented, "tensor '", tensor.name(), "' spans ", layout.buffer_count(),
                        " buffers; system memory is one: materialize it first");
  }
  MEMHAL_ASSIGN_OR_RETURN(const SharedBytes whole, storage_bytes(detail::TensorAccess::buffers(tensor)[0]));
  if (layout.is_contiguous() || layout.is_multi_plane()) {
    // A multi-plane image's planes are bytes in one buffer: the slice covers all of them.
    const ByteExtent extent = layout.byte_extent(0);
    MEMHAL_ASSIGN_OR_RETURN(SharedBytes bytes, whole.subrange(static_cast<std::size_t>(extent.begin),
                                                              static_cast<std::size_t>(extent.end - extent.begin)));
    return MemoryDomain(SystemSlice::shared(std::move(bytes)));
  }
  if (layout.rank() > kMaxViewRank) {
    return detail::fail(ErrorCode::NotImplemented, "strided tensor '", tensor.name(), "' has rank ", layout.rank(),
                        "; a system view has at most ", kMaxViewRank, ": materialize it first");
  }
  MEMHAL_ASSIGN_OR_RETURN(const TensorView view,
                          TensorView::strided(layout.shape(), layout.strides(), layout.offset(), layout.dtype()));
  MEMHAL_ASSIGN_OR_RETURN(SystemView system_view, SystemView::create(whole, view));
  return MemoryDomain(std::move(system_view));
}

// Planes of a single-buffer image in DRM's terms (offset, pitch), or why DRM cannot say it.
Result<std::vector<PlaneLayout>> drm_planes(const Layout& layout, PixelFormat format) {
  if (layout.is_multi_plane()) return std::vector<PlaneLayout>(layout.planes().begin(), layout.planes().end());
  const auto shape = layout.shape();
  const auto strides = layout.strides();
  const auto element = static_cast<int64_t>(layout.element_size());
  const bool planar = is_planar(format);
  // Interleaved {h, w, c}: c packed elements per pixel. Planar {c, h, w}: one plane per channel.
  const bool rows_ok =
      layout.rank() == 3 && (planar ? strides[2] == element && strides[1] > 0 && strides[0] > 0
                                    : strides[2] == element && strides[1] == shape[2] * element && strides[0] > 0);
  if (!rows_ok) {
    return detail::fail(ErrorCode::NotImplemented, "a ", to_string(format),
                        " DMA-BUF tensor with strides that are not rows of packed pixels has no DRM description: "
                        "materialize it first");
  }
  std::vector<PlaneLayout> planes;
  for (int64_t i = 0; i < (planar ? shape[0] : 1); ++i) {
    planes.push_back(PlaneLayout{0, layout.offset() + i * strides[0], planar ? strides[1] : strides[0]});
  }
  return planes;
}

// The DRM description of a DmaBuf image tensor (format, size, planes' offsets and pitches)
// without fds; `buffer_of_plane[i]` says which of the tensor's buffers plane i lies in.
Result<OwnedDmaBuf> describe_dmabuf(const Tensor& tensor, std::array<uint32_t, kMaxPlanes>& buffer_of_plane) {
  const Layout& layout = tensor.layout();
  const auto format = layout.pixel_format();
  if (!format) {
    return detail::fail(ErrorCode::NotImplemented, "DMA-BUF tensor '", tensor.name(),
                        "' has no pixel format; an OwnedDmaBuf describes images");
  }
  MEMHAL_ASSIGN_OR_RETURN(const std::vector<PlaneLayout> planes, drm_planes(layout, *format));
  const bool planar = !layout.is_multi_plane() && is_planar(*format);
  OwnedDmaBuf dmabuf;
  dmabuf.format = *format;
  dmabuf.height = layout.is_multi_plane() ? layout.shape()[0] : layout.shape()[planar ? 1 : 0];
  dmabuf.width = layout.is_multi_plane() ? layout.shape()[1] : layout.shape()[planar ? 2 : 1];
  dmabuf.plane_count = static_cast<uint32_t>(planes.size());
  for (std::size_t i = 0; i < planes.size(); ++i) {
    buffer_of_plane[i] = planes[i].buffer;
    dmabuf.planes[i].offset = planes[i].offset;
    dmabuf.planes[i].pitch = planes[i].pitch;
  }
  return dmabuf;
}

Result<MemoryDomain> dmabuf_domain(const Tensor& tensor) {
  std::array<uint32_t, kMaxPlanes> buffer_of_plane{};
  MEMHAL_ASSIGN_OR_RETURN(OwnedDmaBuf dmabuf, describe_dmabuf(tensor, buffer_of_plane));
  const auto& buffers = detail::TensorAccess::buffers(tensor);
  for (std::size_t i = 0; i < dmabuf.plane_count; ++i) {
    // The domain shares the storage's own fd (no dup per frame): each plane's SharedFd holds
    // the buffer, and so its pool slot, alive.
    const auto& buffer = buffers[buffer_of_plane[i]];
    if (buffer->owned_fd() == nullptr) {
      return detail::fail(ErrorCode::Internal, "DMA-BUF tensor '", tensor.name(), "' buffer ", buffer_of_plane[i],
                          " has no fd");
    }
    dmabuf.planes[i].fd = SharedFd(buffer, *buffer->owned_fd());
  }
  dmabuf.keep_alive = KeepAlive::of(std::make_shared<const Tensor>(tensor));
  return MemoryDomain(std::move(dmabuf));
}

// How a frame's image planes (buffer, offset, pitch each) lie in its distinct buffers, as a
// Layout over them. `what` names the frame in errors ("DMA-BUF frame").
Result<Layout> image_layout(PixelFormat format, int64_t width, int64_t height, std::span<const PlaneLayout> planes,
                            const char* what) {
  auto layout = Layout::image_planes(width, height, format, planes);
  if (!layout) return detail::fail(layout.error().code(), what, ": ", layout.error().message());
  return layout;
}

// Whether fds `a` and `b` are one file (duplicates of one fd, or of one buffer).
bool same_file(int a, int b) {
  struct stat x {
  }, y{};
  if (a >= 0 && a == b) return true;  // a storage's own fd, shared: no fstat per frame
  return a >= 0 && b >= 0 && ::fstat(a, &x) == 0 && ::fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

// The storages of `source` that `fds` are the files of, in the order of `fds`; nothing when
// any fd is not one of them.
std::optional<detail::TensorAccess::Buffers> buffers_behind(const Tensor& source, std::span<const int> fds) {
  const auto& theirs = detail::TensorAccess::buffers(source);
  detail::TensorAccess::Buffers ours{};
  for (std::size_t i = 0; i < fds.size(); ++i) {
    for (const auto& buffer : theirs) {
      if (buffer && same_file(fds[i], buffer->fd())) {
        ours[i] = buffer;
        break;
      }
    }
    if (!ours[i]) return std::nullopt;
  }
  return ours;
}

// Whether `dmabuf`, whose distinct fds are the files of `behind` (plane i in fd
// `fd_of_plane[i]`), is still what dmabuf_domain made of `source`.
bool describes(const OwnedDmaBuf& dmabuf, const std::array<uint32_t, kMaxPlanes>& fd_of_plane,
               const detail::TensorAccess::Buffers& behind, const Tensor& source) {
  std::array<uint32_t, kMaxPlanes> buffer_of_plane{};
  const auto described = describe_dmabuf(source, buffer_of_plane);
  if (!described || described->format != dmabuf.format || described->width != dmabuf.width ||
      described->height != dmabuf.height || described->plane_count != dmabuf.plane_count) {
    return false;
  }
  const auto& theirs = detail::TensorAccess::buffers(source);
  for (uint32_t i = 0; i < dmabuf.plane_count; ++i) {
    if (described->planes[i].offset != dmabuf.planes[i].offset ||
        described->planes[i].pitch != dmabuf.planes[i].pitch || behind[fd_of_plane[i]] != theirs[buffer_of_plane[i]]) {
      return false;
    }
  }
  return true;
}

Result<Tensor> dmabuf_tensor(const OwnedDmaBuf& dmabuf) {
  if (dmabuf.modifier != kDrmModifierLinear) {
    return detail::fail(ErrorCode::NotImplemented, "DMA-BUF frame with DRM modifier 0x", std::hex, dmabuf.modifier,
                        std::dec, " is tiled or compressed; only linear buffers have a tensor form");
  }
  if (dmabuf.plane_count == 0 || dmabuf.plane_count > kMaxPlanes) {
    return detail::fail(ErrorCode::InvalidArgument, "DMA-BUF frame with ", dmabuf.plane_count, " planes");
  }
  // Planes that share an fd share a buffer of the tensor.
  std::vector<int> fds;
  std::array<uint32_t, kMaxPlanes> buffer_of_plane{};
  for (uint32_t i = 0; i < dmabuf.plane_count; ++i) {
    const int fd = dmabuf.planes[i].fd.get();
    const auto it = std::find(fds.begin(), fds.end(), fd);
    buffer_of_plane[i] = static_cast<uint32_t>(it - fds.begin());
    if (it == fds.end()) fds.push_back(fd);
  }
  std::array<PlaneLayout, kMaxPlanes> planes{};
  for (uint32_t i = 0; i < dmabuf.plane_count; ++i) {
    planes[i] = PlaneLayout{buffer_of_plane[i], dmabuf.planes[i].offset, dmabuf.planes[i].pitch};
  }
  MEMHAL_ASSIGN_OR_RETURN(const Layout layout,
                          image_layout(dmabuf.format, dmabuf.width, dmabuf.height,
                                       std::span(planes.data(), dmabuf.plane_count), "DMA-BUF frame"));
  // A frame made from a tensor (dmabuf_domain) comes back as that tensor while it still
  // describes it, and over that tensor's own storage when its planes were changed since.
  if (const Tensor* source = dmabuf.keep_alive.get<Tensor>()) {
    if (auto buffers = buffers_behind(*source, fds)) {
      if (describes(dmabuf, buffer_of_plane, *buffers, *source)) return *source;
      MEMHAL_TRY(detail::check_layout_fits(layout, *buffers));
      return detail::TensorAccess::make(layout, std::move(*buffers));
    }
  }
  MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, Tensor::from_planes(fds, layout));
  if (!dmabuf.keep_alive) return tensor;
  // Each buffer is held through an alias whose owner also holds the keep-alive, so that every
  // view and map of the tensor keeps what the frame's producer needs alive (a pool slot, a
  // V4L2 buffer not to be requeued), and the buffer stays its own identity.
  struct Kept {
    detail::TensorAccess::Buffers buffers;
    KeepAlive keep_alive;
  };
  const auto kept = std::make_shared<const Kept>(Kept{detail::TensorAccess::buffers(tensor), dmabuf.keep_alive});
  detail::TensorAccess::Buffers buffers{};
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (kept->buffers[i]) buffers[i] = std::shared_ptr<detail::Storage>(kept, kept->buffers[i].get());
  }
  return detail::TensorAccess::make(tensor.layout(), std::move(buffers));
}

// CUDA device planes as one buffer: the storage of the tensor a frame was made from
// (cuda_domain) when the planes lie in it, else a new one starting at plane 0's pointer that
// holds the buffer's keep-alive. Layout offsets count from the buffer's start.
Result<Tensor> cuda_tensor(const OwnedCudaBuffer& cuda) {
  if (!cuda.format) {
    return detail::fail(ErrorCode::NotImplemented,
                        "a CUDA buffer without a pixel format has no tensor form here: set its format");
  }
  if (cuda.plane_count == 0 || cuda.plane_count > kMaxPlanes || cuda.device_pointers[0] == 0) {
    return detail::fail(ErrorCode::InvalidArgument, "CUDA buffer with ", cuda.plane_count,
                        " planes and device pointer 0x", std::hex, cuda.device_pointers[0]);
  }
  detail::TensorAccess::Buffers buffers{};
  uint64_t base = cuda.device_pointers[0];
  if (const Tensor* source = cuda.keep_alive.get<Tensor>()) {
    const auto& origin = detail::TensorAccess::buffers(*source)[0];
    const auto* storage = dynamic_cast<const CudaBufferStorage*>(origin.get());
    if (storage != nullptr && storage->base() <= base) {
      buffers[0] = origin;
      base = storage->base();
    }
  }
  std::array<PlaneLayout, kMaxPlanes> planes{};
  for (uint32_t i = 0; i < cuda.plane_count; ++i) {
    const uint64_t pointer = cuda.device_pointers[i];
    if (pointer < base || pointer - base > uint64_t{INT64_MAX}) {
      return detail::fail(ErrorCode::NotImplemented, "CUDA buffer whose plane ", i, " (0x", std::hex, pointer,
                          ") lies before its buffer (0x", base, ") has no tensor form");
    }
    planes[i] = PlaneLayout{0, static_cast<int64_t>(pointer - base), cuda.pitches[i]};
  }
  MEMHAL_ASSIGN_OR_RETURN(const Layout layout, image_layout(*cuda.format, cuda.width, cuda.height,
                                                            std::span(planes.data(), cuda.plane_count), "CUDA buffer"));
  if (!buffers[0]) {
    buffers[0] = std::make_shared<CudaBufferStorage>(cuda, static_cast<std::size_t>(layout.byte_extent(0).end));
  }
  MEMHAL_TRY(detail::check_layout_fits(layout, buffers));
  return detail::TensorAccess::make(layout, std::move(buffers));
}

// A CUDA image tensor as the OwnedCudaBuffer of its planes; the frame keeps the tensor (and so
// the buffer's keep-alive) alive.
Result<MemoryDomain> cuda_domain(const Tensor& tensor) {
  const auto* storage = dynamic_cast<const CudaBufferStorage*>(detail::TensorAccess::buffers(tensor)[0].get());
  const Layout& layout = tensor.layout();
  const auto format = layout.pixel_format();
  if (storage == nullptr || !format || layout.buffer_count() != 1) {
    return detail::fail(ErrorCode::NotImplemented, "cuda tensor '", tensor.name(),
                        "' is not one CUDA image buffer; only those have a memory domain in this build");
  }
  MEMHAL_ASSIGN_OR_RETURN(const std::vector<PlaneLayout> planes, drm_planes(layout, *format));
  OwnedCudaBuffer cuda = storage->buffer();
  const bool planar = !layout.is_multi_plane() && is_planar(*format);
  cuda.format = *format;
  cuda.height = layout.is_multi_plane() ? layout.shape()[0] : layout.shape()[planar ? 1 : 0];
  cuda.width = layout.is_multi_plane() ? layout.shape()[1] : layout.shape()[planar ? 2 : 1];
  cuda.plane_count = static_cast<uint32_t>(planes.size());
  cuda.device_pointers = {};
  cuda.pitches = {};
  for (std::size_t i = 0; i < planes.size(); ++i) {
    cuda.device_pointers[i] = storage->base() + static_cast<uint64_t>(planes[i].offset);
    cuda.pitches[i] = planes[i].pitch;
  }
  cuda.keep_alive = KeepAlive::of(std::make_shared<const Tensor>(tensor));
  return MemoryDomain(std::move(cuda));
}

// A tensor over System bytes: the storage they came from when there is one (offsets then
// count from its start), else the bytes themselves.
Result<Tensor> bytes_tensor(std::span<const int64_t> shape, std::span<const int64_t> strides, int64_t offset,
                            DType dtype, SharedBytes bytes) {
  detail::TensorAccess::Buffers buffers{};
  const detail::ByteBlock* block = detail::SharedBytesAccess::block(bytes);
  if (block != nullptr && block->storage) {
    offset += bytes.data() - block->data;
    buffers[0] = block->storage;
  } else {
    buffers[0] = std::make_shared<BytesStorage>(std::move(bytes));
  }
  MEMHAL_ASSIGN_OR_RETURN(Layout layout, Layout::strided(shape, strides, offset, dtype));
  MEMHAL_TRY(detail::check_layout_fits(layout, buffers));
  return detail::TensorAccess::make(std::move(layout), std::move(buffers));
}

}  // namespace

Result<MemoryDomain> MemoryDomain::from_tensor(const Tensor& tensor) {
  switch (tensor.memory()) {
    case MemoryKind::Mem:
    case MemoryKind::Shm: {
      MEMHAL_ASSIGN_OR_RETURN(MemoryDomain domain, host_domain(tensor));
      auto source = std::make_shared<const Tensor>(tensor);
      if (auto* slice = domain.get_if<SystemSlice>()) slice->source_ = std::move(source);
      if (auto* view = domain.get_if<SystemView>()) view->source_ = std::move(source);
      return domain;
    }
    case MemoryKind::DmaBuf: return dmabuf_domain(tensor);
    case MemoryKind::Cuda: return cuda_domain(tensor);
    default:
      return detail::fail(ErrorCode::NotImplemented, "a ", to_string(tensor.memory()), " tensor ('", tensor.name(),
                          "') has no memory domain in this build: materialize it to mem first");
  }
}

Result<Tensor> MemoryDomain::to_tensor() const {
  if (const auto* slice = std::get_if<SystemSlice>(&payload_)) {
    if (slice->source_) return *slice->source_;
    const std::array<int64_t, 1> shape{static_cast<int64_t>(slice->size())}, strides{1};
    return bytes_tensor(shape, strides, 0, DType::U8, slice->shared_bytes());
  }
  if (const auto* system_view = std::get_if<SystemView>(&payload_)) {
    if (system_view->source_) return *system_view->source_;
    const TensorView& view = system_view->view();
    return bytes_tensor(view.shape(), view.strides(), view.offset(), view.dtype(), system_view->bytes());
  }
  if (const auto* dmabuf = std::get_if<OwnedDmaBuf>(&payload_)) return dmabuf_tensor(*dmabuf);
  if (const auto* cuda = std::get_if<OwnedCudaBuffer>(&payload_)) return cuda_tensor(*cuda);
  return detail::fail(ErrorCode::UnsupportedDomain,
                      "conversion to a tensor needs system memory, a system view, a DMA-BUF or a CUDA image",
                      " but the frame arrived as ", describe(), ": download it to system memory first");
}

}  // namespace memhal
