// ImageProcessor: validates a conversion completely before touching the destination, maps
// both images, and hands plain plane descriptions to the backend.
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>

#include <memhal/memory.hpp>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "core/strings.hpp"
#include "image/cpu/cpu_converter.hpp"
#include "image/cpu/pixel_io.hpp"
#include "image/image_ref.hpp"
#include "tensor/tensor_access.hpp"
#if MEMHAL_WITH_GL
#include "image/gl/dmabuf_import.hpp"
#include "image/gl/gl_backend.hpp"
#include "image/gl/gl_context.hpp"
#endif

namespace memhal {

struct ImageProcessor::Impl {
  mutable std::mutex mutex;
  std::unique_ptr<detail::CpuConverter> cpu;
#if MEMHAL_WITH_GL
  std::unique_ptr<detail::gl::GlBackend> gl;
#else
  std::nullptr_t gl = nullptr;
#endif
  std::string backend_notes;
  std::optional<ImageBackend> last;
  ImageProcessorStats stats;
};

namespace {

// The format a plain destination tensor (no pixel format) is written as.
Result<PixelFormat> infer_format(const Layout& layout, const ConvertOptions& options) {
  if (options.dst_format) return *options.dst_format;
  auto shape = layout.shape();
  if (shape.size() == 4 && shape[0] == 1) shape = shape.subspan(1);
  if (shape.size() == 2) return PixelFormat::Grey;
  if (shape.size() == 3) {
    const int64_t last = shape[2];
    if (last == 1) return PixelFormat::Grey;
    if (last == 3 || last == 4) return last == 3 ? PixelFormat::Rgb : PixelFormat::Rgba;
    if (shape[0] == 3 || shape[0] == 4) return shape[0] == 3 ? PixelFormat::PlanarRgb : PixelFormat::PlanarRgba;
  }
  return detail::fail(ErrorCode::InvalidArgument, "destination '", layout.name(), "' of rank ", layout.rank(),
                      " has no pixel format and its shape is not {h, w, c} or {c, h, w} with c in 1, 3, 4 "
                      "(a batch must be sliced to one image); set ConvertOptions::dst_format");
}

[[maybe_unused]] constexpr const char* kNoGl =
    "memhal was built without the gl image backend (MEMHAL_WITH_GL=OFF; it needs libegl-dev and libgles-dev)";

// InvalidArgument naming `field` when `value` is no enumerator of its vocabulary (a cast integer).
template <Vocabulary E>
Result<void> check_known(E value, const char* field) {
  if (from_code<E>(code(value))) return {};
  return detail::fail(ErrorCode::InvalidArgument, field, " holds code ", code(value), ", which is no ",
                      VocabularyTraits<E>::name);
}

// The backend asked for: the options', else MEMHAL_BACKEND's, else none (auto-selection).
Result<std::optional<ImageBackend>> requested_backend(const ImageProcessorOptions& options) {
  if (options.backend) {
    MEMHAL_TRY(check_known(*options.backend, "ImageProcessorOptions::backend"));
    return options.backend;
  }
  const char* env = std::getenv("MEMHAL_BACKEND");
  if (env == nullptr || *env == '\0') return std::optional<ImageBackend>();
  if (auto backend = from_string<ImageBackend>(env)) return std::optional<ImageBackend>(*backend);
  return detail::fail(ErrorCode::InvalidArgument, "MEMHAL_BACKEND=", env, " names no image backend (",
                      to_string(ImageBackend::Cpu), " or ", to_string(ImageBackend::Gl), ")");
}

#if MEMHAL_WITH_GL
Result<std::unique_ptr<detail::gl::GlBackend>> open_gl() {
  return detail::gl::GlBackend::create();
}
#else
Result<std::nullptr_t> open_gl() {
  return detail::fail(ErrorCode::NotImplemented, kNoGl);
}
#endif

Result<void> check_options(const ConvertOptions& o) {
  MEMHAL_TRY(check_known(o.flip, "ConvertOptions::flip"));
  MEMHAL_TRY(check_known(o.rotation, "ConvertOptions::rotation"));
  MEMHAL_TRY(check_known(o.resize, "ConvertOptions::resize"));
  MEMHAL_TRY(check_known(o.interpolation, "ConvertOptions::interpolation"));
  MEMHAL_TRY(check_known(o.matrix, "ConvertOptions::matrix"));
  MEMHAL_TRY(check_known(o.range, "ConvertOptions::range"));
  for (int c = 0; c < 4; ++c) {
    if (!std::isfinite(o.mean[c]) || !std::isfinite(o.std[c]) || o.std[c] == 0.0f) {
      return detail::fail(ErrorCode::InvalidArgument, "normalisation of channel ", c, ": mean ", o.mean[c], ", std ",
                          o.std[c], " (std must be finite and non-zero)");
    }
  }
  return {};
}

Result<Rect> check_crop(const ConvertOptions& o, const detail::ImageRef& src) {
  const Rect crop = o.crop.value_or(Rect{0, 0, src.width, src.height});
  if (crop.width <= 0 || crop.height <= 0 || crop.x < 0 || crop.y < 0 || crop.x > src.width - crop.width ||
      crop.y > src.height - crop.height) {
    return detail::fail(ErrorCode::InvalidArgument, "crop ", crop.width, "x", crop.height, "+", crop.x, "+", crop.y,
                        " does not lie inside the ", src.width, "x", src.height, " source");
  }
  const auto info = *pixel_format_info(src.format);
  const int64_t ax = int64_t{1} << info.chroma_shift_x;
  const int64_t ay = int64_t{1} << info.chroma_shift_y;
  if (crop.x % ax != 0 || crop.y % ay != 0) {
    return detail::fail(ErrorCode::InvalidArgument, "crop origin ", crop.x, ",", crop.y, " splits a chroma sample of ",
                        to_string(src.format), ": it must be a multiple of ", ax, "x", ay);
  }
  return crop;
}

Result<void> check_sizes(const detail::ImageRef& ref, const char* role) {
  const auto info = *pixel_format_info(ref.format);
  if (ref.width <= 0 || ref.height <= 0) {
    return detail::fail(ErrorCode::InvalidArgument, role, " is empty (", ref.width, "x", ref.height, ")");
  }
  if (ref.width % (1 << info.chroma_shift_x) != 0 || ref.height % (1 << info.chroma_shift_y) != 0) {
    return detail::fail(ErrorCode::InvalidArgument, role, " ", to_string(ref.format), " ", ref.width, "x", ref.height,
                        " has an odd size; its chroma is subsampled ", 1 << info.chroma_shift_x, "x",
                        1 << info.chroma_shift_y);
  }
  return {};
}

}  // namespace

ImageProcessor::ImageProcessor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ImageProcessor::ImageProcessor(ImageProcessor&&) noexcept = default;
ImageProcessor& ImageProcessor::operator=(ImageProcessor&&) noexcept = default;
ImageProcessor::~ImageProcessor() = default;

Result<ImageProcessor> ImageProcessor::create(const ImageProcessorOptions& options) {
  if (options.threads > 256) {
    return detail::fail(ErrorCode::InvalidArgument, "ImageProcessor with ", options.threads,
                        " threads; at most 256 are allowed");
  }
  MEMHAL_ASSIGN_OR_RETURN(const std::optional<ImageBackend> pinned, requested_backend(options));
  auto impl = std::make_unique<Impl>();
  MEMHAL_ASSIGN_OR_RETURN(impl->cpu, detail::CpuConverter::create(options.threads));
  if (pinned != ImageBackend::Cpu) {
    auto gl = open_gl();
    if (!gl) {
      if (pinned == ImageBackend::Gl) {
        return detail::fail(gl.error().code(), "ImageProcessor pinned to the gl backend: ", gl.error().message());
      }
      impl->backend_notes = detail::cat("gl skipped: ", gl.error().message());
    }
#if MEMHAL_WITH_GL
    else if (!pinned && (*gl)->driver().software) {
      impl->backend_notes = detail::cat("gl skipped: renderer ", (*gl)->driver().renderer,
                                        " is a software rasteriser, slower than the CPU backend "
                                        "(MEMHAL_BACKEND=gl or ImageProcessorOptions::backend pins it)");
    } else {
      impl->gl = std::move(*gl);
    }
#endif
  }
  return ImageProcessor(std::move(impl));
}

unsigned ImageProcessor::threads() const noexcept {
  return impl_->cpu->threads();
}

ImageBackend ImageProcessor::backend() const noexcept {
  return impl_->gl ? ImageBackend::Gl : ImageBackend::Cpu;
}

const std::string& ImageProcessor::backend_notes() const noexcept {
  return impl_->backend_notes;
}

std::optional<ImageBackend> ImageProcessor::last_backend() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->last;
}

