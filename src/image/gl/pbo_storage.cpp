#include "image/gl/pbo_storage.hpp"

#include <cstring>

#include "core/strings.hpp"

namespace memhal::detail::gl {
namespace {

bool covers(CpuAccess open, CpuAccess wanted) {
  const auto bits = [](CpuAccess a) { return static_cast<uint32_t>(code(a)); };
  return (bits(open) & bits(wanted)) == bits(wanted);
}

GLbitfield map_bits(CpuAccess access) {
  GLbitfield bits = 0;
  if (covers(access, CpuAccess::Read)) bits |= GL_MAP_READ_BIT;
  if (covers(access, CpuAccess::Write)) bits |= GL_MAP_WRITE_BIT;
  return bits;
}

}  // namespace

Result<std::shared_ptr<PboStorage>> PboStorage::create(const std::shared_ptr<GlContext>& context, std::size_t size) {
  if (context->lost()) return fail(ErrorCode::Unavailable, "Pbo allocation: the GL context was lost");
  if (size > static_cast<std::size_t>(PTRDIFF_MAX)) {
    return fail(ErrorCode::OutOfMemory, "Pbo allocation of ", size, " bytes exceeds GLsizeiptr");
  }
  struct Made {
    GLuint buffer = 0;
    GLenum error = GL_NO_ERROR;
  };
  const Made made = context->run([size] {
    Made m;
    glGenBuffers(1, &m.buffer);
    glBindBuffer(GL_COPY_WRITE_BUFFER, m.buffer);
    glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(size), nullptr, GL_DYNAMIC_COPY);
    // glBufferData leaves the contents undefined and tensors start zeroed: clear it in place.
    if (void* bytes = size > 0 ? glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(size),
                                                  GL_MAP_WRITE_BIT | GL_MAP_INVALIDATE_BUFFER_BIT)
                               : nullptr) {
      std::memset(bytes, 0, size);
      glUnmapBuffer(GL_COPY_WRITE_BUFFER);
    }
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    m.error = glGetError();
    if (m.error != GL_NO_ERROR) glDeleteBuffers(1, &m.buffer);
    return m;
  });
  if (made.error != GL_NO_ERROR) {
    return fail(made.error == GL_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::Unavailable, "Pbo allocation of ",
                size, " bytes: glBufferData failed: ", gl_error_name(made.error));
  }
  return std::shared_ptr<PboStorage>(new PboStorage(context, context->id(), made.buffer, size));
}

PboStorage::~PboStorage() {
  // With the context gone the buffer went with it.
  if (auto context = context_.lock()) {
    context->run([buffer = buffer_] { glDeleteBuffers(1, &buffer); });
  }
}

bool PboStorage::mapped() const {
  std::lock_guard lock(mutex_);
  return maps_ > 0;
}

Result<std::byte*> PboStorage::begin_access(CpuAccess access) {
  if (access == CpuAccess::None) {
    return fail(ErrorCode::InvalidArgument, "Pbo buffer ", buffer_, ": a map needs read or write access");
  }
  std::lock_guard lock(mutex_);
  if (maps_ > 0) {
    if (!covers(mapped_access_, access)) {
      return fail(ErrorCode::Busy, "Pbo buffer ", buffer_, " is mapped for ", to_string(mapped_access_), "; a ",
                  to_string(access), " map must wait until that map ends");
    }
    ++maps_;
    return pointer_;
  }
  auto context = context_.lock();
  if (!context) {
    return fail(ErrorCode::Unavailable, "Pbo buffer ", buffer_,
                ": GL context gone (the ImageProcessor that made it was destroyed)");
  }
  if (context->lost()) return fail(ErrorCode::Unavailable, "Pbo buffer ", buffer_, ": the GL context was lost");
  struct Mapped {
    void* pointer = nullptr;
    GLenum error = GL_NO_ERROR;
  };
  const Mapped mapped = context->run([this, access] {
    Mapped m;
    glBindBuffer(GL_COPY_READ_BUFFER, buffer_);
    m.pointer = glMapBufferRange(GL_COPY_READ_BUFFER, 0, static_cast<GLsizeiptr>(size_), map_bits(access));
    m.error = glGetError();
    glBindBuffer(GL_COPY_READ_BUFFER, 0);
    return m;
  });
  if (mapped.pointer == nullptr) {
    return fail(ErrorCode::Unavailable, "Pbo buffer ", buffer_, ": glMapBufferRange(", to_string(access),
                ") failed: ", gl_error_name(mapped.error));
  }
  pointer_ = static_cast<std::byte*>(mapped.pointer);
  mapped_access_ = access;
  maps_ = 1;
  pinned_ = std::move(context);
  return pointer_;
}

void PboStorage::end_access(CpuAccess /*access*/) noexcept {
  std::shared_ptr<GlContext> context;
  {
    std::lock_guard lock(mutex_);
    if (maps_ == 0 || --maps_ > 0) return;
    context = std::move(pinned_);
    pointer_ = nullptr;
    context->run([buffer = buffer_] {
      glBindBuffer(GL_COPY_READ_BUFFER, buffer);
      glUnmapBuffer(GL_COPY_READ_BUFFER);
      glBindBuffer(GL_COPY_READ_BUFFER, 0);
    });
  }
  // `context` may be the last reference: it is released here, outside the lock.
}

}  // namespace memhal::detail::gl
