// The memhal command: one binary, one subcommand per capability.
#include <exception>
#include <iostream>
#include <span>
#include <string_view>
#include <vector>

#include <memhal/version.hpp>

#include "commands.hpp"

namespace {

constexpr std::string_view kUsage =
    "usage: memhal <command> [options]\n"
    "\n"
    "commands:\n"
    "  info [--json]   memory kinds with code, availability and reason; the cameras\n"
    "  demo [options]  the main job: zero-copy fan-out of camera frames to two consumers\n"
    "  inspect FILE    the records of a .mhrec recording\n"
    "  convert IN OUT  an image or raw YUV frame through ImageProcessor, to PNG or .npy\n"
    "  capture DEV OUT frames from a V4L2 camera into a PNG, .npy or .raw file\n"
    "\n"
    "memhal --version prints the version of the memhal library; memhal help COMMAND (or\n"
    "memhal COMMAND --help) the options of a command. Options take their value as --name VALUE\n"
    "or --name=VALUE. Exit status: 0 success, 1 failure, 2 usage error (the message names the\n"
    "argument).\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--version") {
    std::cout << "memhal " << memhal::version() << "\n";  // the library this binary runs against
    return 0;
  }
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && args.size() == 1)) {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? 2 : 0;
  }
  // `memhal help COMMAND` is `memhal COMMAND --help`.
  constexpr std::string_view kHelp[] = {"--help"};
  const bool help = args[0] == "help";
  const std::string_view command = help ? args[1] : args[0];
  const std::span<const std::string_view> rest =
      help ? std::span<const std::string_view>(kHelp)
           : std::span<const std::string_view>(args.data() + 1, args.size() - 1);
  if (help && args.size() > 2) {
    std::cerr << "memhal: help takes one command\n" << kUsage;
    return 2;
  }
  // The commands report their failures themselves; this is the last resort for an exception
  // one did not expect (bad_alloc in a container), which would otherwise abort.
  try {
    if (command == "info") return memhal::cli::run_info(rest);
    if (command == "demo") return memhal::cli::run_demo(rest);
    if (command == "inspect") return memhal::cli::run_inspect(rest);
    if (command == "convert") return memhal::cli::run_convert(rest);
    if (command == "capture") return memhal::cli::run_capture(rest);
  } catch (const std::exception& e) {
    std::cerr << "memhal " << command << ": unexpected error: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "memhal: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
