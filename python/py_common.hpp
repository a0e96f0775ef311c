// Shared by the files of the Python module: errors, vocabulary arguments, the noun binders.
#pragma once
#include <pybind11/pybind11.h>

#include <array>
#include <chrono>
#include <cmath>
#include <memhal/error.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memhal::python {

namespace py = pybind11;

/// A memhal::Error on its way to Python: the translator registered by the module turns it into
/// the `memhal.Error` subclass of its code.
struct ErrorException {
  Error error;
};

/// The value of `result`, or an `ErrorException` for its error.
template <class T>
T unwrap(Result<T> result) {
  if (!result.has_value()) throw ErrorException{std::move(result).error()};
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

/// Throws the `memhal.Error` subclass of `code` with `message`.
[[noreturn]] void raise(ErrorCode code, std::string message);

/// The name of `value`'s type, for messages ("float").
inline std::string type_name(py::handle value) {
  return std::string(py::str(value.get_type().attr("__name__")));
}

/// A timeout argument in seconds (an int or float) as the C++ calls take it: None and +inf
/// wait forever, any other finite value >= 0 is rounded up to whole milliseconds (saturating at
/// `milliseconds::max()`, which the C++ side waits out in full). NaN, negative numbers and
/// non-numbers raise InvalidArgumentError (a ValueError) naming the value.
inline std::optional<std::chrono::milliseconds> to_timeout(py::handle seconds) {
  if (seconds.is_none()) return std::nullopt;
  if (py::isinstance<py::bool_>(seconds) || (!py::isinstance<py::float_>(seconds) && PyIndex_Check(seconds.ptr()) == 0))
    raise(ErrorCode::InvalidArgument, "timeout: expected seconds (an int or a float) or None, got " +
                                          type_name(seconds) + " " + std::string(py::repr(seconds)));
  const double s = PyFloat_AsDouble(seconds.ptr());
  if (s == -1.0 && PyErr_Occurred()) {
    // An int beyond double's range: forever when positive, refused below when negative.
    PyErr_Clear();
    if (PyObject_RichCompareBool(seconds.ptr(), py::int_(0).ptr(), Py_GT) == 1) return std::nullopt;
    raise(ErrorCode::InvalidArgument, "timeout: " + std::string(py::repr(seconds)) + " seconds is negative");
  }
  if (std::isnan(s)) raise(ErrorCode::InvalidArgument, "timeout: nan is not a number of seconds");
  if (s < 0)
    raise(ErrorCode::InvalidArgument,
          "timeout: " + std::string(py::repr(seconds)) + " seconds is negative (0 does not wait, None waits forever)");
  if (std::isinf(s)) return std::nullopt;
  const double ms = std::ceil(s * 1000);
  // 2^63 is the first double past int64's range; the cast below is defined only under it.
  if (ms >= 9223372036854775808.0) return std::chrono::milliseconds::max();
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

/// `value` as an int64: a Python int or an integer-like object (`__index__`, as numpy's
/// integers), never a bool or a float. Raises InvalidArgumentError naming `what` otherwise,
/// and for an int beyond int64, so that no pybind11 cast error reaches the caller.
inline int64_t to_int64(py::handle value, const std::string& what) {
  if (py::isinstance<py::bool_>(value) || py::isinstance<py::float_>(value) || PyIndex_Check(value.ptr()) == 0)
    raise(ErrorCode::InvalidArgument,
          what + ": expected an int, got " + type_name(value) + " " + std::string(py::repr(value)));
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long number = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0)
    raise(ErrorCode::InvalidArgument,
          what + ": " + std::string(py::repr(index)) + " is outside the int64 range [-2**63, 2**63 - 1]");
  if (number == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  return number;
}

/// `value` as an int in [low, high], else InvalidArgumentError naming `what` and the range.
inline int64_t to_int_in(py::handle value, const std::string& what, int64_t low, int64_t high) {
  const int64_t number = to_int64(value, what);
  if (number < low || number > high)
    raise(ErrorCode::InvalidArgument, what + ": " + std::to_string(number) + " is outside [" + std::to_string(low) +
                                          ", " + std::to_string(high) + "]");
  return number;
}

/// A DLPack (device_type, device_id) pair's device type; InvalidArgumentError naming `what`
/// for anything else.
inline int64_t dlpack_device_type(py::handle device, const std::string& what) {
  if (!py::isinstance<py::tuple>(device) || py::len(device) != 2)
    raise(ErrorCode::InvalidArgument, what + ": expected a (device_type, device_id) tuple, got " + type_name(device) +
                                          " " + std::string(py::repr(device)));
  return to_int64(py::reinterpret_borrow<py::tuple>(device)[0], what + " device type");
}

/// `value` as a str, else InvalidArgumentError naming `what`.
inline std::string to_text(py::handle value, const std::string& what) {
  if (!py::isinstance<py::str>(value))
    raise(ErrorCode::InvalidArgument, what + ": expected a str, got " + type_name(value));
  return value.cast<std::string>();
}

/// The Python enum class of vocabulary `E` and its members in table order. memhal/__init__.py
/// builds the classes from the tables (`_memhal._vocabularies()`) and registers them
/// (`_memhal._register_vocabulary`); the references are kept for the life of the process, as
/// the error classes are.
template <Vocabulary E>
struct EnumClass {
  static inline PyObject* type = nullptr;
  static inline std::array<PyObject*, VocabularyTraits<E>::entries.size()> members{};
};

/// The base class of every vocabulary enum (memhal._Vocabulary), once registered.
inline PyObject* g_vocabulary_base = nullptr;

/// The Python member of `value` (a new reference). InternalError before registration.
template <Vocabulary E>
py::object enum_member(E value) {
  const auto& entries = VocabularyTraits<E>::entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].value == value && EnumClass<E>::members[i] != nullptr)
      return py::reinterpret_borrow<py::object>(EnumClass<E>::members[i]);
  }
  raise(ErrorCode::Internal, std::string(VocabularyTraits<E>::name) + " " + std::to_string(code(value)) +
                                 " has no Python member: import memhal, not memhal._memhal");
}

