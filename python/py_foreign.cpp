// Foreign memory as memhal tensors, in place through Tensor::wrap: memhal.from_dlpack (DLPack
// 1.x and legacy capsules), memhal.Tensor.from_numpy (any buffer-protocol exporter, as an
// image with format=) and memhal.Tensor.image_from_buffer (bytes with planes). The producer
// stays alive until the last tensor, view, map or frame over its bytes is gone.
#include <memhal/pixel_format.hpp>
#include <memhal/tensor.hpp>

#include <functional>

#include "dlpack.hpp"
#include "py_common.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal::python {
namespace {

// Holds a Python producer's memory for Tensor::wrap: `release` runs once, with the GIL held,
// on whichever thread drops the last holder (also when the wrap fails). It must hold no Python
// references of its own. Past interpreter shutdown the producer is gone with it and the bytes
// are left to the OS.
KeepAlive python_owner(std::function<void()> release) {
  return KeepAlive::of(std::shared_ptr<const void>(nullptr, [release = std::move(release)](const void*) {
    if (!Py_IsInitialized()) return;
    const PyGILState_STATE gil = PyGILState_Ensure();
    release();
    PyGILState_Release(gil);
  }));
}

// A Mem tensor over a producer's bytes: `element0` is the logical element 0, `byte_strides`
// may be negative; `writable` false makes write maps fail with PermissionDenied.
Tensor wrap_foreign(std::byte* element0, DType dtype, std::span<const int64_t> shape,
                    std::span<const int64_t> byte_strides, bool writable, KeepAlive owner) {
  // Tensor::wrap takes the lowest byte the elements reach; negative strides reach below element 0.
  int64_t low = 0;
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  for (std::size_t i = 0; i < shape.size() && !empty; ++i) {
    if (byte_strides[i] < 0) low += (shape[i] - 1) * byte_strides[i];
  }
  const Layout layout = unwrap(Layout::strided(shape, byte_strides, -low, dtype));
  std::byte* base = element0 + low;
  return unwrap(writable ? Tensor::wrap(static_cast<void*>(base), layout, std::move(owner))
                         : Tensor::wrap(static_cast<const void*>(base), layout, std::move(owner)));
}

// `object`'s buffer asked for with `flags`, writable when the exporter allows; `owner` gives
// the buffer back once memhal is done with it.
struct Exported {
  Py_buffer* view;
  bool writable;
  KeepAlive owner;
};

Exported export_buffer(py::handle object, int flags) {
  auto view = std::make_unique<Py_buffer>();
  bool writable = true;
  if (PyObject_GetBuffer(object.ptr(), view.get(), flags | PyBUF_WRITABLE) != 0) {
    PyErr_Clear();
    writable = false;
    if (PyObject_GetBuffer(object.ptr(), view.get(), flags) != 0) throw py::error_already_set();
  }
  Py_buffer* raw = view.release();
  return {raw, writable, python_owner([raw] {
            PyBuffer_Release(raw);
            delete raw;
          })};
}

// The same memory seen through `layout` (its offsets count from the start of `tensor`'s buffer).
Tensor relayout(const Tensor& tensor, Layout layout) {
  const auto& buffers = detail::TensorAccess::buffers(tensor);
  unwrap(detail::check_layout_fits(layout, buffers));
  return detail::TensorAccess::make(std::move(layout), buffers);
}

std::optional<DType> dtype_from_format(const char* format, Py_ssize_t itemsize) {
  std::string_view f = format ? format : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.remove_prefix(1);
  if (f.size() != 1) return std::nullopt;
  const char c = f[0];
  const bool is_signed = std::string_view("bhilqn").find(c) != std::string_view::npos;
  const bool is_unsigned = std::string_view("BHILQN").find(c) != std::string_view::npos;
  if (is_signed || is_unsigned) {
    switch (itemsize) {
      case 1: return is_signed ? DType::I8 : DType::U8;
      case 2: return is_signed ? DType::I16 : DType::U16;
      case 4: return is_signed ? DType::I32 : DType::U32;
      case 8: return is_signed ? DType::I64 : DType::U64;
      default: return std::nullopt;
    }
  }
  if (c == 'e' && itemsize == 2) return DType::F16;
  if (c == 'f' && itemsize == 4) return DType::F32;
  if (c == 'd' && itemsize == 8) return DType::F64;
  return std::nullopt;
}

std::optional<DType> dtype_from_dlpack(const dlpack::DLDataType& t) {
  if (t.lanes != 1) return std::nullopt;
  auto pick = [&](DType d8, DType d16, DType d32, DType d64) -> std::optional<DType> {
    switch (t.bits) {
      case 8: return d8;
      case 16: return d16;
      case 32: return d32;
      case 64: return d64;
      default: return std::nullopt;
    }
  };
  switch (t.code) {
    case dlpack::kDLInt: return pick(DType::I8, DType::I16, DType::I32, DType::I64);
    case dlpack::kDLUInt: return pick(DType::U8, DType::U16, DType::U32, DType::U64);
    case dlpack::kDLFloat:
      if (t.bits == 16) return DType::F16;
      if (t.bits == 32) return DType::F32;
      if (t.bits == 64) return DType::F64;
      return std::nullopt;
    case dlpack::kDLBfloat: return t.bits == 16 ? std::optional<DType>(DType::BF16) : std::nullopt;
    default: return std::nullopt;
  }
}

// "(3, 4)", for messages.
std::string dims(std::span<const int64_t> values) {
  std::string out = "(";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + (values.size() == 1 ? ",)" : ")");
}

// A 2-D array of rows in numpy's (and OpenCV's) convention for a multi-plane YUV image: the
// planes one after another, chroma rows as wide as luma rows (nv12, nv21: {h * 3 / 2, w};
// nv16: {2h, w}) or, where they are not (i420: {h * 3 / 2, w}; nv24: {3h, w}), packed rows.
Layout yuv_rows_layout(const Layout& array, PixelFormat format, const PixelFormatInfo& info) {
  const auto element = static_cast<int64_t>(array.element_size());
  const bool rows = array.rank() == 2 && array.strides()[1] == element && array.strides()[0] > 0;
  // Samples of every plane per luma sample, scaled by the chroma subsampling to stay whole.
  const int64_t scale = int64_t{1} << (info.chroma_shift_x + info.chroma_shift_y);
  int64_t units = scale;
  for (std::size_t i = 1; i < info.planes; ++i) units += info.plane_bytes_per_pixel[i];
  if (!rows || array.shape()[0] * scale % units != 0) {
    raise(ErrorCode::InvalidArgument,
          "from_numpy: a " + std::string(to_string(format)) + " image is one 2-D array of " + std::to_string(units) +
              "/" + std::to_string(scale) + " x height rows of width adjacent elements; got shape " +
              dims(array.shape()) + " with strides " + dims(array.strides()));
  }
  const int64_t width = array.shape()[1], height = array.shape()[0] * scale / units, pitch = array.strides()[0];
  std::array<PlaneLayout, kMaxPlanes> planes{};
  int64_t offset = array.offset();
  for (std::size_t i = 0; i < info.planes; ++i) {
    const int64_t row_bytes = (i ? width >> info.chroma_shift_x : width) * info.plane_bytes_per_pixel[i] * element;
    if (row_bytes != width * element && pitch != width * element) {
      raise(ErrorCode::InvalidArgument, "from_numpy: the " + std::string(to_string(format)) + " plane " +
                                            std::to_string(i) + " has rows of " + std::to_string(row_bytes) +
                                            " bytes, which padded rows of " + std::to_string(pitch) +
                                            " bytes cannot hold: pass an array without row padding");
    }
    planes[i] = PlaneLayout{0, offset, row_bytes == width * element ? pitch : row_bytes};
    offset += (i ? height >> info.chroma_shift_y : height) * planes[i].pitch;
  }
  return unwrap(Layout::image_planes(width, height, format, std::span(planes.data(), info.planes), array.dtype()));
}

// An array in numpy's image conventions as an image of `format` over the same memory:
// {h, w, c} interleaved (grey also {h, w}), {c, h, w} planar RGB(A), and multi-plane YUV as
// `yuv_rows_layout` describes.
Tensor as_image(const Tensor& array, PixelFormat format) {
  const auto info = pixel_format_info(format);
  const Layout& layout = array.layout();
  if (info->yuv && info->planes > 1) return relayout(array, yuv_rows_layout(layout, format, *info));
  if (format == PixelFormat::Grey && layout.rank() == 2) {
    const std::array<int64_t, 3> shape{layout.shape()[0], layout.shape()[1], 1};
    const std::array<int64_t, 3> strides{layout.strides()[0], layout.strides()[1],
                                         static_cast<int64_t>(layout.element_size())};
    const Layout grey = unwrap(Layout::strided(shape, strides, layout.offset(), layout.dtype()));
    return relayout(array, unwrap(grey.with_pixel_format(format)));
  }
  return relayout(array, unwrap(layout.with_pixel_format(format)));
}

Tensor from_buffer(py::handle object, bool copy, py::handle memory, py::handle format) {
  const auto kind = to_optional_vocabulary<MemoryKind>(memory, "from_numpy");
  const auto image_format = to_optional_vocabulary<PixelFormat>(format, "from_numpy");
  if (!copy && kind && *kind != MemoryKind::Mem)
    raise(ErrorCode::InvalidArgument, "from_numpy without copy wraps the array's own memory (mem); asked for " +
                                          std::string(to_string(*kind)) + ": pass copy=True");
  Exported exported = export_buffer(object, PyBUF_RECORDS_RO);
  const Py_buffer& view = *exported.view;
  const auto dtype = dtype_from_format(view.format, view.itemsize);
  if (!dtype) {
    raise(ErrorCode::InvalidArgument, "from_numpy: buffer format '" + std::string(view.format ? view.format : "B") +
                                          "' (itemsize " + std::to_string(view.itemsize) +
                                          ") is not a memhal dtype (u8..u64, i8..i64, f16, f32, f64)");
  }
  const std::vector<int64_t> shape(view.shape, view.shape + view.ndim);
  const std::vector<int64_t> strides(view.strides, view.strides + view.ndim);
  Tensor tensor = wrap_foreign(static_cast<std::byte*>(view.buf), *dtype, shape, strides, exported.writable,
                               std::move(exported.owner));
  if (image_format) tensor = as_image(tensor, *image_format);
  if (!copy) return tensor;
  py::gil_scoped_release unlocked;
  return unwrap(tensor.materialize(kind));
}

// The capsule of `object.__dlpack__`, asking for DLPack 1.x and falling back to the legacy
// call for producers (numpy 1.24) that take no max_version.
py::object dlpack_capsule(py::handle object) {
  if (PyCapsule_CheckExact(object.ptr())) return py::reinterpret_borrow<py::object>(object);
  if (py::hasattr(object, "__dlpack_device__")) {
    const int64_t type = dlpack_device_type(object.attr("__dlpack_device__")(), "the producer's __dlpack_device__()");
    if (type != dlpack::kDLCPU && type != dlpack::kDLCUDAHost)
      throw py::buffer_error("memhal.from_dlpack: the producer's memory is on DLPack device type " +
                             std::to_string(type) + "; memhal imports host memory only (kDLCPU, kDLCUDAHost)");
  }
  try {
    return object.attr("__dlpack__")(py::arg("max_version") =
                                         py::make_tuple(dlpack::kMajorVersion, dlpack::kMinorVersion));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  return object.attr("__dlpack__")();
}

Tensor from_dlpack(py::handle object) {
  py::object capsule = dlpack_capsule(object);
  const bool versioned = PyCapsule_IsValid(capsule.ptr(), dlpack::kVersionedName) != 0;
  if (!versioned && PyCapsule_IsValid(capsule.ptr(), dlpack::kLegacyName) == 0)
    raise(ErrorCode::InvalidArgument, "memhal.from_dlpack: not an unconsumed DLPack capsule");
  void* pointer = PyCapsule_GetPointer(capsule.ptr(), versioned ? dlpack::kVersionedName : dlpack::kLegacyName);
  auto* v = versioned ? static_cast<dlpack::DLManagedTensorVersioned*>(pointer) : nullptr;
  auto* l = versioned ? nullptr : static_cast<dlpack::DLManagedTensor*>(pointer);
  if (v && v->version.major != dlpack::kMajorVersion)
    throw py::buffer_error("memhal.from_dlpack: DLPack major version " + std::to_string(v->version.major) +
                           " is not supported (memhal reads 1.x)");
  const dlpack::DLTensor& dl = v ? v->dl_tensor : l->dl_tensor;
  if (dl.device.device_type != dlpack::kDLCPU && dl.device.device_type != dlpack::kDLCUDAHost)
    throw py::buffer_error("memhal.from_dlpack: DLPack device type " + std::to_string(dl.device.device_type) +
                           " is not host memory");
  const auto dtype = dtype_from_dlpack(dl.dtype);
  if (!dtype)
    raise(ErrorCode::InvalidArgument, "memhal.from_dlpack: DLPack dtype (code " + std::to_string(dl.dtype.code) + ", " +
                                          std::to_string(dl.dtype.bits) + " bits, " + std::to_string(dl.dtype.lanes) +
                                          " lanes) is not a memhal dtype");
  if (dl.ndim < 0 || static_cast<std::size_t>(dl.ndim) > kMaxRank)
    raise(ErrorCode::InvalidArgument,
          "memhal.from_dlpack: rank " + std::to_string(dl.ndim) + " above " + std::to_string(kMaxRank));
  const auto itemsize = static_cast<int64_t>(size_of(*dtype));
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides(shape.size());
  int64_t running = itemsize;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = dl.strides ? dl.strides[i] * itemsize : running;
    running *= std::max<int64_t>(shape[i], 1);
  }
  const bool writable = !(v && (v->flags & dlpack::kFlagReadOnly));
  // From here the capsule's tensor is ours: mark it consumed so its destructor leaves it alone.
  if (PyCapsule_SetName(capsule.ptr(), versioned ? dlpack::kVersionedUsedName : dlpack::kLegacyUsedName) != 0)
    throw py::error_already_set();
  KeepAlive owner = python_owner([v, l] {
    if (v && v->deleter) v->deleter(v);
    if (l && l->deleter) l->deleter(l);
  });
  auto* element0 = static_cast<std::byte*>(dl.data) + dl.byte_offset;
  return wrap_foreign(element0, *dtype, shape, strides, writable, std::move(owner));
}

// The bytes of any buffer-protocol object (one contiguous buffer) or host DLPack exporter.
Tensor exported_bytes(py::handle object) {
  if (PyObject_CheckBuffer(object.ptr()) != 0) {
    Exported exported = export_buffer(object, PyBUF_SIMPLE);
    const std::array<int64_t, 1> shape{exported.view->len}, strides{1};
    return wrap_foreign(static_cast<std::byte*>(exported.view->buf), DType::U8, shape, strides, exported.writable,
                        std::move(exported.owner));
  }
  if (!py::hasattr(object, "__dlpack__")) {
    raise(ErrorCode::InvalidArgument,
          "image_from_buffer: expected a buffer-protocol object or a DLPack exporter, got " + type_name(object));
  }
  Tensor tensor = from_dlpack(object);
  if (!tensor.is_contiguous())
    raise(ErrorCode::InvalidArgument, "image_from_buffer: the DLPack tensor is strided, not one run of bytes");
  return tensor;
}

// One value per plane of an image: None (the default), an int for every plane, or a sequence.
std::vector<int64_t> per_plane(py::handle value, std::size_t planes, PixelFormat format, const char* what,
                               const std::vector<int64_t>& fallback) {
  if (value.is_none()) return fallback;
  if (py::isinstance<py::int_>(value)) return std::vector<int64_t>(planes, to_int64(value, what));
  std::vector<int64_t> out = to_shape(value);
  if (out.size() != planes) {
    raise(ErrorCode::InvalidArgument, "image_from_buffer: " + std::string(to_string(format)) + " has " +
                                          std::to_string(planes) + " planes, " + std::to_string(out.size()) + " " +
                                          what + " were given");
  }
  return out;
}

// An image over the bytes of `object` in place: plane i at byte offsets[i] with row pitch
// strides[i]; by default packed rows, each plane right after the last.
Tensor image_from_buffer(py::handle object, int64_t width, int64_t height, py::handle format_arg, py::handle strides,
                         py::handle offsets) {
  const auto format = to_vocabulary<PixelFormat>(format_arg, "image_from_buffer");
  const auto info = *pixel_format_info(format);
  unwrap(Layout::image(width, height, format, DType::U8, 1));  // a valid size before any arithmetic on it
  std::vector<int64_t> packed_pitches;
  for (std::size_t i = 0; i < info.planes; ++i)
    packed_pitches.push_back((i ? width >> info.chroma_shift_x : width) * info.plane_bytes_per_pixel[i]);
  const auto pitches = per_plane(strides, info.planes, format, "strides", packed_pitches);
  for (int64_t pitch : pitches) {
    if (pitch < 0 || pitch > (int64_t{1} << 32))
      raise(ErrorCode::InvalidArgument, "image_from_buffer: pitch " + std::to_string(pitch) + " is outside [0, 2**32]");
  }
  std::vector<int64_t> packed_offsets{0};
  for (std::size_t i = 1; i < info.planes; ++i)
    packed_offsets.push_back(packed_offsets.back() + pitches[i - 1] * (i > 1 ? height >> info.chroma_shift_y : height));
  const auto starts = per_plane(offsets, info.planes, format, "offsets", packed_offsets);
  std::array<PlaneLayout, kMaxPlanes> planes{};
  for (std::size_t i = 0; i < info.planes; ++i) planes[i] = PlaneLayout{0, starts[i], pitches[i]};
  const Layout layout = unwrap(Layout::image_planes(width, height, format, std::span(planes.data(), info.planes)));
  Tensor bytes = exported_bytes(object);
  if (layout.byte_extent().end > bytes.nbytes()) {
    raise(ErrorCode::OutOfRange, "image_from_buffer: " + std::string(to_string(format)) + " " + std::to_string(width) +
                                     "x" + std::to_string(height) + " needs " +
                                     std::to_string(layout.byte_extent().end) + " bytes, the " + type_name(object) +
                                     " has " + std::to_string(bytes.nbytes()));
  }
  return relayout(bytes, layout);
}

}  // namespace

