// Tensors over host memory made elsewhere, used in place and held through a keep-alive.
#include <cstdint>
#include <memhal/tensor.hpp>

#include "core/strings.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal {
namespace {

// Foreign bytes: Mem to every reader, released when the last tensor, map or frame drops them.
class WrappedStorage final : public detail::Storage {
 public:
  WrappedStorage(std::byte* data, std::size_t size, bool writable, KeepAlive keep_alive)
      : data_(data), size_(size), writable_(writable), keep_alive_(std::move(keep_alive)) {}
  MemoryKind kind() const noexcept override { return MemoryKind::Mem; }
  std::size_t size() const noexcept override { return size_; }
  Result<std::byte*> begin_access(CpuAccess access) override {
    if (can_write(access) && !writable_) {
      return detail::fail(ErrorCode::PermissionDenied, to_string(access), " map of ", size_,
                          " bytes of read-only wrapped memory at ", static_cast<const void*>(data_),
                          ": map for read, or materialize the tensor to get bytes of its own");
    }
    return data_;
  }
  void end_access(CpuAccess) noexcept override {}

 private:
  std::byte* data_;
  std::size_t size_;
  bool writable_;
  KeepAlive keep_alive_;
};

// `release` as the deleter of a keep-alive: it runs once, when the last holder drops it.
KeepAlive keep_alive_of(const void* data, std::function<void()> release) {
  if (!release) return {};
  return KeepAlive::of(std::shared_ptr<const void>(data, [release = std::move(release)](const void*) { release(); }));
}

Result<Tensor> wrap_bytes(std::byte* data, const Layout& layout, bool writable, KeepAlive keep_alive) {
  if (layout.buffer_count() != 1) {
    return detail::fail(ErrorCode::InvalidArgument, "Tensor::wrap of memory at ", static_cast<const void*>(data),
                        ": the layout spans ", layout.buffer_count(), " buffers; one pointer backs one buffer");
  }
  const ByteExtent extent = layout.byte_extent(0);
  if (data == nullptr && !layout.empty()) {
    return detail::fail(ErrorCode::InvalidArgument, "Tensor::wrap of a null pointer under a layout of ", extent.end,
                        " bytes");
  }
  if (extent.begin < 0 || static_cast<uint64_t>(extent.end) > UINTPTR_MAX - reinterpret_cast<uintptr_t>(data)) {
    return detail::fail(ErrorCode::InvalidArgument, "Tensor::wrap of memory at ", static_cast<const void*>(data),
                        ": the layout reaches bytes [", extent.begin, ", ", extent.end,
                        ") of it, outside the address space");
  }
  detail::TensorAccess::Buffers buffers{};
  buffers[0] =
      std::make_shared<WrappedStorage>(data, static_cast<std::size_t>(extent.end), writable, std::move(keep_alive));
  return detail::TensorAccess::make(layout, std::move(buffers));
}

}  // namespace

Result<Tensor> Tensor::wrap(void* data, const Layout& layout, KeepAlive keep_alive) {
  return wrap_bytes(static_cast<std::byte*>(data), layout, true, std::move(keep_alive));
}

Result<Tensor> Tensor::wrap(void* data, const Layout& layout, std::function<void()> release) {
  return wrap_bytes(static_cast<std::byte*>(data), layout, true, keep_alive_of(data, std::move(release)));
}

Result<Tensor> Tensor::wrap(const void* data, const Layout& layout, KeepAlive keep_alive) {
  return wrap_bytes(static_cast<std::byte*>(const_cast<void*>(data)), layout, false, std::move(keep_alive));
}

Result<Tensor> Tensor::wrap(const void* data, const Layout& layout, std::function<void()> release) {
  return wrap_bytes(static_cast<std::byte*>(const_cast<void*>(data)), layout, false,
                    keep_alive_of(data, std::move(release)));
}

}  // namespace memhal
