// Foreign memory as memhal tensors: memhal.from_dlpack (DLPack 1.x and legacy capsules) and
// memhal.Tensor.from_numpy (any buffer-protocol exporter). The producer stays alive until the
// last tensor or view over its bytes is gone.
#include "py_foreign.hpp"

#include "dlpack.hpp"
#include "storage/storage.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal::python {
namespace {

class ForeignStorage final : public detail::Storage {
 public:
  ForeignStorage(std::byte* base, std::size_t size, bool writable, std::string what, std::function<void()> release)
      : base_(base), size_(size), writable_(writable), what_(std::move(what)), release_(std::move(release)) {}
  ~ForeignStorage() override {
    // Past interpreter shutdown the producer is gone with it; the bytes are left to the OS.
    if (!release_ || !Py_IsInitialized()) return;
    const PyGILState_STATE gil = PyGILState_Ensure();
    release_();
    PyGILState_Release(gil);
  }
  MemoryKind kind() const noexcept override { return MemoryKind::Mem; }
  std::size_t size() const noexcept override { return size_; }
  Result<std::byte*> begin_access(CpuAccess access) override {
    if (can_write(access) && !writable_) {
      return unexpected(Error(ErrorCode::PermissionDenied, "write access to " + std::to_string(size_) +
                                                               " bytes of a read-only " + what_ +
                                                               ": map for 'read' or materialize first"));
    }
    return base_;
  }
  void end_access(CpuAccess) noexcept override {}

 private:
  std::byte* base_;
  std::size_t size_;
  bool writable_;
  std::string what_;
  std::function<void()> release_;
};

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

Tensor from_buffer(py::handle object, bool copy, py::handle memory) {
  const auto kind = to_optional_vocabulary<MemoryKind>(memory, "from_numpy");
  if (!copy && kind && *kind != MemoryKind::Mem)
    raise(ErrorCode::InvalidArgument, "from_numpy without copy wraps the array's own memory (mem); asked for " +
                                          std::string(to_string(*kind)) + ": pass copy=True");
  auto view = std::make_unique<Py_buffer>();
  bool writable = true;
  if (PyObject_GetBuffer(object.ptr(), view.get(), PyBUF_RECORDS) != 0) {
    PyErr_Clear();
    writable = false;
    if (PyObject_GetBuffer(object.ptr(), view.get(), PyBUF_RECORDS_RO) != 0) throw py::error_already_set();
  }
  const auto dtype = dtype_from_format(view->format, view->itemsize);
  const std::string format = view->format ? view->format : "B";
  const Py_ssize_t itemsize = view->itemsize;
  std::vector<int64_t> shape(view->shape, view->shape + view->ndim);
  std::vector<int64_t> strides(view->strides, view->strides + view->ndim);
  Py_buffer* raw = view.release();
  auto release = [raw] {
    PyBuffer_Release(raw);
    delete raw;
  };
  if (!dtype) {
    release();
    raise(ErrorCode::InvalidArgument, "from_numpy: buffer format '" + format + "' (itemsize " +
                                          std::to_string(itemsize) +
                                          ") is not a memhal dtype (u8..u64, i8..i64, f16, f32, f64)");
  }
  Tensor tensor = wrap_foreign(static_cast<std::byte*>(raw->buf), *dtype, shape, strides, writable,
                               std::string(py::str(object.get_type().attr("__name__"))), release);
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
  std::function<void()> release = v ? std::function<void()>([v] {
    if (v->deleter) v->deleter(v);
  })
                                    : std::function<void()>([l] {
                                        if (l->deleter) l->deleter(l);
                                      });
  auto* element0 = static_cast<std::byte*>(dl.data) + dl.byte_offset;
  return wrap_foreign(element0, *dtype, shape, strides, writable, "DLPack tensor", std::move(release));
}

}  // namespace

Tensor wrap_foreign(std::byte* element0, DType dtype, std::span<const int64_t> shape,
                    std::span<const int64_t> byte_strides, bool writable, std::string what,
                    std::function<void()> release) {
  int64_t low = 0;
  int64_t high = static_cast<int64_t>(size_of(dtype));
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) low = high = 0;
  }
  if (high > 0) {
    for (std::size_t i = 0; i < shape.size(); ++i) {
      (byte_strides[i] < 0 ? low : high) += (shape[i] - 1) * byte_strides[i];
    }
  }
  auto storage = std::make_shared<ForeignStorage>(element0 + low, static_cast<std::size_t>(high - low), writable,
                                                  std::move(what), std::move(release));
  Layout layout = unwrap(Layout::strided(shape, byte_strides, -low, dtype));
  detail::TensorAccess::Buffers buffers{};
  buffers[0] = std::move(storage);
  unwrap(detail::check_layout_fits(layout, buffers));
  return detail::TensorAccess::make(std::move(layout), std::move(buffers));
}

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
                    py::arg("copy") = py::none(), py::arg("memory") = py::none());
  tensor.def_static(
      "from_numpy", [](py::handle a, bool copy, py::handle memory) { return from_buffer(a, copy, memory); },
      py::arg("array"), py::arg("copy") = false, py::arg("memory") = py::none(),
      "A tensor over a numpy array (any buffer-protocol object); copy=False shares its memory and keeps it alive; "
      "read-only arrays give tensors that map for reading only. copy=True makes a dense copy in `memory`.");
}

}  // namespace memhal::python
