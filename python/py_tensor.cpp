// memhal.Tensor and memhal.TensorMap. A map exports its bytes through the buffer protocol, so
// numpy.asarray(m) shares memory; the mapping ends once the map is closed and no exported
// buffer is left (closing with arrays alive defers the unmap rather than leaving them dangling).
#include <pybind11/stl.h>

#include <memhal/tensor.hpp>

#include <memory>

#include "py_common.hpp"

namespace memhal::python {
namespace {

// The mapping behind a Python TensorMap and its plane buffers.
struct MapState {
  std::optional<TensorMap> map;
  int exports = 0;
  bool closed = false;

  void close() {
    closed = true;
    if (exports == 0) map.reset();
  }
};

struct PyMap {
  std::shared_ptr<MapState> state;
};

struct PyPlane {
  std::shared_ptr<MapState> state;
  std::size_t index = 0;
};

struct BufferShape {
  std::byte* data = nullptr;
  int64_t itemsize = 1;
  const char* format = "B";
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  bool readonly = true;
};

const char* buffer_format(DType dtype) {
  switch (dtype) {
    case DType::U8: return "B";
    case DType::I8: return "b";
    case DType::U16: return "H";
    case DType::I16: return "h";
    case DType::U32: return "I";
    case DType::I32: return "i";
    case DType::U64: return "Q";
    case DType::I64: return "q";
    case DType::F16: return "e";
    case DType::F32: return "f";
    case DType::F64: return "d";
    case DType::BF16: return nullptr;
  }
  return nullptr;
}

const TensorMap& live_map(const MapState& state) {
  if (!state.map.has_value() || state.closed) raise(ErrorCode::InvalidArgument, "the map is closed");
  return *state.map;
}

BufferShape describe(const PyMap& self) {
  const TensorMap& map = live_map(*self.state);
  if (map.layout().is_multi_plane()) {
    raise(ErrorCode::InvalidArgument, "a " + std::string(to_string(*map.layout().pixel_format())) + " image has " +
                                          std::to_string(map.layout().planes().size()) +
                                          " planes: export them one by one with map.plane(i)");
  }
  const char* format = buffer_format(map.dtype());
  if (format == nullptr) raise(ErrorCode::InvalidArgument, "bf16 has no buffer-protocol format: use __dlpack__");
  BufferShape out;
  out.data = map.data();
  out.itemsize = static_cast<int64_t>(size_of(map.dtype()));
  out.format = format;
  out.shape.assign(map.shape().begin(), map.shape().end());
  out.strides.assign(map.strides().begin(), map.strides().end());
  out.readonly = !can_write(map.access());
  return out;
}

BufferShape describe(const PyPlane& self) {
  const TensorMap& map = live_map(*self.state);
  const auto planes = map.layout().planes();
  if (self.index >= planes.size()) raise(ErrorCode::OutOfRange, "plane index out of range");
  const PlaneLayout& plane = planes[self.index];
  BufferShape out;
  out.data = map.plane(self.index);
  out.itemsize = static_cast<int64_t>(size_of(map.dtype()));
  out.format = buffer_format(map.dtype());
  if (out.format == nullptr) raise(ErrorCode::InvalidArgument, "bf16 has no buffer-protocol format");
  out.shape = {plane.height, plane.row_bytes / out.itemsize};
  out.strides = {plane.pitch, out.itemsize};
  out.readonly = !can_write(map.access());
  return out;
}

template <class Self>
int get_buffer(PyObject* object, Py_buffer* view, int flags) {
  BufferShape shape;
  try {
    shape = describe(py::handle(object).cast<const Self&>());
  } catch (const ErrorException& e) {
    PyErr_SetString(PyExc_BufferError, e.error.message().c_str());
    return -1;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
  if (shape.readonly && (flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "the map is read-only: map the tensor with 'write' or 'read_write'");
    return -1;
  }
  const std::size_t ndim = shape.shape.size();
  auto* dims = new Py_ssize_t[2 * ndim + 1];
  int64_t count = 1;
  for (std::size_t i = 0; i < ndim; ++i) {
    dims[i] = static_cast<Py_ssize_t>(shape.shape[i]);
    dims[ndim + i] = static_cast<Py_ssize_t>(shape.strides[i]);
    count *= shape.shape[i];
  }
  view->buf = shape.data;
  view->obj = py::handle(object).inc_ref().ptr();
  view->len = static_cast<Py_ssize_t>(count * shape.itemsize);
  view->readonly = shape.readonly ? 1 : 0;
  view->itemsize = static_cast<Py_ssize_t>(shape.itemsize);
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(shape.format) : nullptr;
  view->ndim = static_cast<int>(ndim);
  view->shape = dims;
  view->strides = dims + ndim;
  view->suboffsets = nullptr;
  view->internal = dims;
  const bool c_contiguous = PyBuffer_IsContiguous(view, 'C') != 0;
  const bool needs_c = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                       (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS ||
                       (flags & PyBUF_STRIDES) != PyBUF_STRIDES;
  const bool needs_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS;
  if ((needs_c && !c_contiguous) || (needs_f && PyBuffer_IsContiguous(view, 'F') == 0)) {
    delete[] dims;
    Py_CLEAR(view->obj);
    PyErr_SetString(PyExc_BufferError, "the mapped tensor is strided: ask for a strided buffer or materialize it");
    return -1;
  }
  if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES) view->strides = nullptr;
  if ((flags & PyBUF_ND) != PyBUF_ND) view->shape = nullptr;
  py::handle(object).cast<const Self&>().state->exports++;
  return 0;
}

template <class Self>
void release_buffer(PyObject* object, Py_buffer* view) {
  delete[] static_cast<Py_ssize_t*>(view->internal);
  auto& state = *py::handle(object).cast<const Self&>().state;
  if (--state.exports == 0 && state.closed) state.map.reset();
}

template <class Self>
py::custom_type_setup buffer_setup() {
  return py::custom_type_setup([](PyHeapTypeObject* heap_type) {
    heap_type->as_buffer.bf_getbuffer = &get_buffer<Self>;
    heap_type->as_buffer.bf_releasebuffer = &release_buffer<Self>;
    heap_type->ht_type.tp_as_buffer = &heap_type->as_buffer;
  });
}

std::string repr(const Tensor& t) {
  std::string out = "memhal.Tensor(shape=" + std::string(py::repr(to_tuple(t.shape()))) +
                    ", dtype=" + std::string(to_string(t.dtype())) + ", memory=" + std::string(to_string(t.memory()));
  if (t.pixel_format()) out += ", format=" + std::string(to_string(*t.pixel_format()));
  if (!t.name().empty()) out += ", name=" + std::string(py::repr(py::str(t.name())));
  return out + ")";
}

PyMap map_tensor(const Tensor& t, py::object access) {
  auto state = std::make_shared<MapState>();
  state->map.emplace(unwrap(t.map(to_vocabulary<CpuAccess>(access, "map"))));
  return PyMap{std::move(state)};
}

void bind_map(py::module_& m) {
  py::class_<PyPlane>(m, "PlaneBuffer", buffer_setup<PyPlane>(),
                      "One plane of a mapped multi-plane image (rows x row bytes); exports the buffer protocol.")
      .def_property_readonly(
          "index", [](const PyPlane& p) { return p.index; }, "Which plane of the map this is.")
      .def("__repr__", [](const PyPlane& p) { return "memhal.PlaneBuffer(index=" + std::to_string(p.index) + ")"; });
  py::class_<PyMap>(m, "TensorMap", buffer_setup<PyMap>(),
                    "A CPU mapping of a tensor; exports the buffer protocol (writable only when mapped for "
                    "writing). Use as a context manager; the unmap waits for buffers still exported.")
      .def(
          "__enter__", [](PyMap& self) -> PyMap& { return self; }, py::return_value_policy::reference_internal,
          "Returns the map.")
      .def(
          "__exit__", [](PyMap& self, py::args) { self.state->close(); }, "Closes the map.")
      .def(
          "close", [](PyMap& self) { self.state->close(); },
          "Ends the mapping once no exported buffer (numpy array, memoryview) is left. Idempotent.")
      .def_property_readonly(
          "closed", [](const PyMap& self) { return self.state->closed; }, "Whether close() was called.")
      .def_property_readonly(
          "access", [](const PyMap& self) { return live_map(*self.state).access(); }, "The CpuAccess mapped.")
      .def_property_readonly(
          "shape", [](const PyMap& self) { return to_tuple(live_map(*self.state).shape()); }, "The tensor's shape.")
      .def_property_readonly(
          "strides", [](const PyMap& self) { return to_tuple(live_map(*self.state).strides()); },
          "Signed byte strides.")
      .def_property_readonly(
          "dtype", [](const PyMap& self) { return live_map(*self.state).dtype(); }, "The element DType.")
      .def_property_readonly(
          "plane_count", [](const PyMap& self) { return live_map(*self.state).layout().planes().size(); },
          "Planes of the image (1 for a plain tensor).")
      .def(
          "plane",
          [](const PyMap& self, std::size_t index) {
            if (index >= live_map(*self.state).layout().planes().size())
              raise(ErrorCode::OutOfRange, "plane " + std::to_string(index) + " of an image with " +
                                               std::to_string(live_map(*self.state).layout().planes().size()) +
                                               " planes");
            return PyPlane{self.state, index};
          },
          py::arg("index"), "Plane index of a multi-plane image, as a buffer-protocol object (rows x row bytes).")
      .def("__repr__", [](const PyMap& self) {
        if (!self.state->map.has_value() || self.state->closed) return std::string("memhal.TensorMap(closed)");
        const TensorMap& map = *self.state->map;
        return "memhal.TensorMap(shape=" + std::string(py::repr(to_tuple(map.shape()))) +
               ", dtype=" + std::string(to_string(map.dtype())) + ", access=" + std::string(to_string(map.access())) +
               ")";
      });
}

Tensor reversed_axes(const Tensor& t) {
  std::vector<std::size_t> axes(t.rank());
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = axes.size() - 1 - i;
  return unwrap(t.permute(axes));
}

void bind_views(py::class_<Tensor>& c) {
  c.def(
       "slice", [](const Tensor& t, std::size_t axis, int64_t b, int64_t e) { return unwrap(t.slice(axis, b, e)); },
       py::arg("axis"), py::arg("begin"), py::arg("end"), "Zero-copy half-open slice [begin, end) of one axis.")
      .def(
          "flip", [](const Tensor& t, std::size_t axis) { return unwrap(t.flip(axis)); }, py::arg("axis"),
          "Zero-copy view with axis reversed (a negative stride).")
      .def(
          "transpose",
          [](const Tensor& t, std::optional<std::size_t> a, std::optional<std::size_t> b) {
            if (a.has_value() != b.has_value())
              raise(ErrorCode::InvalidArgument, "transpose: give two axes to swap, or none to reverse them all");
            if (a) return unwrap(t.transpose(*a, *b));
            return reversed_axes(t);
          },
          py::arg("a") = py::none(), py::arg("b") = py::none(),
          "Zero-copy view with axes a and b swapped; without axes, every axis reversed (numpy's .T).")
      .def_property_readonly("T", &reversed_axes, "Zero-copy view with every axis reversed, as numpy's .T.")
      .def(
          "permute", [](const Tensor& t, std::vector<std::size_t> axes) { return unwrap(t.permute(axes)); },
          py::arg("axes"), "Zero-copy view with the axes in the given order.")
      .def(
          "reshape", [](const Tensor& t, py::object shape) { return unwrap(t.reshape(to_shape(shape))); },
          py::arg("shape"), "Zero-copy view with another shape of the same element count (contiguous tensors).")
      .def(
          "crop",
          [](const Tensor& t, int64_t x, int64_t y, int64_t w, int64_t h) { return unwrap(t.crop(x, y, w, h)); },
          py::arg("x"), py::arg("y"), py::arg("width"), py::arg("height"), "Zero-copy view of a rectangle of an image.")
      .def(
          "materialize",
          [](const Tensor& t, py::object memory) {
            const auto kind = to_optional_vocabulary<MemoryKind>(memory, "materialize");
            py::gil_scoped_release release;
            return unwrap(t.materialize(kind));
          },
          py::arg("memory") = py::none(), "A new dense copy, in `memory` when given.")
      .def(
          "copy_to",
          [](const Tensor& t, const Tensor& dst) {
            py::gil_scoped_release release;
            unwrap(t.copy_to(dst));
          },
          py::arg("dst"), "Copies the elements into dst (same shape and dtype), across memory kinds.")
      .def(
          "same_storage", [](const Tensor& a, const Tensor& b) { return same_storage(a, b); }, py::arg("other"),
          "Whether other views the same allocation.");
}

py::list planes_of(const Tensor& t) {
  py::list out;
  for (const PlaneLayout& p : t.layout().planes()) {
    py::dict d;
    d["buffer"] = p.buffer;
    d["offset"] = p.offset;
    d["pitch"] = p.pitch;
    d["width"] = p.width;
    d["height"] = p.height;
    d["row_bytes"] = p.row_bytes;
    out.append(d);
  }
  return out;
}

void bind_properties(py::class_<Tensor>& c) {
  c.def_property_readonly(
       "shape", [](const Tensor& t) { return to_tuple(t.shape()); }, "The shape, a tuple of ints.")
      .def_property_readonly(
          "strides", [](const Tensor& t) { return to_tuple(t.strides()); }, "Signed byte strides.")
      .def_property_readonly("dtype", &Tensor::dtype, "The element DType (equal to its wire string, 'f32').")
      .def_property_readonly("ndim", &Tensor::rank, "The number of axes.")
      .def_property_readonly("nbytes", &Tensor::nbytes, "Bytes of the elements (of every plane for an image).")
      .def_property_readonly(
          "offset", [](const Tensor& t) { return t.layout().offset(); }, "Byte offset of element 0 in its buffer.")
      .def_property_readonly("is_contiguous", &Tensor::is_contiguous, "Whether the elements are dense, row-major.")
      .def_property_readonly("pixel_format", &Tensor::pixel_format, "The PixelFormat of an image, else None.")
      .def_property_readonly("name", &Tensor::name, "The name given at creation (empty when none).")
      .def_property_readonly("memory", &Tensor::memory, "The memory kind this tensor actually got.")
      .def_property_readonly("allocation_notes", &Tensor::allocation_notes,
                             "Why auto-selection skipped other kinds before the one it got; empty when none.")
      .def_property_readonly("planes", &planes_of,
                             "Per plane: buffer, offset, pitch, width, height, row_bytes (bytes and pixels).")
      .def("fd", &Tensor::fd, py::arg("buffer") = 0, "The fd of a buffer, borrowed (never close it); -1 for mem.")
      .def(
          "clone_fd", [](const Tensor& t, std::size_t buffer) { return unwrap(t.clone_fd(buffer)).release(); },
          py::arg("buffer") = 0, "A new fd for a buffer; the caller owns it (os.close).")
      .def("__repr__", &repr);
}

void bind_constructors(py::class_<Tensor>& c) {
  c.def(py::init([](py::object shape, py::object dtype, py::object memory, py::object name) {
          return unwrap(Tensor::create(to_shape(shape), to_vocabulary<DType>(dtype, "Tensor"),
                                       to_optional_vocabulary<MemoryKind>(memory, "Tensor"),
                                       name.is_none() ? std::string() : to_text(name, "Tensor: name")));
        }),
        py::arg("shape"), py::arg("dtype") = "f32", py::arg("memory") = py::none(), py::arg("name") = py::none(),
        "A new zeroed row-major tensor; memory=None auto-selects (dmabuf, then mem), a kind pins it.")
      .def_static(
          "image",
          [](int64_t width, int64_t height, py::object format, py::object memory, py::object dtype, int64_t row_align,
             bool per_plane) {
            return unwrap(Tensor::image(width, height, to_vocabulary<PixelFormat>(format, "Tensor.image"),
                                        to_optional_vocabulary<MemoryKind>(memory, "Tensor.image"),
                                        to_vocabulary<DType>(dtype, "Tensor.image"), row_align,
                                        per_plane ? PlaneBuffers::PerPlane : PlaneBuffers::Shared));
          },
          py::arg("width"), py::arg("height"), py::arg("format"), py::arg("memory") = py::none(),
          py::arg("dtype") = "u8", py::arg("row_align") = kDefaultRowAlign, py::arg("per_plane") = false,
          "A new zeroed image (rows aligned to row_align bytes; per_plane: one buffer per plane).")
      .def_static(
          "from_fd",
          [](int fd, py::object shape, py::object dtype, py::object memory) {
            const Layout layout = unwrap(Layout::contiguous(to_shape(shape), to_vocabulary<DType>(dtype, "from_fd")));
            return unwrap(Tensor::from_fd(fd, layout, to_optional_vocabulary<MemoryKind>(memory, "from_fd")));
          },
          py::arg("fd"), py::arg("shape"), py::arg("dtype") = "u8", py::arg("memory") = py::none(),
          "A tensor over a memfd or DMA-BUF; the fd is duplicated, the caller keeps and closes its own.")
      .def_static(
          "image_from_fd",
          [](int fd, int64_t width, int64_t height, py::object format, py::object dtype, int64_t row_align,
             py::object memory) {
            const Layout layout = unwrap(Layout::image(width, height, to_vocabulary<PixelFormat>(format, "from_fd"),
                                                       to_vocabulary<DType>(dtype, "from_fd"), row_align));
            return unwrap(Tensor::from_fd(fd, layout, to_optional_vocabulary<MemoryKind>(memory, "from_fd")));
          },
          py::arg("fd"), py::arg("width"), py::arg("height"), py::arg("format"), py::arg("dtype") = "u8",
          py::arg("row_align") = kDefaultRowAlign, py::arg("memory") = py::none(),
          "An image over a memfd or DMA-BUF; the fd is duplicated, the caller keeps and closes its own.");
}

// A read-only numpy array over a CPU mapping of `t`: the map is closed at once, and its unmap
// waits for the array (the map's buffer export) to be gone.
py::object host_view(const Tensor& t) {
  py::object map = py::cast(map_tensor(t, py::str("read")));
  // Through a memoryview: numpy would wrap a map it cannot read (multi-plane, bf16) in a 0-d
  // object array instead of saying why.
  py::object array = py::module_::import("numpy").attr("asarray")(py::memoryview(map));
  map.attr("close")();
  return array;
}

py::object array_of(const Tensor& t, py::object dtype, py::object copy) {
  py::object view = host_view(t);
  const bool copying = !copy.is_none() && copy.cast<bool>();
  if (dtype.is_none() && !copying) return view;
  py::object target = dtype.is_none() ? view.attr("dtype") : py::module_::import("numpy").attr("dtype")(dtype);
  return view.attr("astype")(target, py::arg("copy") = copying || !target.equal(view.attr("dtype")));
}

}  // namespace

void bind_tensor(py::module_& m) {
  bind_map(m);
  py::class_<Tensor> c(m, "Tensor", "Shared storage plus a layout; copies share the bytes.");
  bind_constructors(c);
  bind_properties(c);
  bind_views(c);
  c.def("map", &map_tensor, py::arg("access") = "read_write",
        "Maps the bytes for the CPU; a TensorMap usable as a context manager.");
  c.def("__array__", &array_of, py::arg("dtype") = py::none(), py::arg("copy") = py::none(),
        "numpy's hook: np.asarray(t) is a read-only view of a host tensor's memory (the mapping lives as long "
        "as the array); a dtype other than the tensor's, or copy=True, gives a copy.");
  c.def(
      "numpy", [](const Tensor& t) { return host_view(t); },
      "A read-only numpy view of a host tensor's memory, keeping the mapping alive (t.map('write') to write). "
      "Multi-plane images: map(...).plane(i).");
  c.def(
      "to_numpy",
      [](const Tensor& t, bool copy) -> py::object {
        py::object view = host_view(t);
        if (!copy) return view;
        return py::module_::import("numpy").attr("array")(view, py::arg("copy") = true);
      },
      py::arg("copy") = true, "A writable numpy copy of the tensor (copy=False: the read-only view of numpy()).");
  c.def(
      "__len__",
      [](const Tensor& t) {
        if (t.rank() == 0) throw py::type_error("len() of a 0-d memhal.Tensor");
        return t.shape()[0];
      },
      "The size of the first axis (TypeError for a 0-d tensor).");
  m.def(
      "same_storage", [](const Tensor& a, const Tensor& b) { return same_storage(a, b); }, py::arg("a"), py::arg("b"),
      "Whether a and b view one allocation.");
}

}  // namespace memhal::python
