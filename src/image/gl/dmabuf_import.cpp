// Reviewed against the EGL_EXT_image_dma_buf_import (rev. 20) and
// EGL_EXT_image_dma_buf_import_modifiers (rev. 20) specifications: the target is
// EGL_LINUX_DMA_BUF_EXT with EGL_NO_CONTEXT and a null client buffer; EGL_WIDTH, EGL_HEIGHT,
// EGL_LINUX_DRM_FOURCC_EXT and plane 0's fd, offset and pitch are required; the fd is not
// consumed (the caller keeps owning it and may close it after the call); a modifier is passed
// as two 32-bit halves and only where the modifiers extension exists.
#include "image/gl/dmabuf_import.hpp"

#include <GLES2/gl2ext.h>

#include <algorithm>
#include <climits>

#include "core/strings.hpp"
#include "storage/storage.hpp"

namespace memhal::detail::gl {
namespace {

// From the kernel's drm_fourcc.h: one 8-bit channel, and the linear (untiled) modifier.
constexpr uint32_t kDrmFormatR8 = 'R' | ('8' << 8) | (' ' << 16) | (static_cast<uint32_t>(' ') << 24);
constexpr uint64_t kDrmFormatModLinear = 0;
// A buffer holds at most this many planes; more entries for one buffer are stale geometry.
constexpr std::size_t kEntriesPerBuffer = 4;

}  // namespace

Result<std::unique_ptr<DmaBufImporter>> DmaBufImporter::create(GlContext& context) {
  if (!context.info().dma_buf_import) {
    return fail(ErrorCode::Unavailable, "GL driver ", context.info().renderer,
                " does not advertise EGL_EXT_image_dma_buf_import");
  }
  auto create_image = reinterpret_cast<PFNEGLCREATEIMAGEKHRPROC>(eglGetProcAddress("eglCreateImageKHR"));
  auto destroy_image = reinterpret_cast<PFNEGLDESTROYIMAGEKHRPROC>(eglGetProcAddress("eglDestroyImageKHR"));
  auto target_texture =
      reinterpret_cast<PFNGLEGLIMAGETARGETTEXTURE2DOESPROC>(eglGetProcAddress("glEGLImageTargetTexture2DOES"));
  if (create_image == nullptr || destroy_image == nullptr || target_texture == nullptr) {
    return fail(ErrorCode::Unavailable, "GL driver ", context.info().renderer,
                " lacks eglCreateImageKHR or glEGLImageTargetTexture2DOES (EGL_KHR_image_base, GL_OES_EGL_image)");
  }
  return std::unique_ptr<DmaBufImporter>(new DmaBufImporter(context, context.info().dma_buf_import_modifiers,
                                                            create_image, destroy_image, target_texture));
}

DmaBufImporter::~DmaBufImporter() {
  for (Entry& entry : entries_) release(entry);
}

void DmaBufImporter::release(Entry& entry) {
  if (entry.texture != 0) glDeleteTextures(1, &entry.texture);
  if (entry.image != EGL_NO_IMAGE_KHR) destroy_image_(context_.display(), entry.image);
  entry.texture = 0;
  entry.image = EGL_NO_IMAGE_KHR;
}

void DmaBufImporter::collect() {
  // A freed buffer's fd number (and address) may come back for another buffer: drop the entry
  // before that can alias.
  auto gone = [](const Entry& e) { return e.storage.expired(); };
  for (Entry& entry : entries_) {
    if (gone(entry)) release(entry);
  }
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), gone), entries_.end());
}

Result<GLuint> DmaBufImporter::texture(const DmaBufPlane& plane) {
  collect();
  const int fd = plane.storage->fd();
  if (fd < 0)
    return fail(ErrorCode::InvalidArgument, "DMA-BUF import of a ", to_string(plane.storage->kind()),
                " buffer without an fd");
  if (plane.row_bytes > INT_MAX || plane.rows > INT_MAX || plane.offset > INT_MAX || plane.pitch > INT_MAX ||
      plane.pitch <= 0) {
    return fail(ErrorCode::InvalidArgument, "DMA-BUF plane ", plane.row_bytes, "x", plane.rows, " at offset ",
                plane.offset, " pitch ", plane.pitch, " cannot be described to EGL");
  }
  for (Entry& entry : entries_) {
    if (entry.key != plane.storage.get()) continue;
    if (entry.offset == plane.offset && entry.pitch == plane.pitch && entry.row_bytes == plane.row_bytes &&
        entry.rows == plane.rows) {
      return entry.texture;
    }
  }
  std::vector<EGLint> attribs = {EGL_WIDTH,
                                 static_cast<EGLint>(plane.row_bytes),
                                 EGL_HEIGHT,
                                 static_cast<EGLint>(plane.rows),
                                 EGL_LINUX_DRM_FOURCC_EXT,
                                 static_cast<EGLint>(kDrmFormatR8),
                                 EGL_DMA_BUF_PLANE0_FD_EXT,
                                 fd,
                                 EGL_DMA_BUF_PLANE0_OFFSET_EXT,
                                 static_cast<EGLint>(plane.offset),
                                 EGL_DMA_BUF_PLANE0_PITCH_EXT,
                                 static_cast<EGLint>(plane.pitch)};
  if (modifiers_) {
    // memhal's DMA-BUFs are linear; saying so keeps a driver from guessing a tiling.
    const uint64_t modifier = kDrmFormatModLinear;
    attribs.insert(attribs.end(), {EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, static_cast<EGLint>(modifier & 0xffffffffu),
                                   EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT, static_cast<EGLint>(modifier >> 32)});
  }
  attribs.push_back(EGL_NONE);
  Entry entry;
  entry.image = create_image_(context_.display(), EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, nullptr, attribs.data());
  if (entry.image == EGL_NO_IMAGE_KHR) {
    return fail(ErrorCode::Unavailable, "eglCreateImageKHR(EGL_LINUX_DMA_BUF_EXT, R8 ", plane.row_bytes, "x",
                plane.rows, " pitch ", plane.pitch, " offset ", plane.offset,
                ") failed: ", egl_error_name(eglGetError()));
  }
  glGenTextures(1, &entry.texture);
  glBindTexture(GL_TEXTURE_2D, entry.texture);
  target_texture_(GL_TEXTURE_2D, static_cast<GLeglImageOES>(entry.image));
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glBindTexture(GL_TEXTURE_2D, 0);
  if (const GLenum error = glGetError(); error != GL_NO_ERROR) {
    release(entry);
    return fail(ErrorCode::Unavailable,
                "glEGLImageTargetTexture2DOES of a DMA-BUF plane failed: ", gl_error_name(error));
  }
  // The same plane of the buffer at another geometry: the old import no longer describes it.
  // Beyond one entry per plane, the oldest of this buffer is stale too.
  std::size_t of_buffer = 0;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->key != plane.storage.get()) continue;
    if (it->offset == plane.offset || ++of_buffer >= kEntriesPerBuffer) release(*it);
  }
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.texture == 0; }),
                 entries_.end());
  entry.storage = plane.storage;
  entry.key = plane.storage.get();
  entry.offset = plane.offset;
  entry.pitch = plane.pitch;
  entry.row_bytes = plane.row_bytes;
  entry.rows = plane.rows;
  entries_.push_back(entry);
  ++imports_;
  return entry.texture;
}

}  // namespace memhal::detail::gl
