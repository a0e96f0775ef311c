#include "image/image_ref.hpp"

#include "core/strings.hpp"

namespace memhal::detail {

Result<ImageRef> describe(const Layout& layout, PixelFormat format, const char* role) {
  const auto info = *pixel_format_info(format);
  ImageRef g;
  g.format = format;
  g.dtype = layout.dtype();
  if (layout.is_multi_plane()) {
    if (layout.pixel_format() != format) {
      return fail(ErrorCode::InvalidArgument, role, " is a multi-plane ", to_string(*layout.pixel_format()),
                  " image, not ", to_string(format));
    }
    g.width = layout.shape()[1];
    g.height = layout.shape()[0];
    g.multi_plane = true;
    g.plane_count = info.planes;
    for (std::size_t i = 0; i < info.planes; ++i) {
      const PlaneLayout& p = layout.planes()[i];
      g.planes[i] = {
          .row = p.pitch, .pixel = info.plane_bytes_per_pixel[i], .comp = 1, .buffer = p.buffer, .offset = p.offset};
    }
    return g;
  }
  if (info.yuv && info.planes > 1) {
    return fail(ErrorCode::InvalidArgument, role, " is a plain tensor; ", to_string(format),
                " needs a multi-plane image (Tensor::image or Layout::image_planes)");
  }
  auto shape = layout.shape();
  auto strides = layout.strides();
  if (shape.size() == 4) {
    if (shape[0] != 1) {
      return fail(ErrorCode::InvalidArgument, role, " holds a batch of ", shape[0],
                  " images; convert into one image of it (slice the batch)");
    }
    shape = shape.subspan(1), strides = strides.subspan(1);
  }
  const bool planar = is_planar(format);
  const int64_t channels = planar ? info.planes : info.plane_bytes_per_pixel[0];
  const bool grey_2d = format == PixelFormat::Grey && shape.size() == 2;
  if (!grey_2d && (shape.size() != 3 || (planar ? shape[0] : shape[2]) != channels)) {
    return fail(ErrorCode::InvalidArgument, role, " of rank ", shape.size(), " does not have the shape of a ",
                to_string(format), " image (", planar ? "{c, h, w}" : "{h, w, c}", " with c = ", channels, ")");
  }
  g.height = shape[planar ? 1 : 0];
  g.width = shape[planar ? 2 : 1];
  if (planar) {
    g.plane_count = static_cast<int>(channels);
    for (int64_t c = 0; c < channels; ++c)
      g.planes[c] = {.row = strides[1], .pixel = strides[2], .comp = 0, .offset = layout.offset() + c * strides[0]};
  } else {
    g.plane_count = 1;
    g.planes[0] = {.row = strides[0], .pixel = strides[1], .comp = grey_2d ? 0 : strides[2], .offset = layout.offset()};
  }
  return g;
}

Result<ImageRef> resolve(ImageRef image, const TensorMap& map, const char* role) {
  for (int i = 0; i < image.plane_count; ++i) {
    PlaneRef& p = image.planes[i];
    p.base =
        image.multi_plane ? map.plane(static_cast<std::size_t>(i)) : map.data() + (p.offset - map.layout().offset());
    if (p.base == nullptr) return fail(ErrorCode::Internal, role, " plane ", i, " is unmapped");
  }
  return image;
}

}  // namespace memhal::detail
