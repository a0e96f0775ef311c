// The `memhal` Python module: errors, the vocabularies, availability; the nouns are bound
// in py_tensor.cpp, py_dlpack.cpp, py_foreign.cpp and py_pipeline.cpp.
#include <memhal/memory.hpp>
#include <memhal/version.hpp>

#include <array>
#include <cctype>

#include "py_common.hpp"

namespace memhal::python {
namespace {

constexpr std::size_t kErrorCodeCount = all<ErrorCode>().size();
static_assert(code(all<ErrorCode>().back()) == kErrorCodeCount, "ErrorCode codes run 1..N");

// One Python class per ErrorCode, indexed by code; slot 0 is the base `memhal.Error`. Created
// once at import and kept for the life of the process (module objects are never unloaded).
std::array<PyObject*, kErrorCodeCount + 1> g_error_classes{};

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "invalid_argument" -> "InvalidArgument".
std::string pascal(std::string_view snake) {
  std::string out;
  bool start = true;
  for (char c : snake) {
    if (c == '_') {
      start = true;
      continue;
    }
    out += start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    start = false;
  }
  return out;
}

// The builtin exception each code also derives from, so that `except ValueError` and friends
// keep working for callers that do not know memhal.
PyObject* builtin_base(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return PyExc_ValueError;
    case ErrorCode::NotImplemented: return PyExc_NotImplementedError;
    case ErrorCode::OutOfMemory: return PyExc_MemoryError;
    case ErrorCode::Io: return PyExc_OSError;
    case ErrorCode::PermissionDenied: return PyExc_PermissionError;
    case ErrorCode::OutOfRange: return PyExc_IndexError;
    default: return nullptr;
  }
}

// NotImplemented's class is `UnimplementedError`: `NotImplementedError` would shadow the
// builtin under `from memhal import *`.
std::string class_name(ErrorCode code) {
  if (code == ErrorCode::NotImplemented) return "UnimplementedError";
  return pascal(to_string(code)) + "Error";
}

void set_python_error(const Error& error) {
  const auto index = static_cast<std::size_t>(error.code());
  PyObject* cls = index <= kErrorCodeCount && g_error_classes[index] ? g_error_classes[index] : g_error_classes[0];
  py::object instance = py::reinterpret_borrow<py::object>(cls)(error.message());
  instance.attr("code") = py::cast(error.code());
  instance.attr("message") = error.message();
  instance.attr("sys_errno") = error.sys_errno();
  PyErr_SetObject(cls, instance.ptr());
}

template <Vocabulary E>
void bind_vocabulary(py::module_& m) {
  const std::string name(VocabularyTraits<E>::name);
  py::enum_<E> e(m, name.c_str(),
                 ("The memhal vocabulary " + name + ": members are the wire strings upper-cased").c_str());
  for (const auto& entry : VocabularyTraits<E>::entries) e.value(upper(entry.wire).c_str(), entry.value);
  e.def_property_readonly(
      "code", [](E value) { return code(value); }, "The stable code, identical on every surface.");
  // Assigned, not def'd: def would chain behind pybind11's own __str__, which would win.
  e.attr("__str__") =
      py::cpp_function([](E value) { return std::string(to_string(value)); }, py::name("__str__"), py::is_method(e));
  // pybind11's constructor makes an unnamed member of any integer (MemoryKind(7)); replaced by
  // one that accepts what every vocabulary argument accepts and refuses the rest, as from_code.
  py::delattr(e, "__init__");
  e.def(py::init([name](py::object value) { return to_vocabulary<E>(value, (name + "()").c_str()); }), py::arg("value"),
        "The member of this code, wire string (or alias) or member; InvalidArgumentError otherwise.");
  e.def_static(
      "from_code", [](py::int_ c) { return to_vocabulary<E>(c, "from_code"); },
      "The member with this code; InvalidArgumentError for an unknown one.");
  e.def_static(
      "from_string", [](py::str s) { return to_vocabulary<E>(s, "from_string"); },
      "The member with this wire spelling or alias (ASCII case-insensitive); InvalidArgumentError otherwise.");
}

}  // namespace

void raise(ErrorCode code, std::string message) {
  throw ErrorException{Error(code, std::move(message))};
}

void bind_errors(py::module_& m) {
  bind_vocabulary<ErrorCode>(m);
  PyObject* base = PyErr_NewExceptionWithDoc(
      "memhal.Error", "A memhal call failed: .code (memhal.ErrorCode), .message, .sys_errno (0 when none).",
      PyExc_Exception, nullptr);
  if (base == nullptr) throw py::error_already_set();
  g_error_classes[0] = base;
  m.add_object("Error", py::handle(base));
  for (const ErrorCode code_value : all<ErrorCode>()) {
    const std::string name = class_name(code_value);
    py::tuple bases = builtin_base(code_value) ? py::make_tuple(py::handle(base), py::handle(builtin_base(code_value)))
                                               : py::make_tuple(py::handle(base));
    const std::string qualified = "memhal." + name;
    PyObject* cls = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    g_error_classes[code(code_value)] = cls;
    m.add_object(name.c_str(), py::handle(cls));
  }
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const ErrorException& e) {
      set_python_error(e.error);
    } catch (const py::cast_error& e) {
      // A conversion no binding checked itself: still a memhal.Error, never a bare RuntimeError.
      set_python_error(Error(ErrorCode::InvalidArgument,
                             std::string("an argument has a type or value this call cannot take (") + e.what() + ")"));
    }
  });
}

}  // namespace memhal::python

PYBIND11_MODULE(memhal, m) {
  using namespace memhal;
  using namespace memhal::python;
  m.doc() = "memhal: zero-copy tensor and video-frame memory across hardware backends.";
  m.attr("__version__") = memhal::version();  // memhal::version() and `memhal --version` agree
  bind_errors(m);
  bind_vocabulary<MemoryKind>(m);
  bind_vocabulary<DType>(m);
  bind_vocabulary<PixelFormat>(m);
  bind_vocabulary<Compression>(m);
  bind_vocabulary<CpuAccess>(m);
  bind_vocabulary<MemoryDomainKind>(m);
  bind_vocabulary<Flip>(m);
  bind_vocabulary<Rotation>(m);
  bind_vocabulary<ResizeMode>(m);
  bind_vocabulary<Interpolation>(m);
  bind_vocabulary<ColorMatrix>(m);
  bind_vocabulary<ColorRange>(m);
  bind_vocabulary<ImageBackend>(m);

  py::class_<Availability>(m, "Availability", "The answer of a memory-kind probe.")
      .def_readonly("available", &Availability::available)
      .def_readonly("reason", &Availability::reason)
      .def_readonly("refusal", &Availability::refusal)
      .def("__bool__", [](const Availability& a) { return a.available; })
      .def("__repr__", [](const Availability& a) {
        return std::string("Availability(available=") + (a.available ? "True" : "False") +
               ", reason=" + std::string(py::repr(py::str(a.reason))) + ")";
      });
  m.def(
      "availability", [](py::object kind) { return availability(to_vocabulary<MemoryKind>(kind, "availability")); },
      py::arg("kind"), "Whether Tensor(..., memory=kind) can allocate here, and why (probed once, cached).");
  m.def(
      "is_available", [](py::object kind) { return is_available(to_vocabulary<MemoryKind>(kind, "is_available")); },
      py::arg("kind"));
  m.def("force_mem_requested", &force_mem_requested, "Whether MEMHAL_FORCE_MEM sends auto-selection to mem.");

  bind_tensor(m);
  bind_dlpack(m);
  bind_foreign(m);
  bind_pipeline(m);
  bind_frame(m);
  bind_camera(m);
}
