// Shared by the files of the Python module: errors, vocabulary arguments, the noun binders.
#pragma once
#include <pybind11/pybind11.h>

#include <chrono>
#include <cmath>
#include <memhal/error.hpp>
#include <memhal/vocabulary.hpp>
#include <optional>
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

/// `value` as vocabulary `E`: an enum member, its wire string (or an alias), or its integer
/// code. Anything else raises InvalidArgumentError naming `what`.
template <Vocabulary E>
E to_vocabulary(py::handle value, const char* what) {
  if (py::isinstance<E>(value)) return value.cast<E>();
  if (py::isinstance<py::str>(value)) {
    const auto text = value.cast<std::string>();
    if (auto parsed = from_string<E>(text)) return *parsed;
    raise(ErrorCode::InvalidArgument,
          std::string(what) + ": unknown " + std::string(VocabularyTraits<E>::name) + " '" + text + "'");
  }
  if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0 && number >= 0 && number <= 0xffffffffLL) {
      if (auto parsed = from_code<E>(static_cast<uint32_t>(number))) return *parsed;
    }
    raise(ErrorCode::InvalidArgument, std::string(what) + ": unknown " + std::string(VocabularyTraits<E>::name) +
                                          " code " + std::string(py::repr(value)));
  }
  raise(ErrorCode::InvalidArgument, std::string(what) + ": expected a " + std::string(VocabularyTraits<E>::name) +
                                        ", its wire string or its code, got " + type_name(value));
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

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_dlpack(py::module_& m);
void bind_foreign(py::module_& m);
void bind_pipeline(py::module_& m);
void bind_frame(py::module_& m);  // after bind_pipeline: adds to Channel
void bind_camera(py::module_& m);

}  // namespace memhal::python