ImageProcessorStats ImageProcessor::stats() const {
  std::lock_guard lock(impl_->mutex);
  ImageProcessorStats stats = impl_->stats;
#if MEMHAL_WITH_GL
  if (impl_->gl) {
    stats.dma_buf_imports = impl_->gl->dma_buf_imports();
    stats.dma_buf_import_note = impl_->gl->dma_buf_import_note();
    stats.dma_buf_renders = impl_->gl->dma_buf_renders();
    stats.dma_buf_render_note = impl_->gl->dma_buf_render_note();
  }
#endif
  return stats;
}

const GlDriverInfo* ImageProcessor::gl_driver() const noexcept {
#if MEMHAL_WITH_GL
  if (impl_->gl) return &impl_->gl->driver();
#endif
  return nullptr;
}

Result<GlDriverInfo> ImageProcessor::probe_gl() {
#if MEMHAL_WITH_GL
  MEMHAL_ASSIGN_OR_RETURN(auto context, detail::gl::GlContext::create());
  GlDriverInfo info = detail::gl::GlBackend::describe(*context);
  context->run([&] { detail::gl::probe_dma_buf(*context, info); });
  return info;
#else
  return detail::fail(ErrorCode::NotImplemented, kNoGl);
#endif
}

Result<Tensor> ImageProcessor::create_image(int64_t width, int64_t height, PixelFormat format, DType dtype,
                                            std::optional<MemoryKind> memory) const {
  if (memory && *memory != MemoryKind::Pbo) return Tensor::image(width, height, format, memory, dtype);
#if MEMHAL_WITH_GL
  if (impl_->gl) {
    std::string notes;
    if (!memory && force_mem_requested()) {
      // As Tensor::create: MEMHAL_FORCE_MEM sends auto-selection straight to Mem, Pbo included.
      auto image = Tensor::image(width, height, format, std::nullopt, dtype);
      if (image) {
        auto& storage = detail::TensorAccess::buffers(*image)[0];
        storage->set_notes(detail::cat("pbo skipped: MEMHAL_FORCE_MEM is set; ", storage->notes()));
      }
      return image;
    }
    if (!memory) {
      if (impl_->gl->driver().dma_buf_import) {
        auto image = Tensor::image(width, height, format, MemoryKind::DmaBuf, dtype);
        if (image) return image;
        notes = detail::cat("dmabuf skipped: ", image.error().message(), "; ");
      } else {
        notes = "dmabuf skipped: the GL driver cannot import DMA-BUFs (no EGL_EXT_image_dma_buf_import); ";
      }
    }
    // Rows on 64 bytes: GL packs and unpacks them straight, and SIMD loads stay aligned.
    MEMHAL_ASSIGN_OR_RETURN(Layout layout, Layout::image(width, height, format, dtype, 64));
    auto image = impl_->gl->create_image(std::move(layout), notes.empty() ? notes : notes.substr(0, notes.size() - 2));
    if (image || memory) return image;
    auto fallback = Tensor::image(width, height, format, MemoryKind::Mem, dtype);
    if (fallback) {
      // Keep why Pbo was skipped with the tensor, as auto-selection does for every kind.
      detail::TensorAccess::buffers(*fallback)[0]->set_notes(
          detail::cat(notes, "pbo skipped: ", image.error().message()));
    }
    return fallback;
  }
#endif
  if (memory) {
    return detail::fail(ErrorCode::Unavailable, "Pbo image ", width, "x", height,
                        ": Pbo images are made by an ImageProcessor on the gl backend; this one runs on the cpu",
                        impl_->backend_notes.empty() ? "" : " (", impl_->backend_notes,
                        impl_->backend_notes.empty() ? "" : ")");
  }
  return Tensor::image(width, height, format, std::nullopt, dtype);
}

