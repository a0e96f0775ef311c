// A minimal JSON writer for the command's --json outputs.
#pragma once

#include <string>
#include <string_view>

namespace memhal::cli {

/// `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text);

}  // namespace memhal::cli
