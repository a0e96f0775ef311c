/// @file
/// `Metadata`: a frame's typed side data (timestamps from a sensor, detections, an exposure
/// value ...), keyed by name.
///
/// Entries are shared by reference count: copying a `Metadata` (as every frame share does)
/// copies no entry, and a branch that modifies its copy gets its own table first
/// (copy-on-write) — entries themselves are immutable and stay shared. `get<T>` answers only
/// for the type an entry was stored with.
///
/// Thread-safety: a value (one thread at a time); copies may be read, modified and dropped on
/// any threads at once.
#pragma once

#include <cstddef>
#include <map>
#include <memhal/counted.hpp>
#include <memhal/export.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace memhal {

class MEMHAL_EXPORT Metadata {
 public:
  Metadata() noexcept = default;

  /// Stores `value` under `key`, replacing any entry there (whatever its type).
  template <class T>
  void set(std::string key, T value) {
    using V = std::decay_t<T>;
    put(std::move(key), Entry{std::make_shared<const V>(std::move(value)), &typeid(V)});
  }
  /// The value under `key` when it was stored as a `T`; else null. Valid until this
  /// `Metadata` is next modified or destroyed.
  template <class T>
  const T* get(std::string_view key) const noexcept {
    const Entry* entry = find(key);
    return entry != nullptr && *entry->type == typeid(T) ? static_cast<const T*>(entry->value.get()) : nullptr;
  }
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// Removes the entry under `key`; whether there was one.
  bool erase(std::string_view key);
  std::size_t size() const noexcept { return table_ ? table_->size() : 0; }
  bool empty() const noexcept { return size() == 0; }
  /// The keys, sorted.
  std::vector<std::string> keys() const;

  /// Whether `a` and `b` share one table (no copy has been made between them).
  friend bool same_table(const Metadata& a, const Metadata& b) noexcept { return a.table_ && a.table_ == b.table_; }

 private:
  struct Entry {
    std::shared_ptr<const void> value;
    const std::type_info* type = nullptr;
  };
  using Table = std::map<std::string, Entry, std::less<>>;

  const Entry* find(std::string_view key) const noexcept;
  void put(std::string key, Entry entry);
  /// The table, copied first when another `Metadata` shares it.
  Table& writable_table();

  detail::Counted<Table> table_;
};

}  // namespace memhal
