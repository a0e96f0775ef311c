// DMA-BUF planes sampled by GL in place: EGL_EXT_image_dma_buf_import turns a plane of a
// DMA-BUF into an EGLImage, bound to a texture with glEGLImageTargetTexture2DOES. Each plane is
// imported as DRM_FORMAT_R8 whose width is the plane's row bytes — the "one image per plane"
// way (as GStreamer's glupload does) — so every pixel format becomes bytes the converter
// decodes itself, and no driver support for YUV sampling is needed.
//
// Multi-plane YUV formats are first offered whole, as one EGLImage on GL_TEXTURE_EXTERNAL_OES, which GPU
// drivers prefer (their sampler converts to RGB); a driver that refuses (llvmpipe cannot import
// a plane > 0: EGL_BAD_ALLOC) gets the planes one by one from then on, with a note saying so.
//
// The imported texture is unsigned normalised (a byte b reads as b/255); the converter samples
// it in place with a shader variant that turns it back into b (no copy, no CPU access).
//
// Imports are cached per buffer identity (Storage::id): a camera's or pool's ring of N buffers
// is imported N times, not once a frame. An entry is dropped when its buffer is freed (not when
// a frame of it is returned to its pool), and replaced when the same buffer is seen with
// another plane geometry. A refused import is cached too, so a buffer the driver refuses costs
// one eglCreateImageKHR, not one a frame.
//
// Any fd the driver can map is offered, memfds (Shm tensors) included: Mesa's llvmpipe (24.1
// and later) imports a memfd as it imports a DMA-BUF, by mmap, and sampling it in place beats
// uploading it (bench/gl_bench.cpp); GPU drivers refuse memfds, and a driver that refused one
// is remembered for the process (`refuses_host_fds`), so it costs one try.
//
// Destinations go the other way (`render_target`): a plane imported as DRM_FORMAT_ABGR8888 or
// DRM_FORMAT_R8 and attached to a framebuffer, so the converter writes its bytes in place instead
// of reading them back.
#pragma once

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl32.h>
// gl2ext.h needs the core GL types first.
#include <GLES2/gl2ext.h>

#include <array>
#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/image_processor.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "image/gl/gl_context.hpp"
#include "image/image_ref.hpp"
#include "storage/buffer_cache.hpp"

namespace memhal::detail::gl {

/// One plane to import: bytes `row_bytes` x `rows` at `offset` in `storage`'s fd, `pitch` apart.
struct DmaBufPlane {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;
  int64_t pitch = 0;
  int64_t row_bytes = 0;
  int64_t rows = 0;
};

/// A whole YUV image to import as one EGLImage (`fourcc` with all its planes, which share one
/// buffer), sampled through GL_TEXTURE_EXTERNAL_OES: the driver converts to RGB, as GPU drivers
/// prefer for camera frames. `matrix` and `range` become the EGL colour hints.
struct DmaBufImage {
  uint32_t fourcc = 0;
  int64_t width = 0;
  int64_t height = 0;
  int plane_count = 0;
  std::array<DmaBufPlane, kMaxPlanes> planes{};
  ColorMatrix matrix = ColorMatrix::Bt601;
  ColorRange range = ColorRange::Limited;
};

/// The DRM fourcc of a multi-plane YUV format, whose planes can be one EGLImage; 0 for the
/// others (RGB and packed YUV formats are imported plane by plane, as bytes).
uint32_t whole_image_fourcc(PixelFormat format) noexcept;

/// Whether `context`'s driver imports a DMA-BUF and samples its bytes, and renders into one,
/// tried for real on a small buffer (a DMA-BUF, else a memfd); the reason when not. On the GL
/// thread. Fills the `dma_buf_*_works` / `_why` fields of `info`.
void probe_dma_buf(GlContext& context, GlDriverInfo& info);

class DmaBufImporter {
 public:
  /// An importer for `context`, or the reason there is none ("no EGL_EXT_image_dma_buf_import").
  /// On the GL thread.
  static Result<std::unique_ptr<DmaBufImporter>> create(GlContext& context);
  /// Destroys every cached EGLImage and texture; on the GL thread.
  ~DmaBufImporter();
  DmaBufImporter(const DmaBufImporter&) = delete;
  DmaBufImporter& operator=(const DmaBufImporter&) = delete;

  /// A GL_TEXTURE_2D over the plane's EGLImage (R8 unsigned normalised: texel (x, y) = byte x
  /// of row y, as it is in the buffer when GL reads it), imported on first use, cached. On the
  /// GL thread. `Unavailable` naming the EGL or GL error when the driver refuses the import (a
  /// size, pitch or offset it cannot sample).
  Result<GLuint> texture(const DmaBufPlane& plane);

