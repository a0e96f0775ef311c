// The GL backend of ImageProcessor: owns the context and the converter, makes Pbo images, and
// runs a conversion on GL when it can (Pbo operands in place, host memory uploaded and read
// back), saying why when it cannot so the processor runs it on the CPU instead.
#pragma once

#include <memhal/image_processor.hpp>
#include <memhal/layout.hpp>
#include <memory>
#include <optional>
#include <string>

#include "image/image_ref.hpp"

namespace memhal::detail::gl {

class GlContext;
class GlConverter;
class DmaBufImporter;

class GlBackend {
 public:
  /// Opens the context and compiles the converter. `Unavailable` with the reason when there is
  /// no usable GL driver.
  static Result<std::unique_ptr<GlBackend>> create();
  ~GlBackend();
  GlBackend(const GlBackend&) = delete;
  GlBackend& operator=(const GlBackend&) = delete;

  const GlDriverInfo& driver() const noexcept { return driver_; }
  /// The driver as `memhal info` shows it.
  static GlDriverInfo describe(const GlContext& context);

  /// A zeroed Pbo tensor of `layout` (dense from offset 0, one buffer) in this context.
  Result<Tensor> create_image(Layout layout, std::string notes) const;

  /// DMA-BUF planes imported into GL so far (a cached buffer is imported once). GL thread hop.
  uint64_t dma_buf_imports() const;
  /// Why DmaBuf sources are uploaded rather than imported ("... does not advertise
  /// EGL_EXT_image_dma_buf_import", or the EGL error of the latest refused import); empty if not.
  const std::string& dma_buf_import_note() const noexcept { return import_note_; }

  /// Conversions whose output GL rendered straight into a DmaBuf (or memfd-backed Shm)
  /// destination, imported as a render target, instead of reading it back.
  uint64_t dma_buf_renders() const noexcept { return renders_; }
  /// Why a DmaBuf or Shm destination was read back rather than rendered into (no import
  /// extension, the driver's refusal, a plane layout no DRM format describes); empty if not.
  const std::string& dma_buf_render_note() const noexcept { return render_note_; }

  /// Converts `src` into `dst` on GL. The empty optional means done; a string is why GL cannot
  /// do this one (the caller converts on the CPU); an error means GL failed. Not reentrant.
  Result<std::optional<std::string>> convert(const Tensor& src, const ImageRef& src_geometry, Tensor& dst,
                                             const ImageRef& dst_geometry, const Rect& crop,
                                             const ConvertOptions& options);

 private:
  GlBackend(std::shared_ptr<GlContext> context, std::unique_ptr<GlConverter> converter);
  /// Imports `dst`'s planes (DmaBuf, or Shm on a driver that takes memfds) as render targets
  /// into `target`'s gl_framebuffer fields; false, with the reason in render_note_, when the
  /// output is to be read back instead.
  bool render_targets(const Tensor& dst, ImageRef& target, const ConvertOptions& options);

  std::shared_ptr<GlContext> context_;
  std::unique_ptr<GlConverter> converter_;
  std::unique_ptr<DmaBufImporter> importer_;
  GlDriverInfo driver_;
  std::string import_note_;
  uint64_t renders_ = 0;
  std::string render_note_;
};

}  // namespace memhal::detail::gl
