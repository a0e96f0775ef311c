// memhal inspect FILE.mhrec: what a recording holds, record by record.
#include <cstdio>
#include <iostream>
#include <memhal/pixel_format.hpp>
#include <memhal/recording.hpp>
#include <string>

#include "commands.hpp"

namespace memhal::cli {
namespace {

constexpr std::string_view kUsage = "usage: memhal inspect FILE.mhrec\n";

template <Vocabulary E>
std::string name_of(uint32_t value) {
  if (auto known = from_code<E>(value)) return std::string(to_string(*known));
  return "code " + std::to_string(value) + "?";
}

std::string shape_of(const ipc::Descriptor& d) {
  std::string out = "[";
  for (std::size_t i = 0; i < d.shape.size(); ++i) out += (i ? "," : "") + std::to_string(d.shape[i]);
  return out + "]";
}

std::string time_of(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", static_cast<double>(ns) / 1e9);
  return text;
}

}  // namespace

int run_inspect(std::span<const std::string_view> args) {
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::cout << kUsage;
    return 0;
  }
  if (args.size() != 1 || args[0].starts_with("-")) {
    std::cerr << "memhal inspect: expected one recording file\n" << kUsage;
    return 2;
  }
  auto replayer = Replayer::open(std::string(args[0]));
  if (!replayer) {
    std::cerr << "memhal inspect: " << replayer.error().to_string() << "\n";
    return 1;
  }
  std::printf("%-6s %-14s %-28s %-5s %-18s %-12s %s\n", "index", "time_s", "backing", "dtype", "shape", "format",
              "bytes");
  uint64_t count = 0;
  for (;;) {
    auto record = replayer->next();
    if (!record) {
      std::printf("error: %s\n%llu intact records before the damage\n", record.error().to_string().c_str(),
                  static_cast<unsigned long long>(count));
      return 1;
    }
    if (!record->has_value()) break;
    const Record& r = **record;
    const ipc::Descriptor& d = r.descriptor;
    const std::string format = d.pixel_format_code ? name_of<PixelFormat>(d.pixel_format_code) : "-";
    const std::string bytes = r.has_payload ? std::to_string(r.payload.size()) : "none (descriptor only)";
    std::printf("%-6llu %-14s %-28s %-5s %-18s %-12s %s\n", static_cast<unsigned long long>(r.index),
                time_of(r.timestamp_ns).c_str(), d.memory_description().c_str(), name_of<DType>(d.dtype_code).c_str(),
                shape_of(d).c_str(), format.c_str(), bytes.c_str());
    ++count;
  }
  std::printf("%llu records\n", static_cast<unsigned long long>(count));
  return 0;
}

}  // namespace memhal::cli