struct ImageProcessor::Checked {
  detail::ImageRef src;
  detail::ImageRef dst;
  Rect crop;
};

Result<ImageProcessor::Checked> ImageProcessor::check(const Tensor& src, const Tensor& dst,
                                                      const ConvertOptions& options) {
  const auto src_format = src.pixel_format();
  if (!src_format) {
    return detail::fail(ErrorCode::InvalidArgument, "source '", src.name(),
                        "' has no pixel format; make it with Tensor::image or Layout::image");
  }
  MEMHAL_ASSIGN_OR_RETURN(const PixelFormat dst_format, dst.pixel_format() ? Result<PixelFormat>(*dst.pixel_format())
                                                                           : infer_format(dst.layout(), options));
  if (src.dtype() != DType::U8 || !detail::writable(dst_format, dst.dtype())) {
    return detail::fail(ErrorCode::NotImplemented, "conversion ", to_string(*src_format), " (", to_string(src.dtype()),
                        ") -> ", to_string(dst_format), " (", to_string(dst.dtype()),
                        ") is not implemented by the CPU image backend");
  }
  if (same_storage(src, dst)) {
    return detail::fail(ErrorCode::InvalidArgument, "convert in place ('", src.name(),
                        "' and its destination share storage) is not supported");
  }
  Checked c;
  MEMHAL_ASSIGN_OR_RETURN(c.src, detail::describe(src.layout(), *src_format, "source"));
  MEMHAL_TRY(check_sizes(c.src, "source"));
  MEMHAL_ASSIGN_OR_RETURN(c.crop, check_crop(options, c.src));
  MEMHAL_ASSIGN_OR_RETURN(c.dst, detail::describe(dst.layout(), dst_format, "destination"));
  MEMHAL_TRY(check_sizes(c.dst, "destination"));
  return c;
}

