// Tensor.__dlpack__ / __dlpack_device__ (array-API standard): the legacy "dltensor" capsule
// for consumers that pass no max_version (numpy 1.24, torch 1.13), the versioned DLPack 1.0
// capsule with its read-only and is-copied flags for those that do. Negative strides travel
// only in the versioned capsule (a legacy request gets a BufferError, or a copy with
// copy=True). The capsule holds a CPU map of the tensor for as long as the consumer holds the
// DLPack tensor.
#include <memhal/tensor.hpp>

#include "dlpack.hpp"
#include "py_common.hpp"

namespace memhal::python {
namespace {

struct Export {
  explicit Export(Tensor t) : tensor(std::move(t)) {}
  Tensor tensor;
  std::optional<TensorMap> map;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  dlpack::DLManagedTensor legacy{};
  dlpack::DLManagedTensorVersioned versioned{};
};

dlpack::DLDataType dlpack_dtype(DType dtype) {
  const auto bits = static_cast<uint8_t>(size_of(dtype) * 8);
  switch (dtype) {
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: return {dlpack::kDLInt, bits, 1};
    case DType::F16:
    case DType::F32:
    case DType::F64: return {dlpack::kDLFloat, bits, 1};
    case DType::BF16: return {dlpack::kDLBfloat, bits, 1};
    default: return {dlpack::kDLUInt, bits, 1};
  }
}

void legacy_capsule_destructor(PyObject* capsule) {
  // A consumer renames the capsule once it owns the tensor; an unconsumed one is ours to free.
  if (PyCapsule_IsValid(capsule, dlpack::kLegacyName) == 0) return;
  auto* managed = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, dlpack::kLegacyName));
  managed->deleter(managed);
}

void versioned_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::kVersionedName) == 0) return;
  auto* managed = static_cast<dlpack::DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, dlpack::kVersionedName));
  managed->deleter(managed);
}

struct Request {
  bool versioned = false;
  std::optional<bool> copy;
};

Request parse_request(py::handle stream, py::handle max_version, py::handle dl_device, py::handle copy) {
  Request request;
  if (!max_version.is_none()) {
    if (!py::isinstance<py::tuple>(max_version) || py::len(max_version) != 2)
      raise(ErrorCode::InvalidArgument,
            "__dlpack__: max_version: expected a (major, minor) tuple, got " + std::string(py::repr(max_version)));
    request.versioned = to_int64(py::reinterpret_borrow<py::tuple>(max_version)[0], "__dlpack__: max_version") >= 1;
  }
  if (!copy.is_none()) request.copy = copy.cast<bool>();
  if (!stream.is_none() && !(py::isinstance<py::int_>(stream) && stream.equal(py::int_(-1))))
    throw py::buffer_error("__dlpack__: memhal exports host memory, which takes no stream (pass None)");
  if (!dl_device.is_none()) {
    const int64_t type = dlpack_device_type(dl_device, "__dlpack__: dl_device");
    if (type != dlpack::kDLCPU)
      throw py::buffer_error("__dlpack__: memhal exports to the CPU (device type 1) only, asked for device type " +
                             std::to_string(type));
  }
  return request;
}

bool strides_fit_elements(const Tensor& t) {
  const auto itemsize = static_cast<int64_t>(size_of(t.dtype()));
  for (int64_t stride : t.strides()) {
    if (stride % itemsize != 0) return false;
  }
  return true;
}

bool has_negative_stride(const Tensor& t) {
  for (int64_t stride : t.strides()) {
    if (stride < 0) return true;
  }
  return false;
}

