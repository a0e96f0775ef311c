#include <memhal/error.hpp>

namespace memhal {

std::string Error::to_string() const {
  const std::string_view name = memhal::to_string(code_);
  std::string out(name.empty() ? "unknown" : name);  // a code outside the table: a bug or a newer producer
  out += ": ";
  out += message_;
  return out;
}

}  // namespace memhal
