// Which Mesa a GL test runs on. CTest runs every GL test twice: on the system's Mesa, and as
// `<name>.mesa25` on Mesa 25 from bookworm-backports, which the `gl.fetch_mesa25` fixture
// unpacks into the build tree (scripts/fetch-mesa25.sh) and MEMHAL_TEST_MESA25 names. There a
// test skips, with the reason, when the fixture could not fetch it, and fails when the driver
// it gets is not Mesa 25 (the run would otherwise test the system's driver twice, silently).
#pragma once

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace memhal::testing {

/// The fixture's directory when this is the Mesa 25 run.
inline std::optional<std::string> mesa25_dir() {
  const char* dir = std::getenv("MEMHAL_TEST_MESA25");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return std::string(dir);
}

/// Why the Mesa 25 run cannot happen (the fixture's `unavailable` file, or no fixture output).
inline std::optional<std::string> mesa25_missing() {
  const auto dir = mesa25_dir();
  if (!dir) return std::nullopt;
  std::ifstream why(*dir + "/unavailable");
  if (why) {
    std::stringstream text;
    text << why.rdbuf();
    return text.str();
  }
  if (!std::ifstream(*dir + "/env")) return "Mesa 25 was not fetched into " + *dir + " (run the gl.fetch_mesa25 test)";
  return std::nullopt;
}

/// Empty when `version` (GL_VERSION) is the driver this run must test; else what is wrong.
inline std::string wrong_mesa(const std::string& version) {
  if (mesa25_dir() && version.find("Mesa 25.") == std::string::npos) {
    return "the Mesa 25 run got the driver '" + version + "': the fixture's environment did not take effect";
  }
  return "";
}

}  // namespace memhal::testing
