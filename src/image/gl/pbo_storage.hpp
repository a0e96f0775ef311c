// Pbo storage: a GL buffer object in the context of the ImageProcessor that made it. The CPU
// reaches it through glMapBufferRange on the GL thread; the GL backend reads and writes it in
// place (pixel unpack and pack buffers), which is what makes Pbo tensors worth having.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "image/gl/gl_context.hpp"
#include "storage/storage.hpp"

namespace memhal::detail::gl {

class PboStorage final : public Storage {
 public:
  /// A zeroed buffer of `size` bytes in `context`. `OutOfMemory` when the driver refuses it.
  static Result<std::shared_ptr<PboStorage>> create(const std::shared_ptr<GlContext>& context, std::size_t size);
  ~PboStorage() override;

  MemoryKind kind() const noexcept override { return MemoryKind::Pbo; }
  std::size_t size() const noexcept override { return size_; }
  /// Maps the buffer with the access asked for (GL_MAP_READ_BIT / GL_MAP_WRITE_BIT). Maps nest:
  /// while one is open, further maps with no more access share its pointer; asking for more
  /// (a write while only a read is open) is `Busy`. `Unavailable` once the context is gone
  /// (its ImageProcessor was destroyed) or lost. The context lives while a map is open.
  Result<std::byte*> begin_access(CpuAccess access) override;
  void end_access(CpuAccess access) noexcept override;

  GLuint buffer() const noexcept { return buffer_; }
  /// Whether `context` is the one this buffer lives in. Compares the context's id, never its
  /// address: a later context allocated where a destroyed one was is not this buffer's.
  bool belongs_to(const GlContext& context) const noexcept { return owner_id_ == context.id(); }
  /// Whether the context this buffer lived in was destroyed (and the buffer with it).
  bool context_gone() const noexcept { return context_.expired(); }
  /// Whether the CPU holds a map (GL must not use a mapped buffer).
  bool mapped() const;

 private:
  PboStorage(std::weak_ptr<GlContext> context, uint64_t owner_id, GLuint buffer, std::size_t size)
      : context_(std::move(context)), owner_id_(owner_id), buffer_(buffer), size_(size) {}

  std::weak_ptr<GlContext> context_;
  uint64_t owner_id_;
  GLuint buffer_;
  std::size_t size_;
  mutable std::mutex mutex_;
  int maps_ = 0;
  CpuAccess mapped_access_ = CpuAccess::Read;
  std::byte* pointer_ = nullptr;
  std::shared_ptr<GlContext> pinned_;  // keeps the context (and so the mapping) alive while mapped
};

}  // namespace memhal::detail::gl
