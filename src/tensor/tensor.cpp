#include <memhal/memory.hpp>
#include <memhal/pixel_format.hpp>
#include <memhal/tensor.hpp>

#include "core/strings.hpp"
#include "storage/allocator.hpp"
#include "tensor/strided_copy.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal {
namespace detail {

Result<void> check_layout_fits(const Layout& layout, const TensorAccess::Buffers& buffers) {
  for (uint32_t i = 0; i < layout.buffer_count(); ++i) {
    if (!buffers[i]) return fail(ErrorCode::InvalidArgument, "layout names buffer ", i, " but none was given");
    const ByteExtent extent = layout.byte_extent(i);
    if (extent.begin < 0 || extent.end > static_cast<int64_t>(buffers[i]->size())) {
      return fail(ErrorCode::OutOfRange, "layout needs bytes [", extent.begin, ", ", extent.end, ") of buffer ", i,
                  ", which has ", buffers[i]->size());
    }
  }
  return {};
}

namespace {

Result<Tensor> allocate_tensor(Layout layout, std::optional<MemoryKind> memory, AllocationPurpose purpose) {
  // New layouts are dense from offset 0, so the end of the extent is the size to allocate.
  TensorAccess::Buffers buffers{};
  for (uint32_t i = 0; i < layout.buffer_count(); ++i) {
    const int64_t bytes = layout.byte_extent(i).end;
    // Every buffer of one tensor comes from the kind the first one got.
    const auto kind = i == 0 ? memory : std::optional<MemoryKind>(buffers[0]->kind());
    MEMHAL_ASSIGN_OR_RETURN(buffers[i], allocate(static_cast<std::size_t>(bytes), kind, purpose));
  }
  return TensorAccess::make(std::move(layout), std::move(buffers));
}

// The same image with each plane in a buffer of its own, at offset 0.
Result<Layout> split_planes(const Layout& layout, PixelFormat format) {
  if (!layout.is_multi_plane()) {
    if (layout.shape().size() == 3 && layout.shape()[0] > 1 && is_planar(format)) {
      return fail(ErrorCode::InvalidArgument, to_string(format),
                  " is one strided {c, h, w} tensor: its planes cannot live in separate buffers");
    }
    return layout;
  }
  std::array<PlaneLayout, kMaxPlanes> planes{};
  for (std::size_t i = 0; i < layout.planes().size(); ++i) {
    planes[i] = layout.planes()[i];
    planes[i].buffer = static_cast<uint32_t>(i);
    planes[i].offset = 0;
  }
  return Layout::image_planes(layout.shape()[1], layout.shape()[0], format,
                              std::span(planes.data(), layout.planes().size()), layout.dtype());
}

}  // namespace
}  // namespace detail

Result<Tensor> Tensor::create(std::span<const int64_t> shape, DType dtype, std::optional<MemoryKind> memory,
                              std::string name) {
  MEMHAL_ASSIGN_OR_RETURN(Layout layout, Layout::contiguous(shape, dtype));
  layout.set_name(std::move(name));
  return detail::allocate_tensor(std::move(layout), memory, detail::AllocationPurpose::Tensor);
}

Result<Tensor> Tensor::image(int64_t width, int64_t height, PixelFormat format, std::optional<MemoryKind> memory,
                             DType dtype, int64_t row_align, PlaneBuffers planes) {
  MEMHAL_ASSIGN_OR_RETURN(Layout layout, Layout::image(width, height, format, dtype, row_align));
  if (planes == PlaneBuffers::PerPlane) {
    MEMHAL_ASSIGN_OR_RETURN(layout, detail::split_planes(layout, format));
  }
  return detail::allocate_tensor(std::move(layout), memory, detail::AllocationPurpose::Image);
}

MemoryKind Tensor::memory() const noexcept {
  return buffers_[0]->kind();
}

uint64_t Tensor::buffer_id(std::size_t buffer) const noexcept {
  return buffer < buffers_.size() && buffers_[buffer] ? buffers_[buffer]->id() : 0;
}

