// ImageProcessor: validates a conversion completely before touching the destination, maps
// both images, and hands plain plane descriptions to the backend.
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>

#include <cmath>
#include <mutex>

#include "core/strings.hpp"
#include "image/cpu/cpu_converter.hpp"
#include "image/cpu/pixel_io.hpp"
#include "image/image_ref.hpp"

namespace memhal {

struct ImageProcessor::Impl {
  std::mutex mutex;
  std::unique_ptr<detail::CpuConverter> cpu;
};

namespace {

bool is_planar_rgb(PixelFormat f) {
  return f == PixelFormat::PlanarRgb || f == PixelFormat::PlanarRgba;
}

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

// Plane descriptions of a mapped image; `format` is what the bytes are read or written as.
Result<detail::ImageRef> describe(const TensorMap& map, PixelFormat format, const char* role) {
  const Layout& layout = map.layout();
  const auto info = *pixel_format_info(format);
  detail::ImageRef ref;
  ref.format = format;
  ref.dtype = layout.dtype();
  if (layout.is_multi_plane()) {
    if (layout.pixel_format() != format) {
      return detail::fail(ErrorCode::InvalidArgument, role, " is a multi-plane ", to_string(*layout.pixel_format()),
                          " image, not ", to_string(format));
    }
    ref.width = layout.shape()[1];
    ref.height = layout.shape()[0];
    ref.plane_count = info.planes;
    for (std::size_t i = 0; i < info.planes; ++i) {
      ref.planes[i] = {map.plane(i), layout.planes()[i].pitch, info.plane_bytes_per_pixel[i], 1};
      if (ref.planes[i].base == nullptr) return detail::fail(ErrorCode::Internal, role, " plane ", i, " is unmapped");
    }
    return ref;
  }
  if (info.yuv && info.planes > 1) {
    return detail::fail(ErrorCode::InvalidArgument, role, " is a plain tensor; ", to_string(format),
                        " needs a multi-plane image (Tensor::image or Layout::image_planes)");
  }
  auto shape = layout.shape();
  auto strides = layout.strides();
  if (shape.size() == 4) {
    if (shape[0] != 1) {
      return detail::fail(ErrorCode::InvalidArgument, role, " holds a batch of ", shape[0],
                          " images; convert into one image of it (slice the batch)");
    }
    shape = shape.subspan(1), strides = strides.subspan(1);
  }
  const bool planar = is_planar_rgb(format);
  const int64_t channels = planar ? info.planes : info.plane_bytes_per_pixel[0];
  const bool grey_2d = format == PixelFormat::Grey && shape.size() == 2;
  if (!grey_2d && (shape.size() != 3 || (planar ? shape[0] : shape[2]) != channels)) {
    return detail::fail(ErrorCode::InvalidArgument, role, " of rank ", shape.size(), " does not have the shape of a ",
                        to_string(format), " image (", planar ? "{c, h, w}" : "{h, w, c}", " with c = ", channels, ")");
  }
  ref.height = shape[planar ? 1 : 0];
  ref.width = shape[planar ? 2 : 1];
  if (planar) {
    ref.plane_count = static_cast<int>(channels);
    for (int64_t c = 0; c < channels; ++c) ref.planes[c] = {map.data() + c * strides[0], strides[1], strides[2], 0};
  } else {
    ref.plane_count = 1;
    ref.planes[0] = {map.data(), strides[0], strides[1], grey_2d ? 0 : strides[2]};
  }
  return ref;
}

Result<void> check_options(const ConvertOptions& o) {
  auto raw = [](auto e) { return static_cast<uint32_t>(e); };
  if (raw(o.flip) > 3 || raw(o.rotation) > 3 || raw(o.resize) > 1 || raw(o.interpolation) > 2 || raw(o.matrix) > 1 ||
      raw(o.range) > 1) {
    return detail::fail(ErrorCode::InvalidArgument, "ConvertOptions holds an enumerator outside its enum");
  }
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
  auto impl = std::make_unique<Impl>();
  MEMHAL_ASSIGN_OR_RETURN(impl->cpu, detail::CpuConverter::create(options.threads));
  return ImageProcessor(std::move(impl));
}

unsigned ImageProcessor::threads() const noexcept {
  return impl_->cpu->threads();
}

Result<Tensor> ImageProcessor::create_image(int64_t width, int64_t height, PixelFormat format, DType dtype) const {
  return Tensor::image(width, height, format, std::nullopt, dtype);
}

Result<void> ImageProcessor::convert(const Tensor& src, Tensor& dst, const ConvertOptions& options) {
  MEMHAL_TRY(check_options(options));
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
  MEMHAL_ASSIGN_OR_RETURN(TensorMap in, src.map(CpuAccess::Read));
  MEMHAL_ASSIGN_OR_RETURN(const detail::ImageRef src_ref, describe(in, *src_format, "source"));
  MEMHAL_TRY(check_sizes(src_ref, "source"));
  MEMHAL_ASSIGN_OR_RETURN(const Rect crop, check_crop(options, src_ref));
  MEMHAL_ASSIGN_OR_RETURN(TensorMap out, dst.map(CpuAccess::Write));
  MEMHAL_ASSIGN_OR_RETURN(const detail::ImageRef dst_ref, describe(out, dst_format, "destination"));
  MEMHAL_TRY(check_sizes(dst_ref, "destination"));
  std::lock_guard lock(impl_->mutex);
  impl_->cpu->run(src_ref, dst_ref, crop, options);
  return {};
}

}  // namespace memhal
