#include "args.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace memhal::cli {
namespace {

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// The items of `text` between separators; an empty item stays (and fails to parse).
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> items;
  for (;;) {
    const std::size_t at = text.find(separator);
    items.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return items;
    text.remove_prefix(at + 1);
  }
}

}  // namespace

Parsed<std::vector<Argument>> split_arguments(std::span<const std::string_view> args,
                                              std::initializer_list<std::string_view> flags) {
  std::vector<Argument> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (!arg.starts_with("-") || arg == "-") {
      out.push_back({{}, arg});
      continue;
    }
    const std::size_t equals = arg.find('=');
    const std::string_view name = arg.substr(0, equals);
    bool is_flag = false;
    for (std::string_view flag : flags) is_flag = is_flag || flag == name;
    if (is_flag) {
      if (equals != std::string_view::npos) return tl::unexpected(about(name, "takes no value"));
      out.push_back({name, {}});
    } else if (equals != std::string_view::npos) {
      out.push_back({name, arg.substr(equals + 1)});
    } else if (i + 1 < args.size()) {
      out.push_back({name, args[++i]});
    } else {
      return tl::unexpected(about(name, "needs a value"));
    }
  }
  return out;
}

Parsed<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max) {
  const std::string range = " from " + std::to_string(min) + " to " + std::to_string(max);
  int64_t value = 0;
  // from_chars takes no '+', no spaces and no base prefix; `ptr` says whether it read it all.
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size()) {
    return tl::unexpected("expects a whole number" + range + ", got " + quoted(text));
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    return tl::unexpected("expects a whole number" + range + ", got " + quoted(text) + " (out of range)");
  }
  return value;
}

Parsed<double> parse_real(std::string_view text, double min, double max) {
  const std::string range = " from " + number_text(min) + " to " + number_text(max);
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size()) {
    return tl::unexpected("expects a number" + range + ", got " + quoted(text));
  }
  // from_chars reads "nan" and "inf"; an underflow such as 1e-400 is out of range too.
  if (ec == std::errc::result_out_of_range || !std::isfinite(value) || value < min || value > max) {
    return tl::unexpected("expects a finite number" + range + ", got " + quoted(text));
  }
  return value;
}

Parsed<std::vector<int64_t>> parse_integers(std::string_view text, char separator, std::size_t count_min,
                                            std::size_t count_max, int64_t min, int64_t max) {
  const std::vector<std::string_view> items = split(text, separator);
  if (items.size() < count_min || items.size() > count_max) {
    return tl::unexpected("expects " + std::to_string(count_min) +
                          (count_max > count_min ? " to " + std::to_string(count_max) : std::string()) +
                          " numbers separated by '" + std::string(1, separator) + "', got " + quoted(text));
  }
  std::vector<int64_t> values;
  for (std::string_view item : items) {
    auto value = parse_integer(item, min, max);
    if (!value) return tl::unexpected(value.error());
    values.push_back(*value);
  }
  return values;
}

Parsed<std::vector<double>> parse_reals(std::string_view text, std::size_t count_min, std::size_t count_max, double min,
                                        double max) {
  const std::vector<std::string_view> items = split(text, ',');
  if (items.size() < count_min || items.size() > count_max) {
    return tl::unexpected("expects " + std::to_string(count_min) + " to " + std::to_string(count_max) +
                          " numbers separated by ',', got " + quoted(text));
  }
  std::vector<double> values;
  for (std::string_view item : items) {
    auto value = parse_real(item, min, max);
    if (!value) return tl::unexpected(value.error());
    values.push_back(*value);
  }
  return values;
}

Parsed<std::pair<int64_t, int64_t>> parse_size(std::string_view text, int64_t max_side) {
  const std::vector<std::string_view> items = split(text, 'x');
  if (items.size() != 2) return tl::unexpected("expects WxH, got " + quoted(text));
  auto width = parse_integer(items[0], 1, max_side);
  if (!width) return tl::unexpected("width " + width.error());
  auto height = parse_integer(items[1], 1, max_side);
  if (!height) return tl::unexpected("height " + height.error());
  return std::pair{*width, *height};
}

}  // namespace memhal::cli
