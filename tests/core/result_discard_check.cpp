// Built by the test result_discard_fails_to_compile (tests/core/CMakeLists.txt): Result is
// [[nodiscard]], so discarding one must not compile under -Werror=unused-result, while the
// same file without the discards (results used, or ignored with an explicit (void)) must.
#include <memhal/error.hpp>

namespace {

memhal::Result<int> answer() {
  return 42;
}
memhal::Result<void> done() {
  return {};
}

}  // namespace

int use_results() {
#ifdef MEMHAL_COMPILE_FAILURE
  answer();
  done();
#endif
  (void)done();  // ignored on purpose: how the code base says so
  auto value = answer();
  return value.has_value() ? *value : 0;
}