Tensor Tensor::held_by(KeepAlive owner) const {
  if (!owner) return *this;
  // Each buffer through an alias whose owner holds the storage and `owner`: same storage
  // pointer (identity), and `owner` lives as long as anything made from the result.
  struct Held {
    Buffers buffers;
    KeepAlive owner;
  };
  const auto held = std::make_shared<const Held>(Held{buffers_, std::move(owner)});
  Buffers buffers{};
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (held->buffers[i]) buffers[i] = std::shared_ptr<detail::Storage>(held, held->buffers[i].get());
  }
  return Tensor(layout_, std::move(buffers));
}

const std::string& Tensor::allocation_notes() const noexcept {
  return buffers_[0]->notes();
}

Result<TensorMap> Tensor::map(CpuAccess access) const {
  if (access == CpuAccess::None || !from_code<CpuAccess>(code(access))) {
    return detail::fail(ErrorCode::InvalidArgument, "map of tensor '", name(), "' with access ", to_string(access),
                        "(code ", code(access), "): ask for read, write or read_write");
  }
  TensorMap map(layout_, access);
  for (uint32_t i = 0; i < layout_.buffer_count(); ++i) {
    auto base = buffers_[i]->begin_access(access);
    if (!base) return unexpected(std::move(base).error());  // ~TensorMap ends the accesses begun so far
    map.buffers_[i] = buffers_[i];
    map.bases_[i] = *base;
  }
  map.element0_ = map.bases_[0] + layout_.offset();
  return map;
}

Result<Tensor> Tensor::view(Result<Layout> layout) const {
  if (!layout) return unexpected(std::move(layout).error());
  return Tensor(std::move(*layout), buffers_);
}

Result<Tensor> Tensor::slice(std::size_t axis, int64_t begin, int64_t end) const {
  return view(layout_.slice(axis, begin, end));
}
Result<Tensor> Tensor::flip(std::size_t axis) const {
  return view(layout_.flip(axis));
}
Result<Tensor> Tensor::transpose(std::size_t a, std::size_t b) const {
  return view(layout_.transpose(a, b));
}
Result<Tensor> Tensor::permute(std::span<const std::size_t> axes) const {
  return view(layout_.permute(axes));
}
Result<Tensor> Tensor::reshape(std::span<const int64_t> shape) const {
  return view(layout_.reshape(shape));
}
Result<Tensor> Tensor::crop(int64_t x, int64_t y, int64_t width, int64_t height) const {
  return view(layout_.crop(x, y, width, height));
}

Result<Tensor> Tensor::materialize(std::optional<MemoryKind> memory) const {
  if (!memory && is_available(this->memory())) memory = this->memory();
  const auto purpose = pixel_format() ? detail::AllocationPurpose::Image : detail::AllocationPurpose::Tensor;
  MEMHAL_ASSIGN_OR_RETURN(Tensor copy, detail::allocate_tensor(layout_.dense(), memory, purpose));
  MEMHAL_TRY(copy_to(copy));
  return copy;
}

Result<void> Tensor::copy_to(const Tensor& dst) const {
  const Layout& to = dst.layout_;
  const bool same_shape = std::equal(shape().begin(), shape().end(), to.shape().begin(), to.shape().end());
  if (!same_shape || dtype() != to.dtype() || pixel_format() != to.pixel_format() ||
      layout_.is_multi_plane() != to.is_multi_plane()) {
    return detail::fail(ErrorCode::InvalidArgument, "copy of tensor '", name(), "' into '", dst.name(),
                        "': shape, dtype or pixel format differ");
  }
  MEMHAL_ASSIGN_OR_RETURN(TensorMap from, map(CpuAccess::Read));
  MEMHAL_ASSIGN_OR_RETURN(TensorMap into, dst.map(CpuAccess::Write));
  if (!layout_.is_multi_plane()) {
    detail::copy_strided(from.data(), strides(), into.data(), to.strides(), shape(), layout_.element_size());
    return {};
  }
  for (std::size_t i = 0; i < layout_.planes().size(); ++i) {
    const PlaneLayout& a = layout_.planes()[i];
    const PlaneLayout& b = to.planes()[i];
    detail::copy_rows(from.plane(i), a.pitch, into.plane(i), b.pitch, a.height, a.row_bytes);
  }
  return {};
}

