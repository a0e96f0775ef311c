// The subcommands of the memhal command. Each takes the arguments after its name and returns
// the process exit status (0 success, 1 failure, 2 usage error).
#pragma once

#include <span>
#include <string_view>

namespace memhal::cli {

int run_info(std::span<const std::string_view> args);
int run_demo(std::span<const std::string_view> args);
int run_inspect(std::span<const std::string_view> args);
int run_convert(std::span<const std::string_view> args);
int run_capture(std::span<const std::string_view> args);

}  // namespace memhal::cli
