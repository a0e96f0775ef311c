// Tensors, views and CPU mappings for C.
#include <vector>

#include "c_api/c_api.hpp"

using namespace memhal;
using memhal::c_api::checked;
using memhal::c_api::fail;
using memhal::c_api::give_tensor;
using memhal::c_api::guarded;

namespace {

constexpr int kInvalid = static_cast<int>(ErrorCode::InvalidArgument);

int copy_dims(std::span<const int64_t> dims, int64_t* out, size_t capacity, size_t* rank) {
  MEMHAL_C_REQUIRE(rank != nullptr && (out != nullptr || capacity == 0), "NULL output");
  for (size_t i = 0; i < dims.size() && i < capacity; ++i) out[i] = dims[i];
  *rank = dims.size();
  return MEMHAL_OK;
}

template <class View>
int view_of(const memhal_tensor_t* tensor, memhal_tensor_t** out, View&& view) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(tensor != nullptr && out != nullptr, "view of a NULL tensor or into a NULL output");
    return give_tensor(view(tensor->tensor), out);
  });
}

// The planes a C caller described, with their reserved fields checked.
int read_planes(const memhal_plane_t* planes, size_t count, const char* function, std::vector<PlaneLayout>& out) {
  for (size_t i = 0; i < count; ++i) {
    MEMHAL_C_REQUIRE(planes[i].reserved == 0, std::string(function) + ": planes[" + std::to_string(i) +
                                                  "].reserved is " + std::to_string(planes[i].reserved) +
                                                  "; memhal_plane_t.reserved must be 0");
    out.push_back({planes[i].buffer, planes[i].offset, planes[i].pitch, 0, 0, 0});
  }
  return MEMHAL_OK;
}

// Tensor::wrap for C: `owner` holds the caller's release callback, so every return before the
// tensor takes it over (an error) calls it once.
int wrap(const void* data, Result<Layout> layout, uint32_t access, KeepAlive owner, memhal_tensor_t** out) {
  auto cpu = checked<CpuAccess>(access, "cpu access");
  if (!cpu) return kInvalid;
  MEMHAL_C_REQUIRE(*cpu != CpuAccess::None, "memhal_tensor_wrap: access none; wrapped memory is read or written");
  if (!layout) return fail(layout.error());
  return give_tensor(can_write(*cpu) ? Tensor::wrap(const_cast<void*>(data), *layout, std::move(owner))
                                     : Tensor::wrap(data, *layout, std::move(owner)),
                     out);
}

KeepAlive owner_of(memhal_release_fn release, void* user_data) {
  // A shared_ptr that fails to allocate calls its deleter before it throws: release still runs once.
  return release ? KeepAlive::of(std::shared_ptr<void>(user_data, release)) : KeepAlive();
}

}  // namespace

extern "C" {

int memhal_tensor_wrap(const void* data, const int64_t* shape, const int64_t* strides, size_t rank, int64_t offset,
                       uint32_t dtype, uint32_t access, memhal_release_fn release, void* user_data,
                       memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    KeepAlive owner = owner_of(release, user_data);
    MEMHAL_C_REQUIRE(out != nullptr && ((shape != nullptr && strides != nullptr) || rank == 0),
                     "memhal_tensor_wrap: NULL argument");
    auto type = checked<DType>(dtype, "dtype");
    if (!type) return kInvalid;
    return wrap(
        data,
        Layout::strided(std::span<const int64_t>(shape, rank), std::span<const int64_t>(strides, rank), offset, *type),
        access, std::move(owner), out);
  });
}

int memhal_tensor_wrap_image(const void* data, int64_t width, int64_t height, uint32_t pixel_format,
                             const memhal_plane_t* planes, size_t plane_count, uint32_t access,
                             memhal_release_fn release, void* user_data, memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    KeepAlive owner = owner_of(release, user_data);
    MEMHAL_C_REQUIRE(out != nullptr && (planes != nullptr || plane_count == 0),
                     "memhal_tensor_wrap_image: NULL argument");
    MEMHAL_C_REQUIRE(plane_count <= kMaxPlanes,
                     "memhal_tensor_wrap_image: " + std::to_string(plane_count) + " planes; an image has at most 4");
    auto format = checked<PixelFormat>(pixel_format, "pixel format");
    if (!format) return kInvalid;
    std::vector<PlaneLayout> described;
    if (const int status = read_planes(planes, plane_count, "memhal_tensor_wrap_image", described)) return status;
    // No planes: packed, as numpy, OpenCV and raw files lay them out.
    return wrap(data,
                described.empty() ? Layout::image(width, height, *format, DType::U8, 1)
                                  : Layout::image_planes(width, height, *format, described),
                access, std::move(owner), out);
  });
}

