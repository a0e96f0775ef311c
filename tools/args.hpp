// Command-line parsing shared by the memhal subcommands: options in both spellings
// (`--name value` and `--name=value`), vocabulary values through their tables, and numbers
// read strictly. A number is the whole argument, in range and finite: `10abc`, `1e3` for a
// count, `nan`, `inf` and a value that wraps are usage errors that name the argument, never a
// guess.
#pragma once

#include <memhal/vocabulary.hpp>
#include <tl/expected.hpp>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memhal::cli {

/// A problem with the command line, as the user will read it ("--frames: expects ...").
using UsageError = std::string;

template <class T>
using Parsed = tl::expected<T, UsageError>;

/// One argument as the user wrote it: an option with its value, a flag, or a positional one.
struct Argument {
  std::string_view name;   ///< "--size", "--letterbox"; empty for a positional argument
  std::string_view value;  ///< the option's value or the positional argument; empty for a flag
};

/// Splits `args` into options and positional arguments. The options in `flags` take no value;
/// every other `--name` takes one, as the next argument or after '=' (`--size=640x480`).
/// Errors: a flag given a value, an option with no value.
Parsed<std::vector<Argument>> split_arguments(std::span<const std::string_view> args,
                                              std::initializer_list<std::string_view> flags);

/// A decimal integer: the whole of `text`, an optional '-' and digits, within [min, max].
Parsed<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max);

/// A finite decimal number (`1.5`, `2e-3`): the whole of `text`, within [min, max].
Parsed<double> parse_real(std::string_view text, double min, double max);

/// `count_min` to `count_max` integers separated by `separator`, each within [min, max].
Parsed<std::vector<int64_t>> parse_integers(std::string_view text, char separator, std::size_t count_min,
                                            std::size_t count_max, int64_t min, int64_t max);

/// `count_min` to `count_max` numbers separated by ',', each finite and within [min, max].
Parsed<std::vector<double>> parse_reals(std::string_view text, std::size_t count_min, std::size_t count_max, double min,
                                        double max);

/// An image size `WxH`, each side within 1..`max_side`.
Parsed<std::pair<int64_t, int64_t>> parse_size(std::string_view text, int64_t max_side);

/// The wire strings of vocabulary `E` in code order, joined by `separator`
/// ("none|horizontal|vertical|both"): what help texts and errors list.
template <Vocabulary E>
std::string spellings(std::string_view separator = "|") {
  std::string out;
  for (E value : all<E>()) out += (out.empty() ? "" : std::string(separator)) + std::string(to_string(value));
  return out;
}

/// The aliases of vocabulary `E` ("h, v"); accepted, never written; empty when there are none.
template <Vocabulary E>
std::string alias_spellings() {
  std::string out;
  for (const auto& entry : VocabularyTraits<E>::entries) {
    for (std::string_view alias : entry.aliases) {
      if (!alias.empty()) out += (out.empty() ? "" : ", ") + std::string(alias);
    }
  }
  return out;
}

/// The enumerator of vocabulary `E` spelled `text` (a wire string or an alias, any case, as
/// `from_string`); the error names the vocabulary and lists its wire strings.
template <Vocabulary E>
Parsed<E> parse_vocabulary(std::string_view text) {
  if (auto known = from_string<E>(text)) return *known;
  return tl::unexpected("unknown " + std::string(VocabularyTraits<E>::name) + " '" + std::string(text) + "' (expects " +
                        spellings<E>() + ")");
}

/// Prefixes an error with the argument it is about: "--frames: expects ...".
inline UsageError about(std::string_view name, const UsageError& problem) {
  return std::string(name) + ": " + problem;
}

}  // namespace memhal::cli