// The array-API `from_dlpack(x, *, device=None, copy=None)`: memhal imports host memory only,
// never copies unless copy=True (then into `memory`, default mem).
static Tensor from_dlpack_api(py::handle object, py::handle device, py::handle copy, py::handle memory) {
  if (!device.is_none()) {
    const bool cpu = py::isinstance<py::str>(device)
                         ? device.cast<std::string>() == "cpu"
                         : dlpack_device_type(device, "memhal.from_dlpack: device") == dlpack::kDLCPU;
    if (!cpu) throw py::buffer_error("memhal.from_dlpack: memhal tensors live on the CPU; device must be None or cpu");
  }
  Tensor tensor = from_dlpack(object);
  if (copy.is_none() || !copy.cast<bool>()) return tensor;
  const auto kind = to_optional_vocabulary<MemoryKind>(memory, "from_dlpack");
  py::gil_scoped_release unlocked;
  return unwrap(tensor.materialize(kind.value_or(MemoryKind::Mem)));
}

void bind_foreign(py::module_& m) {
  m.def("from_dlpack", &from_dlpack_api, py::arg("obj"), py::kw_only(), py::arg("device") = py::none(),
        py::arg("copy") = py::none(), py::arg("memory") = py::none(),
        "A tensor over the memory of any DLPack producer (numpy, torch, ...), without copying; the producer "
        "stays alive while any tensor over it lives. Read-only DLPack 1.x tensors map for reading only. "
        "copy=True makes a dense copy in `memory` (default mem); device must be None or the CPU.");
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def_static("from_dlpack", &from_dlpack_api, py::arg("obj"), py::kw_only(), py::arg("device") = py::none(),
                    py::arg("copy") = py::none(), py::arg("memory") = py::none(), "As memhal.from_dlpack.");
  tensor.def_static("from_numpy", &from_buffer, py::arg("array"), py::arg("copy") = false,
                    py::arg("memory") = py::none(), py::kw_only(), py::arg("format") = py::none(),
                    "A tensor over a numpy array (any buffer-protocol object); copy=False shares its memory and keeps "
                    "it alive; read-only arrays give tensors that map for reading only. copy=True makes a dense copy "
                    "in `memory`. format= makes an image of an image-shaped array: {h, w, c} interleaved (grey also "
                    "{h, w}), {c, h, w} planar_rgb(a), and multi-plane YUV as one 2-D array of rows as OpenCV has "
                    "them: nv12, nv21, i420 {h * 3 / 2, w}; nv16 {2h, w}; nv24 {3h, w} (i420 and nv24 without row "
                    "padding).");
  tensor.def_static("image_from_buffer", &image_from_buffer, py::arg("obj"), py::arg("width"), py::arg("height"),
                    py::arg("format"), py::arg("strides") = py::none(), py::arg("offsets") = py::none(),
                    "An image of `format` over the bytes of any buffer-protocol object (bytes, bytearray, mmap, a "
                    "numpy array, a GStreamer map) or host DLPack exporter, without copying; the exporter stays "
                    "alive while any tensor, map or frame over it lives, and a read-only one gives a tensor that "
                    "maps for reading only. strides: each plane's row pitch in bytes (an int for all, or one per "
                    "plane); offsets: each plane's first byte. By default rows are packed and each plane follows "
                    "the last.");
}

}  // namespace memhal::python