/// The enumerator of `value` when it is a member of `E`'s Python enum, else nothing.
template <Vocabulary E>
std::optional<E> enum_value(py::handle value) {
  const auto& members = EnumClass<E>::members;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] != nullptr && value.ptr() == members[i]) return VocabularyTraits<E>::entries[i].value;
  }
  return std::nullopt;
}

/// A numpy dtype, scalar type or dtype name (`np.float32`, `np.dtype("uint8")`, "float32") as
/// a DType; nothing for what numpy does not read as one, or reads as a dtype memhal lacks
/// (bool, complex, a byte order other than the native one). numpy is imported only here.
std::optional<DType> dtype_from_numpy(py::handle value);

/// `value` as vocabulary `E`: an enum member, its wire string (or an alias), its integer code
/// or, for DType, a numpy dtype or dtype name. Anything else raises InvalidArgumentError
/// naming `what`.
template <Vocabulary E>
E to_vocabulary(py::handle value, const char* what) {
  if (auto member = enum_value<E>(value)) return *member;
  const std::string name(VocabularyTraits<E>::name);
  if (g_vocabulary_base != nullptr && PyObject_IsInstance(value.ptr(), g_vocabulary_base) == 1)
    raise(ErrorCode::InvalidArgument, std::string(what) + ": expected a " + name + ", got " + type_name(value) + "." +
                                          py::str(value.attr("name")).cast<std::string>());
  if (py::isinstance<py::str>(value)) {
    if (auto parsed = from_string<E>(value.cast<std::string>())) return *parsed;
  } else if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0 && number >= 0 && number <= 0xffffffffLL) {
      if (auto parsed = from_code<E>(static_cast<uint32_t>(number))) return *parsed;
    }
    raise(ErrorCode::InvalidArgument,
          std::string(what) + ": unknown " + name + " code " + std::string(py::repr(value)));
  }
  if constexpr (std::is_same_v<E, DType>) {
    if (!value.is_none()) {
      if (auto dtype = dtype_from_numpy(value)) return *dtype;
    }
  }
  if (py::isinstance<py::str>(value))
    raise(ErrorCode::InvalidArgument, std::string(what) + ": unknown " + name + " '" + value.cast<std::string>() + "'");
  raise(ErrorCode::InvalidArgument, std::string(what) + ": expected a " + name + ", its wire string or its code" +
                                        (std::is_same_v<E, DType> ? ", or a numpy dtype" : "") + ", got " +
                                        type_name(value));
}

/// As `to_vocabulary`, with None meaning "no choice" (auto-selection).
template <Vocabulary E>
std::optional<E> to_optional_vocabulary(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  return to_vocabulary<E>(value, what);
}

/// A shape from an int or a sequence of ints; InvalidArgumentError naming the dimension for a
/// float, a bool or an int beyond int64.
inline std::vector<int64_t> to_shape(py::handle value) {
  if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) return {to_int64(value, "shape")};
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value))
    raise(ErrorCode::InvalidArgument, "shape: expected an int or a sequence of ints, got " + type_name(value));
  std::vector<int64_t> shape;
  for (auto item : value) shape.push_back(to_int64(item, "shape: dimension " + std::to_string(shape.size())));
  return shape;
}