bool same_storage(const Tensor& a, const Tensor& b) noexcept {
  for (const auto& x : a.buffers_) {
    for (const auto& y : b.buffers_) {
      if (x && y && x->id() == y->id()) return true;
    }
  }
  return false;
}

// ---- TensorMap ----

TensorMap::TensorMap(TensorMap&& other) noexcept
    : layout_(std::move(other.layout_)),
      access_(other.access_),
      buffers_(std::move(other.buffers_)),
      bases_(other.bases_),
      element0_(other.element0_) {
  other.buffers_ = {};
  other.element0_ = nullptr;
}

TensorMap& TensorMap::operator=(TensorMap&& other) noexcept {
  if (this != &other) {
    release();
    layout_ = std::move(other.layout_);
    access_ = other.access_;
    buffers_ = std::move(other.buffers_);
    bases_ = other.bases_;
    element0_ = other.element0_;
    other.buffers_ = {};
    other.element0_ = nullptr;
  }
  return *this;
}

TensorMap::~TensorMap() {
  release();
}

void TensorMap::release() noexcept {
  for (auto& buffer : buffers_) {
    if (buffer) buffer->end_access(access_);
    buffer.reset();
  }
  element0_ = nullptr;
}

std::size_t TensorMap::size_bytes() const noexcept {
  return layout_.is_contiguous() ? static_cast<std::size_t>(layout_.nbytes()) : 0;
}

std::byte* TensorMap::plane(std::size_t index) const noexcept {
  const auto planes = layout_.planes();
  if (index >= planes.size() || !buffers_[planes[index].buffer]) return nullptr;
  return bases_[planes[index].buffer] + planes[index].offset;
}

Result<std::byte*> TensorMap::mutable_data() const {
  if (!can_write(access_)) {
    return detail::fail(ErrorCode::PermissionDenied, "mutable_data of a ", to_string(access_), " map of tensor '",
                        layout_.name(), "': map it for writing, or read through const_data()");
  }
  return element0_;
}

Result<std::byte*> TensorMap::mutable_plane(std::size_t index) const {
  if (!can_write(access_)) {
    return detail::fail(ErrorCode::PermissionDenied, "mutable_plane(", index, ") of a ", to_string(access_),
                        " map of tensor '", layout_.name(), "': map it for writing, or read through const_plane()");
  }
  std::byte* bytes = plane(index);
  if (bytes == nullptr) {
    return detail::fail(ErrorCode::OutOfRange, "mutable_plane(", index, ") of tensor '", layout_.name(),
                        "', which has ", layout_.planes().size(), " planes");
  }
  return bytes;
}

Result<void> TensorMap::check_span(std::size_t element_size, std::optional<DType> wanted, bool any_bytes, bool raw16,
                                   bool writable) const {
  if (!layout_.is_contiguous()) {
    return detail::fail(ErrorCode::InvalidArgument,
                        "typed span of a strided tensor: read it through data() and "
                        "strides(), or materialize it first");
  }
  if (writable && !can_write(access_)) {
    return detail::fail(ErrorCode::PermissionDenied, "writable span through a ", to_string(access_),
                        " map: ask for a const element type or map for writing");
  }
  const bool f16_bits = raw16 && (dtype() == DType::F16 || dtype() == DType::BF16);
  const bool matches = any_bytes || f16_bits || (wanted && *wanted == dtype());
  if (!matches || (!any_bytes && element_size != layout_.element_size())) {
    return detail::fail(ErrorCode::InvalidArgument, "span of ", element_size, "-byte elements over a ",
                        to_string(dtype()), " tensor");
  }
  return {};
}

}  // namespace memhal