Result<void> ImageProcessor::convert_checked(const Tensor& src, Tensor& dst, const Checked& c,
                                             const ConvertOptions& options) {
#if MEMHAL_WITH_GL
  if (impl_->gl) {
    MEMHAL_ASSIGN_OR_RETURN(std::optional<std::string> refused,
                            impl_->gl->convert(src, c.src, dst, c.dst, c.crop, options));
    if (!refused) {
      ++impl_->stats.gl_calls;
      impl_->last = ImageBackend::Gl;
      return {};
    }
    ++impl_->stats.fallbacks;
    impl_->stats.last_fallback = detail::cat("gl: ", *refused);
  }
#endif
  MEMHAL_ASSIGN_OR_RETURN(TensorMap in, src.map(CpuAccess::Read));
  MEMHAL_ASSIGN_OR_RETURN(const detail::ImageRef src_ref, detail::resolve(c.src, in, "source"));
  MEMHAL_ASSIGN_OR_RETURN(TensorMap out, dst.map(CpuAccess::Write));
  MEMHAL_ASSIGN_OR_RETURN(const detail::ImageRef dst_ref, detail::resolve(c.dst, out, "destination"));
  impl_->cpu->run(src_ref, dst_ref, c.crop, options);
  ++impl_->stats.cpu_calls;
  impl_->last = ImageBackend::Cpu;
  return {};
}

Result<void> ImageProcessor::convert(const Tensor& src, Tensor& dst, const ConvertOptions& options) {
  MEMHAL_TRY(check_options(options));
  MEMHAL_ASSIGN_OR_RETURN(const Checked checked, check(src, dst, options));
  std::lock_guard lock(impl_->mutex);
  return convert_checked(src, dst, checked, options);
}

Result<void> ImageProcessor::convert_batch(std::span<const Tensor> srcs, Tensor& dst, const ConvertOptions& options) {
  MEMHAL_TRY(check_options(options));
  const auto shape = dst.shape();
  if (dst.pixel_format() || shape.size() != 4 || shape[0] != static_cast<int64_t>(srcs.size()) || srcs.empty()) {
    return detail::fail(ErrorCode::InvalidArgument, "convert_batch of ", srcs.size(), " frames into '", dst.name(),
                        "' of rank ", shape.size(), shape.empty() ? "" : " and batch size ",
                        shape.empty() ? 0 : shape[0],
                        ": the destination must be a plain {N, C, H, W} or {N, H, W, C} tensor with N = the frame "
                        "count (at least 1)");
  }
  // Every frame is checked before any is written: a bad one leaves the whole batch untouched.
  std::vector<Tensor> slices;
  std::vector<Checked> checked;
  slices.reserve(srcs.size());
  checked.reserve(srcs.size());
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    const auto at = static_cast<int64_t>(i);
    MEMHAL_ASSIGN_OR_RETURN(Tensor slice, dst.slice(0, at, at + 1));
    auto one = check(srcs[i], slice, options);
    if (!one) {
      return detail::fail(one.error().code(), "convert_batch, frame ", i, " of ", srcs.size(), ": ",
                          one.error().message());
    }
    slices.push_back(std::move(slice));
    checked.push_back(std::move(*one));
  }
  std::lock_guard lock(impl_->mutex);
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    auto done = convert_checked(srcs[i], slices[i], checked[i], options);
    if (!done) {
      return detail::fail(done.error().code(), "convert_batch, frame ", i, " of ", srcs.size(), ": ",
                          done.error().message());
    }
  }
  return {};
}

}  // namespace memhal