int memhal_tensor_create(const int64_t* shape, size_t rank, uint32_t dtype, int32_t memory, const char* name,
                         memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr && (shape != nullptr || rank == 0), "memhal_tensor_create: NULL argument");
    auto type = checked<DType>(dtype, "dtype");
    bool ok = false;
    auto kind = c_api::memory_choice(memory, ok);
    if (!type || !ok) return kInvalid;
    return give_tensor(Tensor::create(std::span<const int64_t>(shape, rank), *type, kind, name ? name : ""), out);
  });
}

int memhal_tensor_image(int64_t width, int64_t height, uint32_t pixel_format, int32_t memory, uint32_t dtype,
                        memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr, "memhal_tensor_image: out is NULL");
    auto format = checked<PixelFormat>(pixel_format, "pixel format");
    auto type = checked<DType>(dtype, "dtype");
    bool ok = false;
    auto kind = c_api::memory_choice(memory, ok);
    if (!format || !type || !ok) return kInvalid;
    return give_tensor(Tensor::image(width, height, *format, kind, *type), out);
  });
}

int memhal_tensor_from_fd(int fd, const int64_t* shape, const int64_t* strides, size_t rank, int64_t offset,
                          uint32_t dtype, int32_t memory, memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr && ((shape != nullptr && strides != nullptr) || rank == 0),
                     "memhal_tensor_from_fd: NULL argument");
    auto type = checked<DType>(dtype, "dtype");
    bool ok = false;
    auto kind = c_api::memory_choice(memory, ok);
    if (!type || !ok) return kInvalid;
    auto layout =
        Layout::strided(std::span<const int64_t>(shape, rank), std::span<const int64_t>(strides, rank), offset, *type);
    if (!layout) return fail(layout.error());
    return give_tensor(Tensor::from_fd(fd, *layout, kind), out);
  });
}

int memhal_tensor_from_planes(const int* fds, size_t fd_count, int64_t width, int64_t height, uint32_t pixel_format,
                              const memhal_plane_t* planes, size_t plane_count, int32_t memory, memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr && fds != nullptr && planes != nullptr, "memhal_tensor_from_planes: NULL argument");
    MEMHAL_C_REQUIRE(plane_count <= kMaxPlanes && fd_count <= kMaxPlanes, "more than 4 planes or fds");
    auto format = checked<PixelFormat>(pixel_format, "pixel format");
    bool ok = false;
    auto kind = c_api::memory_choice(memory, ok);
    if (!format || !ok) return kInvalid;
    std::vector<PlaneLayout> described;
    if (const int status = read_planes(planes, plane_count, "memhal_tensor_from_planes", described)) return status;
    auto layout = Layout::image_planes(width, height, *format, described);
    if (!layout) return fail(layout.error());
    return give_tensor(Tensor::from_planes(std::span<const int>(fds, fd_count), *layout, kind), out);
  });
}

void memhal_tensor_free(memhal_tensor_t* tensor) {
  delete tensor;
}

int memhal_tensor_rank(const memhal_tensor_t* tensor, size_t* out) {
  return c_api::read_field(tensor, out, "memhal_tensor_rank", [](const auto& x) { return x.tensor.rank(); });
}

int memhal_tensor_shape(const memhal_tensor_t* tensor, int64_t* shape, size_t capacity, size_t* rank) {
  MEMHAL_C_REQUIRE(tensor != nullptr, "memhal_tensor_shape: tensor is NULL");
  return copy_dims(tensor->tensor.shape(), shape, capacity, rank);
}

int memhal_tensor_strides(const memhal_tensor_t* tensor, int64_t* strides, size_t capacity, size_t* rank) {
  MEMHAL_C_REQUIRE(tensor != nullptr, "memhal_tensor_strides: tensor is NULL");
  return copy_dims(tensor->tensor.strides(), strides, capacity, rank);
}

int memhal_tensor_dtype(const memhal_tensor_t* tensor, uint32_t* out) {
  return c_api::read_field(tensor, out, "memhal_tensor_dtype", [](const auto& x) { return code(x.tensor.dtype()); });
}

int memhal_tensor_memory(const memhal_tensor_t* tensor, uint32_t* out) {
  return c_api::read_field(tensor, out, "memhal_tensor_memory", [](const auto& x) { return code(x.tensor.memory()); });
}

