// `memhal._memhal`, the compiled part of the `memhal` package: errors, the hooks the package
// builds its vocabulary enums with (memhal/__init__.py), availability; the nouns are bound in
// py_tensor.cpp, py_dlpack.cpp, py_foreign.cpp, py_pipeline.cpp, py_pool.cpp, py_frame.cpp and
// py_camera.cpp.
#include <memhal/memory.hpp>
#include <memhal/version.hpp>

#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

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
  instance.attr("code") = enum_member(error.code());
  instance.attr("message") = error.message();
  instance.attr("sys_errno") = error.sys_errno();
  PyErr_SetObject(cls, instance.ptr());
}

// Calls f.operator()<E>() for every vocabulary, in the order of the golden file.
template <class F>
void for_each_vocabulary(F&& f) {
  f.template operator()<MemoryKind>();
  f.template operator()<DType>();
  f.template operator()<PixelFormat>();
  f.template operator()<Compression>();
  f.template operator()<CpuAccess>();
  f.template operator()<MemoryDomainKind>();
  f.template operator()<Flip>();
  f.template operator()<Rotation>();
  f.template operator()<ResizeMode>();
  f.template operator()<Interpolation>();
  f.template operator()<ColorMatrix>();
  f.template operator()<ColorRange>();
  f.template operator()<ImageBackend>();
  f.template operator()<ErrorCode>();
}

// The hooks memhal/__init__.py builds the enums with: the tables, the registration of the
// classes it made, and the one parser of every spelling (the enums' constructors and
// from_code/from_string go through it, as every vocabulary argument does).
void bind_vocabulary_hooks(py::module_& m) {
  m.def("_vocabularies", [] {
    py::dict tables;
    for_each_vocabulary([&]<class E>() {
      py::list rows;
      for (const auto& entry : VocabularyTraits<E>::entries)
        rows.append(py::make_tuple(upper(entry.wire), std::string(entry.wire), code(entry.value)));
      tables[py::str(std::string(VocabularyTraits<E>::name))] = rows;
    });
    return tables;
  });
  m.def("_register_vocabulary_base", [](py::object base) {
    if (g_vocabulary_base == nullptr) g_vocabulary_base = base.inc_ref().ptr();
  });
  m.def("_register_vocabulary", [](const std::string& name, py::object cls) {
    bool found = false;
    for_each_vocabulary([&]<class E>() {
      if (name != VocabularyTraits<E>::name) return;
      found = true;
      const auto& entries = VocabularyTraits<E>::entries;
      std::array<PyObject*, VocabularyTraits<E>::entries.size()> members{};
      for (std::size_t i = 0; i < entries.size(); ++i) members[i] = cls.attr(upper(entries[i].wire).c_str()).ptr();
      // Once per process: a second import of the package (importlib.reload) keeps the first.
      if (EnumClass<E>::type != nullptr) return;
      EnumClass<E>::type = cls.inc_ref().ptr();
      for (std::size_t i = 0; i < entries.size(); ++i)
        EnumClass<E>::members[i] = py::handle(members[i]).inc_ref().ptr();
    });
    if (!found) raise(ErrorCode::InvalidArgument, "_register_vocabulary: no vocabulary '" + name + "'");
  });
  m.def("_raise", [](py::object code, std::string message) {
    raise(to_vocabulary<ErrorCode>(code, "_raise"), std::move(message));
  });
  m.def("_vocabulary_code", [](const std::string& name, py::object value, const std::string& how) {
    uint32_t out = 0;
    bool found = false;
    for_each_vocabulary([&]<class E>() {
      if (name != VocabularyTraits<E>::name) return;
      found = true;
      const std::string what = name + (how == "any" ? "()" : "." + how);
      if (how == "from_code" && (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)))
        raise(ErrorCode::InvalidArgument, what + ": expected an int code, got " + type_name(value));
      if (how == "from_string" && !py::isinstance<py::str>(value))
        raise(ErrorCode::InvalidArgument, what + ": expected a str, got " + type_name(value));
      out = code(to_vocabulary<E>(value, what.c_str()));
    });
    if (!found) raise(ErrorCode::InvalidArgument, "_vocabulary_code: no vocabulary '" + name + "'");
    return out;
  });
}

// The function record pybind11 keeps behind `function`, when it is one of its functions.
py::detail::function_record* function_record(py::handle function) {
  if (PyInstanceMethod_Check(function.ptr())) function = PyInstanceMethod_GET_FUNCTION(function.ptr());
  if (!PyCFunction_Check(function.ptr())) return nullptr;
  PyObject* self = PyCFunction_GET_SELF(function.ptr());
  if (self == nullptr || !PyCapsule_CheckExact(self)) return nullptr;
  return static_cast<py::detail::function_record*>(PyCapsule_GetPointer(self, PyCapsule_GetName(self)));
}