// Picks what to export (the tensor, or a dense host copy) and maps it.
std::unique_ptr<Export> prepare(const Tensor& tensor, const Request& request, bool& copied, bool& read_only) {
  if (tensor.layout().is_multi_plane())
    throw py::buffer_error("__dlpack__: a " + std::string(to_string(*tensor.pixel_format())) +
                           " image has several planes, which one DLPack tensor cannot describe");
  Tensor source = tensor;
  auto copy_because = [&](const std::string& why) {
    if (request.copy == false) throw py::buffer_error("__dlpack__: " + why + ", and copy=False forbids a copy");
    py::gil_scoped_release unlocked;
    source = unwrap(source.materialize(MemoryKind::Mem));
    copied = true;
  };
  if (request.copy == true) copy_because("copy=True");
  if (!copied && source.memory() == MemoryKind::Cuda) copy_because("cuda memory is not host-addressable");
  if (!copied && !strides_fit_elements(source)) copy_because("byte strides are not whole elements");
  if (!copied && !request.versioned && has_negative_stride(source)) {
    // DLPack before 1.0 left negative strides unsaid and legacy consumers cannot all take them
    // (torch 1.13 aborts the interpreter), so, as the array API says for what a consumer cannot
    // take: a BufferError that says what to do, or the copy that copy=True asked for above.
    throw py::buffer_error(
        "__dlpack__: this tensor has negative strides (a flipped view), which a legacy (unversioned) DLPack "
        "consumer may not take: materialize() it first, pass copy=True, or ask with max_version=(1, 0); "
        "numpy.asarray(tensor.map('read')) shares it with its strides");
  }
  auto out = std::make_unique<Export>(source);
  auto map = source.map(CpuAccess::ReadWrite);
  if (!map.has_value() && map.error().code() == ErrorCode::PermissionDenied) {
    if (!request.versioned) {
      // A legacy capsule cannot say "read-only": hand such a consumer a copy it may write.
      copy_because("read-only memory cannot travel in a legacy capsule");
      out = std::make_unique<Export>(source);
      map = source.map(CpuAccess::ReadWrite);
    } else {
      map = source.map(CpuAccess::Read);
      read_only = true;
    }
  }
  out->map.emplace(unwrap(std::move(map)));
  return out;
}

py::object dlpack_export(const Tensor& tensor, py::handle stream, py::handle max_version, py::handle dl_device,
                         py::handle copy) {
  const Request request = parse_request(stream, max_version, dl_device, copy);
  bool copied = false;
  bool read_only = false;
  std::unique_ptr<Export> out = prepare(tensor, request, copied, read_only);
  const TensorMap& map = *out->map;
  const auto itemsize = static_cast<int64_t>(size_of(map.dtype()));
  out->shape.assign(map.shape().begin(), map.shape().end());
  for (int64_t stride : map.strides()) out->strides.push_back(stride / itemsize);
  dlpack::DLTensor dl{};
  dl.data = map.data();
  dl.device = {dlpack::kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(out->shape.size());
  dl.dtype = dlpack_dtype(map.dtype());
  dl.shape = out->shape.data();
  dl.strides = out->strides.data();
  dl.byte_offset = 0;
  Export* raw = out.get();
  PyObject* capsule = nullptr;
  if (request.versioned) {
    raw->versioned.version = {dlpack::kMajorVersion, dlpack::kMinorVersion};
    raw->versioned.manager_ctx = raw;
    raw->versioned.deleter = [](dlpack::DLManagedTensorVersioned* self) {
      delete static_cast<Export*>(self->manager_ctx);
    };
    raw->versioned.flags = (read_only ? dlpack::kFlagReadOnly : 0) | (copied ? dlpack::kFlagIsCopied : 0);
    raw->versioned.dl_tensor = dl;
    capsule = PyCapsule_New(&raw->versioned, dlpack::kVersionedName, &versioned_capsule_destructor);
  } else {
    raw->legacy.manager_ctx = raw;
    raw->legacy.deleter = [](dlpack::DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); };
    raw->legacy.dl_tensor = dl;
    capsule = PyCapsule_New(&raw->legacy, dlpack::kLegacyName, &legacy_capsule_destructor);
  }
  if (capsule == nullptr) throw py::error_already_set();
  out.release();  // the capsule (or its consumer) owns it now
  return py::reinterpret_steal<py::object>(capsule);
}

}  // namespace

void bind_dlpack(py::module_& m) {
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def("__dlpack__", &dlpack_export, py::kw_only(), py::arg("stream") = py::none(),
             py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
             "A DLPack capsule over this tensor's memory (array-API standard): legacy without max_version, "
             "versioned 1.0 (with the read-only flag) when max_version >= (1, 0). A legacy request for a "
             "tensor with negative strides raises BufferError (copy=True exports a dense copy).");
  tensor.def(
      "__dlpack_device__",
      [](const Tensor& t) {
        return py::make_tuple(t.memory() == MemoryKind::Cuda ? dlpack::kDLCUDA : dlpack::kDLCPU, 0);
      },
      "(device_type, device_id) of the memory, for DLPack consumers: (1, 0), the CPU, for host memory.");
}

}  // namespace memhal::python