int memhal_tensor_pixel_format(const memhal_tensor_t* tensor, uint32_t* out) {
  return c_api::read_field(tensor, out, "memhal_tensor_pixel_format", [](const auto& x) {
    const auto format = x.tensor.pixel_format();
    return format ? code(*format) : 0u;
  });
}

int memhal_tensor_nbytes(const memhal_tensor_t* tensor, int64_t* out) {
  return c_api::read_field(tensor, out, "memhal_tensor_nbytes", [](const auto& x) { return x.tensor.nbytes(); });
}

int memhal_tensor_name(const memhal_tensor_t* tensor, const char** out) {
  return c_api::read_field(tensor, out, "memhal_tensor_name", [](const auto& x) { return x.tensor.name().c_str(); });
}

int memhal_tensor_allocation_notes(const memhal_tensor_t* tensor, const char** out) {
  return c_api::read_field(tensor, out, "memhal_tensor_allocation_notes",
                           [](const auto& x) { return x.tensor.allocation_notes().c_str(); });
}

int memhal_tensor_clone_fd(const memhal_tensor_t* tensor, size_t buffer, int* out) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(tensor != nullptr && out != nullptr, "memhal_tensor_clone_fd: NULL argument");
    auto fd = tensor->tensor.clone_fd(buffer);
    if (!fd) return fail(fd.error());
    *out = fd->release();
    return MEMHAL_OK;
  });
}

int memhal_tensor_slice(const memhal_tensor_t* tensor, size_t axis, int64_t begin, int64_t end, memhal_tensor_t** out) {
  return view_of(tensor, out, [&](const Tensor& t) { return t.slice(axis, begin, end); });
}

int memhal_tensor_flip(const memhal_tensor_t* tensor, size_t axis, memhal_tensor_t** out) {
  return view_of(tensor, out, [&](const Tensor& t) { return t.flip(axis); });
}

int memhal_tensor_transpose(const memhal_tensor_t* tensor, size_t a, size_t b, memhal_tensor_t** out) {
  return view_of(tensor, out, [&](const Tensor& t) { return t.transpose(a, b); });
}

int memhal_tensor_permute(const memhal_tensor_t* tensor, const size_t* axes, size_t count, memhal_tensor_t** out) {
  c_api::clear(out);
  if (axes == nullptr && count > 0) return fail(ErrorCode::InvalidArgument, "memhal_tensor_permute: axes is NULL");
  return view_of(tensor, out, [&](const Tensor& t) { return t.permute(std::span<const size_t>(axes, count)); });
}

int memhal_tensor_reshape(const memhal_tensor_t* tensor, const int64_t* shape, size_t rank, memhal_tensor_t** out) {
  c_api::clear(out);
  if (shape == nullptr && rank > 0) return fail(ErrorCode::InvalidArgument, "memhal_tensor_reshape: shape is NULL");
  return view_of(tensor, out, [&](const Tensor& t) { return t.reshape(std::span<const int64_t>(shape, rank)); });
}

int memhal_tensor_crop(const memhal_tensor_t* tensor, int64_t x, int64_t y, int64_t width, int64_t height,
                       memhal_tensor_t** out) {
  return view_of(tensor, out, [&](const Tensor& t) { return t.crop(x, y, width, height); });
}

int memhal_tensor_materialize(const memhal_tensor_t* tensor, int32_t memory, memhal_tensor_t** out) {
  c_api::clear(out);
  bool ok = false;
  auto kind = c_api::memory_choice(memory, ok);
  if (!ok) return kInvalid;
  return view_of(tensor, out, [&](const Tensor& t) { return t.materialize(kind); });
}

int memhal_tensor_map(const memhal_tensor_t* tensor, uint32_t access, memhal_map_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(tensor != nullptr && out != nullptr, "memhal_tensor_map: NULL argument");
    auto kind = checked<CpuAccess>(access, "cpu access");
    if (!kind) return kInvalid;
    auto map = tensor->tensor.map(*kind);
    if (!map) return fail(map.error());
    *out = new memhal_map{std::move(*map)};
    return MEMHAL_OK;
  });
}

void* memhal_map_data(const memhal_map_t* map) {
  return map ? map->map.data() : nullptr;
}
size_t memhal_map_size(const memhal_map_t* map) {
  return map ? map->map.size_bytes() : 0;
}
void* memhal_map_plane(const memhal_map_t* map, size_t index) {
  return map ? map->map.plane(index) : nullptr;
}
void memhal_map_free(memhal_map_t* map) {
  delete map;
}

}  // extern "C"