  /// A GL_TEXTURE_EXTERNAL_OES texture over the whole image (imported on first use, cached
  /// per buffer, geometry and colour hints). On the GL thread. `Unavailable` with the EGL error
  /// when the driver refuses; the refusal is remembered for the driver and fourcc
  /// (`whole_image_refusal`), so the caller imports plane by plane from then on.
  Result<GLuint> external_texture(const DmaBufImage& image);
  /// Why this driver refused `fourcc` as one image in this process; empty if it did not.
  /// Thread-safe.
  std::string whole_image_refusal(uint32_t fourcc) const;

  /// A framebuffer whose colour attachment is `plane`'s own bytes, imported as an EGLImage
  /// (DRM_FORMAT_ABGR8888 of row_bytes / 4 texels a row for `texel_bytes` 4, DRM_FORMAT_R8 of
  /// row_bytes texels for 1) bound to a texture: what GL draws there lands in the buffer.
  /// Imported on first use, cached per buffer and geometry like `texture`. On the GL thread.
  /// `Unavailable` with the EGL error or the framebuffer status when the driver refuses; the
  /// refusal is remembered for the driver, format and memory kind (`render_refusal`), so a
  /// refusing driver costs one try.
  Result<GLuint> render_target(const DmaBufPlane& plane, int texel_bytes);
  /// Why this driver refused rendering into `kind` memory as `texel_bytes` texels in this
  /// process; empty if it did not. Thread-safe.
  std::string render_refusal(MemoryKind kind, int texel_bytes) const;

  /// EGL images created since the importer was made for sampling (a cache hit creates none).
  uint64_t imports() const noexcept { return imports_; }
  /// EGL images created as render targets (a cache hit creates none).
  uint64_t render_imports() const noexcept { return render_imports_; }
  /// This importer's driver refused a writable memfd (in this process): Shm sources are
  /// uploaded rather than offered again. Thread-safe.
  bool refuses_host_fds() const;
  /// Remembers that the driver refused a writable memfd, for every importer on it.
  void refuse_host_fds() const;
  /// Entries cached now.
  std::size_t cached() const noexcept { return cache_.size(); }

 private:
  struct Entry {
    int64_t offset = 0, pitch = 0, row_bytes = 0, rows = 0;
    EGLImageKHR image = EGL_NO_IMAGE_KHR;
    GLuint texture = 0;      // R8 over the EGLImage (a render target's format: `fourcc`)
    GLuint framebuffer = 0;  // render targets: the framebuffer over `texture`
    std::string refused;     // why the driver refused this plane (then no GL objects)
    uint32_t fourcc = 0;     // a whole image on GL_TEXTURE_EXTERNAL_OES (`texture`), else 0
    int64_t width = 0, height = 0;
    ColorMatrix matrix = ColorMatrix::Bt601;
    ColorRange range = ColorRange::Limited;
  };

  DmaBufImporter(GlContext& context, bool modifiers, PFNEGLCREATEIMAGEKHRPROC create_image,
                 PFNEGLDESTROYIMAGEKHRPROC destroy_image, PFNGLEGLIMAGETARGETTEXTURE2DOESPROC target_texture)
      : context_(context),
        modifiers_(modifiers),
        create_image_(create_image),
        destroy_image_(destroy_image),
        target_texture_(target_texture) {}
  void release(Entry& entry);
  /// `plane` as one EGLImage of `drm_format` (`width` texels a row) on a GL_TEXTURE_2D.
  Result<Entry> import(const DmaBufPlane& plane, uint32_t drm_format, int64_t width);
  /// `entry.image` on a new texture of `target` (one level, nearest filtering: what texelFetch
  /// and external sampling read); the GL error, GL_NO_ERROR when it worked.
  GLenum bind_image(GLenum target, Entry& entry);
  /// Drops the released entries of the import cache, keeps `entry` for `storage` and counts
  /// the import; its texture.
  GLuint keep_import(const Storage& storage, Entry entry);

  GlContext& context_;
  bool modifiers_;
  PFNEGLCREATEIMAGEKHRPROC create_image_;
  PFNEGLDESTROYIMAGEKHRPROC destroy_image_;
  PFNGLEGLIMAGETARGETTEXTURE2DOESPROC target_texture_;
  BufferCache<Entry> cache_;
  BufferCache<Entry> targets_;  // render targets
  uint64_t imports_ = 0;
  uint64_t render_imports_ = 0;
};

}  // namespace memhal::detail::gl
