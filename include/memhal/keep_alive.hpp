/// @file
/// `KeepAlive`: a type-erased, reference-counted owner of a native object (a CUDA buffer, a
/// Vulkan image, a `CVPixelBufferRef` wrapper, ...) that memhal carries without linking the API
/// it belongs to.
///
/// Built from a `std::shared_ptr<T>` whose deleter releases the native object; copying a
/// `KeepAlive` is a reference-count bump, and the native object is released exactly once,
/// when the last copy drops, on whichever thread drops it. `get<T>()` gives the object back
/// typed, or null when it holds another type.
///
/// Thread-safety: as `std::shared_ptr` — distinct copies may be used and dropped on any
/// threads at once.
#pragma once

#include <memory>
#include <typeinfo>
#include <utility>

namespace memhal {

class KeepAlive {
 public:
  /// Holds nothing.
  KeepAlive() noexcept = default;

  /// Holds `object` (shares its ownership).
  template <class T>
  static KeepAlive of(std::shared_ptr<T> object) noexcept {
    KeepAlive keep_alive;
    keep_alive.type_ = object ? &typeid(T) : nullptr;
    keep_alive.object_ = std::move(object);
    return keep_alive;
  }

  /// The held object as `T` when it was made from a `std::shared_ptr<T>`; else null.
  template <class T>
  const T* get() const noexcept {
    // type_info equality compares names where needed, so this works across shared objects.
    return type_ != nullptr && *type_ == typeid(T) ? static_cast<const T*>(object_.get()) : nullptr;
  }

  /// The object untyped, for code that only keeps it alive.
  const std::shared_ptr<const void>& object() const noexcept { return object_; }
  /// How many `KeepAlive`s (and other `shared_ptr`s) share the object; 0 when empty.
  long use_count() const noexcept { return object_.use_count(); }
  explicit operator bool() const noexcept { return static_cast<bool>(object_); }

 private:
  std::shared_ptr<const void> object_;
  const std::type_info* type_ = nullptr;
};

}  // namespace memhal