/// A C++ object behind a Python one that `close()` can drop while other threads use it: each
/// call takes a `Lease` (a reference, counted as in flight) before it releases the GIL, so the
/// object lives until the last call that uses it returns. Changed only with the GIL held.
template <class T>
struct Closable {
  std::shared_ptr<T> object;
  int in_flight = 0;

  struct Lease {
    std::shared_ptr<T> object;
    int* in_flight;
    Lease(std::shared_ptr<T> o, int* count) : object(std::move(o)), in_flight(count) { ++*in_flight; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { --*in_flight; }
    T* operator->() const { return object.get(); }
    T& operator*() const { return *object; }
  };

  /// The object for one call; InvalidArgumentError naming `what` ("Channel.receive") once closed.
  Lease use(const std::string& what) {
    if (!object) raise(ErrorCode::InvalidArgument, what + ": the " + what.substr(0, what.find('.')) + " is closed");
    return Lease(object, &in_flight);
  }
};

}  // namespace memhal::python
namespace memhal {
class Recorder;
class Replayer;
namespace ipc {
class Channel;
class Listener;
}  // namespace ipc
}  // namespace memhal
namespace memhal::python {

/// The Python Channel, Listener, Recorder and Replayer (close() drops the C++ object).
using PyChannel = Closable<ipc::Channel>;
using PyListener = Closable<ipc::Listener>;
using PyRecorder = Closable<Recorder>;
using PyReplayer = Closable<Replayer>;

/// A tuple of ints, for shapes and strides.
inline py::tuple to_tuple(std::span<const int64_t> values) {
  py::tuple out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return out;
}

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_dlpack(py::module_& m);
void bind_foreign(py::module_& m);
void bind_pipeline(py::module_& m);
void bind_frame(py::module_& m);  // after bind_pipeline: adds to Channel
void bind_camera(py::module_& m);
void bind_pool(py::module_& m);

}  // namespace memhal::python

// Vocabulary values cross as the members of the Python enums memhal/__init__.py registers (a
// return gives the member; a parameter typed as the enum takes a member, its wire string or
// alias, or its code). Named after the Python class in generated signatures.
namespace pybind11::detail {
template <class E>
struct vocabulary_caster_name;
#define MEMHAL_PY_VOCABULARY_NAME(E)                       \
  template <>                                              \
  struct vocabulary_caster_name<memhal::E> {               \
    static constexpr auto name = const_name("memhal." #E); \
  };
MEMHAL_PY_VOCABULARY_NAME(MemoryKind)
MEMHAL_PY_VOCABULARY_NAME(DType)
MEMHAL_PY_VOCABULARY_NAME(PixelFormat)
MEMHAL_PY_VOCABULARY_NAME(Compression)
MEMHAL_PY_VOCABULARY_NAME(CpuAccess)
MEMHAL_PY_VOCABULARY_NAME(MemoryDomainKind)
MEMHAL_PY_VOCABULARY_NAME(Flip)
MEMHAL_PY_VOCABULARY_NAME(Rotation)
MEMHAL_PY_VOCABULARY_NAME(ResizeMode)
MEMHAL_PY_VOCABULARY_NAME(Interpolation)
MEMHAL_PY_VOCABULARY_NAME(ColorMatrix)
MEMHAL_PY_VOCABULARY_NAME(ColorRange)
MEMHAL_PY_VOCABULARY_NAME(ImageBackend)
MEMHAL_PY_VOCABULARY_NAME(ErrorCode)
#undef MEMHAL_PY_VOCABULARY_NAME

template <class E>
struct type_caster<E, std::enable_if_t<memhal::Vocabulary<E>>> {
  PYBIND11_TYPE_CASTER(E, vocabulary_caster_name<E>::name);

  bool load(handle src, bool convert) {
    if (auto member = memhal::python::enum_value<E>(src)) {
      value = *member;
      return true;
    }
    if (!convert) return false;
    std::optional<E> parsed;
    if (isinstance<str>(src)) parsed = memhal::from_string<E>(src.cast<std::string>());
    if (parsed) value = *parsed;
    return parsed.has_value();
  }

  static handle cast(E src, return_value_policy /*policy*/, handle /*parent*/) {
    return memhal::python::enum_member(src).release();
  }
};
}  // namespace pybind11::detail