// CPython reads a builtin's signature (inspect.signature, help) from a docstring that starts
// "name(self, /, a, b=None)\n--\n\n"; pybind11 2.10 writes its own typed line instead, which
// inspect cannot read. This rewrites the docstring of `function` to start with one made from
// its py::arg names and defaults (pybind11's line stays in the text below). Overloaded and
// unnamed-argument functions are left as they are.
void add_text_signature(py::handle function) {
  py::detail::function_record* rec = function_record(function);
  if (rec == nullptr || rec->next != nullptr || rec->def == nullptr) return;
  const std::size_t self = rec->is_method ? 1 : 0;
  const std::size_t variadic = (rec->has_args ? 1 : 0) + (rec->has_kwargs ? 1 : 0);
  const std::size_t named = rec->nargs - variadic;  // self and the arguments before *args / **kwargs
  if (rec->args.size() < named && named != self) return;
  std::string signature = std::string(rec->name) + "(";
  std::vector<std::string> parts;
  if (rec->is_method) parts.emplace_back("self");
  bool slash = rec->is_method;
  for (std::size_t i = self; i < named; ++i) {
    const auto& arg = rec->args[i];
    if (slash && i >= rec->nargs_pos_only) {
      parts.emplace_back("/");
      slash = false;
    }
    if (i == rec->nargs_pos && !rec->has_args) parts.emplace_back("*");
    std::string part = arg.name ? arg.name : "arg" + std::to_string(i);
    if (arg.descr != nullptr) part += std::string("=") + arg.descr;
    parts.push_back(part);
  }
  if (slash) parts.emplace_back("/");
  if (rec->has_args) parts.emplace_back("*args");
  if (rec->has_kwargs) parts.emplace_back("**kwargs");
  for (std::size_t i = 0; i < parts.size(); ++i) signature += (i ? ", " : "") + parts[i];
  signature += ")\n--\n\n";
  const char* old = rec->def->ml_doc;
  signature += old ? old : "";
  rec->def->ml_doc = strdup(signature.c_str());
  std::free(const_cast<char*>(old));
}

// add_text_signature for every function of `m` and every method of its classes.
void add_text_signatures(py::module_& m) {
  for (auto item : m.attr("__dict__").cast<py::dict>()) {
    py::handle value = item.second;
    if (PyType_Check(value.ptr())) {
      for (auto member : value.attr("__dict__").cast<py::dict>()) {
        py::handle attribute = member.second;
        if (py::isinstance<py::staticmethod>(attribute)) attribute = attribute.attr("__func__");
        add_text_signature(attribute);
      }
    } else {
      add_text_signature(value);
    }
  }
}

}  // namespace

void raise(ErrorCode code, std::string message) {
  throw ErrorException{Error(code, std::move(message))};
}

std::optional<DType> dtype_from_numpy(py::handle value) {
  py::object dtype;
  try {
    dtype = py::module_::import("numpy").attr("dtype")(value);
  } catch (py::error_already_set&) {
    return std::nullopt;  // no numpy, or nothing numpy reads as a dtype
  }
  const auto byteorder = dtype.attr("byteorder").cast<std::string>();
  if (byteorder != "=" && byteorder != "|") return std::nullopt;
  const auto kind = dtype.attr("kind").cast<std::string>();
  const auto size = dtype.attr("itemsize").cast<int>();
  const std::string wire = kind == "u" ? "u" : kind == "i" ? "i" : kind == "f" ? "f" : "";
  if (wire.empty()) return std::nullopt;
  return from_string<DType>(wire + std::to_string(size * 8));
}

void bind_errors(py::module_& m) {
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

PYBIND11_MODULE(_memhal, m) {
  using namespace memhal;
  using namespace memhal::python;
  m.doc() = "The compiled part of memhal: import memhal, which adds the enums, not this module.";
  m.attr("__version__") = memhal::version();  // memhal::version() and `memhal --version` agree
  bind_errors(m);
  bind_vocabulary_hooks(m);

  py::class_<Availability>(m, "Availability", "The answer of a memory-kind probe.")
      .def_readonly("available", &Availability::available, "Whether the kind can allocate here.")
      .def_readonly("reason", &Availability::reason, "Why not (or what was found), for people.")
      .def_readonly("refusal", &Availability::refusal, "The refusal of the probe, empty when available.")
      .def(
          "__bool__", [](const Availability& a) { return a.available; }, "available.")
      .def("__repr__", [](const Availability& a) {
        return std::string("Availability(available=") + (a.available ? "True" : "False") +
               ", reason=" + std::string(py::repr(py::str(a.reason))) + ")";
      });
  m.def(
      "availability", [](py::object kind) { return availability(to_vocabulary<MemoryKind>(kind, "availability")); },
      py::arg("kind"), "Whether Tensor(..., memory=kind) can allocate here, and why (probed once, cached).");
  m.def(
      "is_available", [](py::object kind) { return is_available(to_vocabulary<MemoryKind>(kind, "is_available")); },
      py::arg("kind"), "Whether Tensor(..., memory=kind) can allocate here (availability(kind).available).");
  m.def("force_mem_requested", &force_mem_requested, "Whether MEMHAL_FORCE_MEM sends auto-selection to mem.");

  bind_tensor(m);
  bind_dlpack(m);
  bind_foreign(m);
  bind_pipeline(m);
  bind_frame(m);
  bind_camera(m);
  bind_pool(m);
  add_text_signatures(m);
}
