// Values cached per buffer (a GL import, a mapping, a registration), keyed by buffer identity.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "storage/storage.hpp"

namespace memhal::detail {

/// Entries keyed by `Storage::id()` and kept until the buffer itself is freed (the
/// storage's `weak_from_this()` expires) — not until the tensor that brought it is dropped —
/// so every hand-out of a pool slot after the first hits. Ids are never reused, so a freed
/// buffer's entry can never be taken for a new buffer's. Several entries may share a buffer.
/// Not thread-safe: one owner (a GL thread) at a time.
template <class Value>
class BufferCache {
 public:
  struct Entry {
    uint64_t buffer = 0;
    std::weak_ptr<const Storage> alive;
    Value value{};
  };

  /// Removes the entries of freed buffers, handing each value to `release` first.
  template <class Release>
  void collect(Release&& release) {
    auto gone = [](const Entry& e) { return e.alive.expired(); };
    for (Entry& entry : entries_) {
      if (gone(entry)) release(entry.value);
    }
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(), gone), entries_.end());
  }

  /// The first value of `storage`'s buffer for which `match(value)` holds, or null.
  template <class Match>
  Value* find(const Storage& storage, Match&& match) {
    for (Entry& entry : entries_) {
      if (entry.buffer == storage.id() && match(entry.value)) return &entry.value;
    }
    return nullptr;
  }

  /// Adds `value` for `storage`'s buffer; the reference is valid until the next change.
  Value& insert(const Storage& storage, Value value) {
    entries_.push_back(Entry{storage.id(), storage.weak_from_this(), std::move(value)});
    return entries_.back().value;
  }

  std::vector<Entry>& entries() noexcept { return entries_; }
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace memhal::detail
