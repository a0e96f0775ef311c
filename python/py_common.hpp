// Shared by the files of the Python module: errors, vocabulary arguments, the noun binders.
#pragma once
#include <pybind11/pybind11.h>

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
    const auto number = value.cast<long long>();
    if (number >= 0 && number <= 0xffffffffLL) {
      if (auto parsed = from_code<E>(static_cast<uint32_t>(number))) return *parsed;
    }
    raise(ErrorCode::InvalidArgument, std::string(what) + ": unknown " + std::string(VocabularyTraits<E>::name) +
                                          " code " + std::to_string(number));
  }
  raise(ErrorCode::InvalidArgument, std::string(what) + ": expected a " + std::string(VocabularyTraits<E>::name) +
                                        ", its wire string or its code, got " +
                                        std::string(py::str(value.get_type().attr("__name__"))));
}

/// As `to_vocabulary`, with None meaning "no choice" (auto-selection).
template <Vocabulary E>
std::optional<E> to_optional_vocabulary(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  return to_vocabulary<E>(value, what);
}

/// A shape from an int or a sequence of ints.
inline std::vector<int64_t> to_shape(py::handle value) {
  if (py::isinstance<py::int_>(value)) return {value.cast<int64_t>()};
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value))
    raise(ErrorCode::InvalidArgument, "shape: expected an int or a sequence of ints");
  std::vector<int64_t> shape;
  for (auto item : value) shape.push_back(item.cast<int64_t>());
  return shape;
}

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_dlpack(py::module_& m);
void bind_foreign(py::module_& m);
void bind_pipeline(py::module_& m);
void bind_frame(py::module_& m);  // after bind_pipeline: adds to Channel

}  // namespace memhal::python
