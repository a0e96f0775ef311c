// Little-endian writing and bounds-checked reading of the binary formats (descriptors,
// recordings, channel messages). Readers never read past their span: every read reports
// whether the bytes were there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace memhal::detail {

class WireWriter {
 public:
  template <class T>
  void put(T value) {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    U bits = static_cast<U>(value);
    for (std::size_t i = 0; i < sizeof(T); ++i) bytes_.push_back(static_cast<std::byte>((bits >> (8 * i)) & 0xff));
  }
  void put_bytes(std::span<const std::byte> data) { bytes_.insert(bytes_.end(), data.begin(), data.end()); }
  void put_string(std::string_view text) { put_bytes(std::as_bytes(std::span<const char>(text.data(), text.size()))); }
  /// Overwrites a u32 written earlier at `at` (for lengths known only at the end).
  void patch_u32(std::size_t at, uint32_t value) {
    for (std::size_t i = 0; i < 4; ++i) bytes_[at + i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
  }
  std::size_t size() const { return bytes_.size(); }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  template <class T>
  bool get(T& value) {
    static_assert(std::is_integral_v<T>);
    if (remaining() < sizeof(T)) return false;
    std::make_unsigned_t<T> bits = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      bits |= static_cast<std::make_unsigned_t<T>>(std::to_integer<uint8_t>(bytes_[at_ + i])) << (8 * i);
    }
    value = static_cast<T>(bits);
    at_ += sizeof(T);
    return true;
  }
  bool get_string(std::size_t length, std::string& text) {
    if (remaining() < length) return false;
    text.assign(reinterpret_cast<const char*>(bytes_.data() + at_), length);
    at_ += length;
    return true;
  }
  bool get_span(std::size_t length, std::span<const std::byte>& out) {
    if (remaining() < length) return false;
    out = bytes_.subspan(at_, length);
    at_ += length;
    return true;
  }
  std::size_t remaining() const { return bytes_.size() - at_; }
  std::size_t position() const { return at_; }

 private:
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
};

}  // namespace memhal::detail
