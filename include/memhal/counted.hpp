/// @file
/// `detail::Counted<T>`: the reference count behind memhal's copy-on-write types
/// (`SharedBytes`, `Metadata`).
///
/// Like `std::shared_ptr<T>` with one difference that copy-on-write needs: `unique()` is an
/// acquire load that synchronises with the release of every other reference, so a writer that
/// sees itself alone may write without racing the reads another thread made before dropping
/// its share. (`std::shared_ptr::use_count()` is a relaxed load and gives no such order.)
/// Not part of the API a user calls; it lives in a public header because the types above hold
/// it by value.
#pragma once

#include <atomic>
#include <utility>

namespace memhal::detail {

template <class T>
class Counted {
 public:
  Counted() noexcept = default;

  /// A new object, constructed from `args`, with one reference (this one).
  template <class... Args>
  static Counted make(Args&&... args) {
    Counted counted;
    counted.node_ = new Node(std::forward<Args>(args)...);
    return counted;
  }

  Counted(const Counted& other) noexcept : node_(other.node_) {
    if (node_ != nullptr) node_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Counted(Counted&& other) noexcept : node_(std::exchange(other.node_, nullptr)) {}
  Counted& operator=(Counted other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }
  ~Counted() { reset(); }

  void reset() noexcept {
    // acq_rel: the last owner sees every other owner's accesses before it destroys the value.
    if (node_ != nullptr && node_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete node_;
    node_ = nullptr;
  }

  /// The object; writable only by a holder for which `unique()` is true.
  T* get() const noexcept { return node_ != nullptr ? &node_->value : nullptr; }
  T& operator*() const noexcept { return node_->value; }
  T* operator->() const noexcept { return &node_->value; }
  explicit operator bool() const noexcept { return node_ != nullptr; }

  /// References to the object, 0 when empty (exact only when no other thread copies or drops
  /// one at the same time; 1 is always exact, since only this holder could make another).
  long use_count() const noexcept { return node_ != nullptr ? node_->refs.load(std::memory_order_acquire) : 0; }
  bool unique() const noexcept { return use_count() == 1; }

  friend bool operator==(const Counted& a, const Counted& b) noexcept { return a.node_ == b.node_; }

 private:
  struct Node {
    template <class... Args>
    explicit Node(Args&&... args) : value(std::forward<Args>(args)...) {}
    std::atomic<long> refs{1};
    T value;
  };
  Node* node_ = nullptr;
};

}  // namespace memhal::detail
