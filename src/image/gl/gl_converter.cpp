#include "image/gl/gl_converter.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <GLES2/gl2ext.h>

#include "core/strings.hpp"
#include "image/gl/gl_shaders.hpp"
#include "image/image_ref.hpp"

namespace memhal::detail::gl {
namespace {

constexpr int kWrap = 4096;  // tap tables hold entry i at (i % kWrap, i / kWrap); see gl_shaders.hpp

// One unit per sampler: samplers of different types must not share a unit.
constexpr int kUnitPlane0 = 0;
constexpr int kUnitTaps = 4;  // first_h, first_v, taps_h, taps_v
constexpr int kUnitContent = 8;
constexpr int kUnitExternal = 10;  // a whole imported image (samplerExternalOES)

bool packed_422(PixelFormat format) {
  return format == PixelFormat::Yuyv || format == PixelFormat::Uyvy || format == PixelFormat::Vyuy;
}

Result<void> gl_check(const char* call) {
  const GLenum error = glGetError();
  if (error == GL_NO_ERROR) return {};
  // Several flags may be set; clear them so that the next call starts clean.
  for (int i = 0; i < 8 && glGetError() != GL_NO_ERROR; ++i) {
  }
  return fail(ErrorCode::Unavailable, "GL converter: ", call, " failed: ", gl_error_name(error));
}

GLint at(GLuint program, const char* name) {
  return glGetUniformLocation(program, name);
}

int to_int(int64_t v) {
  return static_cast<int>(v);
}

// What a source plane spans: its pixel grid and the bytes a row of it covers.
struct Extent {
  int64_t width = 0;
  int64_t height = 0;
  int shift_x = 0;
  int shift_y = 0;
};

Extent source_extent(const ImageRef& src, int plane) {
  const auto info = *pixel_format_info(src.format);
  Extent e;
  if (info.yuv && plane > 0) e.shift_x = info.chroma_shift_x, e.shift_y = info.chroma_shift_y;
  e.width = src.width >> e.shift_x;
  e.height = src.height >> e.shift_y;
  return e;
}

// One past the last byte the shader reads in a row of `plane` up to its pixel `x`.
int64_t row_end(const ImageRef& src, int plane, int64_t x) {
  const PlaneRef& p = src.planes[plane];
  const int64_t components = pixel_format_info(src.format)->plane_bytes_per_pixel[plane];
  int64_t end = x * p.pixel + (components - 1) * p.comp + 1;
  if (packed_422(src.format)) end = std::max(end, (x & ~int64_t{1}) * p.pixel + 3 * p.comp + 1);
  return end;
}

// Tap tables of one axis in the general form: first[o] .. first[o + 1] index (source, weight)
// pairs; two-tap outputs with weight 0 get a single tap, as the CPU backend reads them.
void tap_tables(const AxisTaps& axis, std::vector<int32_t>& first, std::vector<float>& entries) {
  first.clear();
  entries.clear();
  if (axis.two_tap) {
    for (std::size_t o = 0; o < axis.index.size(); ++o) {
      first.push_back(static_cast<int32_t>(entries.size() / 2));
      const float w = axis.weight[o];
      entries.push_back(static_cast<float>(axis.index[o]));
      entries.push_back(1.0f - w);
      if (w != 0.0f) {
        entries.push_back(static_cast<float>(axis.index[o] + 1));
        entries.push_back(w);
      }
    }
    first.push_back(static_cast<int32_t>(entries.size() / 2));
    return;
  }
  first.assign(axis.first.begin(), axis.first.end());
  for (std::size_t t = 0; t < axis.index.size(); ++t) {
    entries.push_back(static_cast<float>(axis.index[t]));
    entries.push_back(axis.weight[t]);
  }
}

// Whether the axis reads one source pixel per output at base + step * o (copies, mirrors,
// integer-ratio nearest and bilinear): the shader then computes positions instead of reading
// tap tables.
bool affine(const AxisTaps& axis, int32_t* base, int32_t* step) {
  if (!axis.two_tap || !axis.single_tap || axis.index.empty()) return false;
  *base = axis.index[0];
  *step = axis.index.size() > 1 ? axis.index[1] - axis.index[0] : 0;
  for (std::size_t o = 0; o < axis.index.size(); ++o) {
    if (axis.index[o] != *base + *step * static_cast<int32_t>(o)) return false;
  }
  return true;
}

// Copies rows of dense bytes (`stride` apart) into a plane's elements.
void scatter(const std::byte* from, int64_t stride, std::byte* to, const PlaneRef& plane, int64_t width, int channels,
             int64_t esize, int64_t rows) {
  const bool dense = plane.pixel == channels * esize && (channels == 1 || plane.comp == esize);
  for (int64_t y = 0; y < rows; ++y) {
    const std::byte* in = from + y * stride;
    std::byte* out = to + y * plane.row;
    if (dense) {
      std::memcpy(out, in, static_cast<std::size_t>(width * channels * esize));
      continue;
    }
    for (int64_t x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        std::memcpy(out + x * plane.pixel + c * plane.comp, in + (x * channels + c) * esize,
                    static_cast<std::size_t>(esize));
      }
    }
  }
}

}  // namespace

bool GlConverter::Key::operator==(const Key& o) const {
  return crop.x == o.crop.x && crop.y == o.crop.y && crop.width == o.crop.width && crop.height == o.crop.height &&
         flip == o.flip && rotation == o.rotation && resize == o.resize && interpolation == o.interpolation &&
         dst_w == o.dst_w && dst_h == o.dst_h;
}

GlConverter::GlConverter(GlContext& context, GLuint vao) : context_(&context), vao_(vao) {}

Result<std::unique_ptr<GlConverter>> GlConverter::create(GlContext& context) {
  GLuint vao = 0;
  glGenVertexArrays(1, &vao);
  std::unique_ptr<GlConverter> converter(new GlConverter(context, vao));
  converter->max_size_ = context.info().max_texture_size;
  if (converter->max_size_ <= 0) glGetIntegerv(GL_MAX_TEXTURE_SIZE, &converter->max_size_);
  // The other variants compile on first use; these two show now that the driver takes them.
  MEMHAL_TRY(converter->sample_program(3, false, false, false, false));
  MEMHAL_TRY(converter->pack_program(0, 3, 1, 16));
  glUseProgram(0);
  MEMHAL_TRY(gl_check("setting up the converter's programs"));
  return converter;
}

Result<GLuint> GlConverter::sample_program(int kind, bool alpha, bool affine_h, bool affine_v, bool unorm) {
  const int index =
      (((kind * 2 + (alpha ? 1 : 0)) * 2 + (affine_h ? 1 : 0)) * 2 + (affine_v ? 1 : 0)) * 2 + (unorm ? 1 : 0);
  GLuint& program = sample_programs_[static_cast<std::size_t>(index)];
  if (program != 0) return program;
  char defines[192];
  std::snprintf(defines, sizeof defines,
                "%s#define KIND %d\n#define ALPHA %s\n#define AFFINE_H %d\n#define AFFINE_V %d\n#define UNORM %d\n",
                kind == 5 ? "#extension GL_OES_EGL_image_external_essl3 : require\n" : "", kind,
                alpha ? "true" : "false", affine_h ? 1 : 0, affine_v ? 1 : 0, unorm ? 1 : 0);
  MEMHAL_ASSIGN_OR_RETURN(program, build_program(shaders::kVertex, defines, shaders::kSample, "sample"));
  ++objects_made_;
  glUseProgram(program);
  const char* planes[] = {"u_plane0", "u_plane1", "u_plane2", "u_plane3"};
  for (int i = 0; i < 4; ++i) glUniform1i(at(program, planes[i]), kUnitPlane0 + i);
  const char* taps[] = {"u_first_h", "u_first_v", "u_taps_h", "u_taps_v"};
  for (int i = 0; i < 4; ++i) glUniform1i(at(program, taps[i]), kUnitTaps + i);
  if (kind == 5) glUniform1i(at(program, "u_external"), kUnitExternal);
  return program;
}

Result<GLuint> GlConverter::pack_program(int mode, int dtype, int channels, int texel) {
  const int texel_index = texel == 16 ? 0 : texel == 4 ? 1 : 2;
  GLuint& program = pack_programs_[static_cast<std::size_t>(((mode * 4 + dtype) * 4 + channels - 1) * 3 + texel_index)];
  if (program != 0) return program;
  char defines[96];
  std::snprintf(defines, sizeof defines, "#define MODE %d\n#define DTYPE %d\n#define CHANNELS %d\n#define TEXEL %d\n",
                mode, dtype, channels, texel);
  MEMHAL_ASSIGN_OR_RETURN(program, build_program(shaders::kVertex, defines, shaders::kPack, "pack"));
  ++objects_made_;
  glUseProgram(program);
  glUniform1i(at(program, "u_image"), kUnitContent);
  return program;
}

GlConverter::~GlConverter() {
  for (Texture* t :
       {&content_.texture, &outputs_[0].texture, &outputs_[1].texture, &outputs_[2].texture, &outputs_[3].texture}) {
    if (t->id != 0) glDeleteTextures(1, &t->id);
  }
  for (Texture& t : source_) {
    if (t.id != 0) glDeleteTextures(1, &t.id);
  }
  for (Texture& t : taps_) {
    if (t.id != 0) glDeleteTextures(1, &t.id);
  }
  for (Target* t : {&content_, &outputs_[0], &outputs_[1], &outputs_[2], &outputs_[3]}) {
    if (t->framebuffer != 0) glDeleteFramebuffers(1, &t->framebuffer);
  }
  if (staging_buffer_ != 0) glDeleteBuffers(1, &staging_buffer_);
  glDeleteVertexArrays(1, &vao_);
  for (GLuint program : sample_programs_) glDeleteProgram(program);
  for (GLuint program : pack_programs_) glDeleteProgram(program);
}

bool GlConverter::ensure_texture(Texture& texture, GLenum format, int width, int height) {
  if (texture.id != 0 && texture.format == format && texture.width == width && texture.height == height) {
    glBindTexture(GL_TEXTURE_2D, texture.id);
    return false;
  }
  // Storage is immutable: a new size is a new texture.
  if (texture.id != 0) glDeleteTextures(1, &texture.id);
  glGenTextures(1, &texture.id);
  ++objects_made_;
  glBindTexture(GL_TEXTURE_2D, texture.id);
  glTexStorage2D(GL_TEXTURE_2D, 1, format, width, height);
  // Integer and 32-bit float textures are complete only with nearest filtering.
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  texture = {texture.id, format, width, height};
  return true;
}

Result<void> GlConverter::ensure_target(Target& target, int width, int height) {
  glActiveTexture(GL_TEXTURE0 + kUnitContent + 1);  // a unit no program samples
  const bool fresh = ensure_texture(target.texture, GL_RGBA32UI, width, height);
  if (target.framebuffer == 0) {
    glGenFramebuffers(1, &target.framebuffer);
    ++objects_made_;
  }
  glBindFramebuffer(GL_FRAMEBUFFER, target.framebuffer);
  if (!fresh) return {};
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, target.texture.id, 0);
  const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE) {
    MEMHAL_TRY(gl_check("glFramebufferTexture2D"));
    return fail(ErrorCode::Unavailable, "GL converter: a ", width, "x", height,
                " RGBA32UI framebuffer is incomplete (status 0x", std::hex, status, ")");
  }
  return gl_check("glTexStorage2D (render target)");
}

Result<void> GlConverter::prepare_taps(const ImageRef& dst, const Rect& crop, const ConvertOptions& options) {
  const Key key{crop, options.flip, options.rotation, options.resize, options.interpolation, dst.width, dst.height};
  if (has_key_ && key == key_) return {};
  has_key_ = false;
  geometry_.build(crop, dst.width, dst.height, options);
  const AxisTaps* axes[2] = {&geometry_.horizontal, &geometry_.vertical};
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  for (int a = 0; a < 2; ++a) {
    tap_tables(*axes[a], first_, entries_);
    for (int table = 0; table < 2; ++table) {
      const std::size_t n = table == 0 ? first_.size() : entries_.size() / 2;
      const int width = static_cast<int>(std::min<std::size_t>(n, kWrap));
      const int height = static_cast<int>((n + kWrap - 1) / kWrap);
      const std::size_t cells = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
      glActiveTexture(GL_TEXTURE0 + kUnitTaps + 2 * table + a);
      if (table == 0) {
        first_.resize(cells, 0);
        ensure_texture(taps_[a], GL_R32I, width, height);
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RED_INTEGER, GL_INT, first_.data());
      } else {
        entries_.resize(2 * cells, 0.0f);
        ensure_texture(taps_[2 + a], GL_RG32F, width, height);
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RG, GL_FLOAT, entries_.data());
      }
    }
  }
  MEMHAL_TRY(gl_check("glTexSubImage2D (tap tables)"));
  affine_[0] = affine(geometry_.horizontal, &affine_at_[0], &affine_at_[1]);
  affine_[1] = affine(geometry_.vertical, &affine_at_[2], &affine_at_[3]);
  key_ = key;
  has_key_ = true;
  return {};
}

Result<void> GlConverter::upload_source(const ImageRef& src, const Rect& crop) {
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  if (src.gl_external != 0) {
    glActiveTexture(GL_TEXTURE0 + kUnitExternal);
    glBindTexture(GL_TEXTURE_EXTERNAL_OES, src.gl_external);
    return gl_check("glBindTexture (GL_TEXTURE_EXTERNAL_OES source)");
  }
  for (int i = 0; i < src.plane_count; ++i) {
    const PlaneRef& p = src.planes[i];
    if (p.gl_texture != 0) {
      glActiveTexture(GL_TEXTURE0 + kUnitPlane0 + i);
      glBindTexture(GL_TEXTURE_2D, p.gl_texture);
      continue;
    }
    const Extent e = source_extent(src, i);
    // Only the crop's window of the plane travels: its rows, from its first to its last byte.
    const int64_t x0 = crop.x >> e.shift_x;
    const int64_t x1 = (crop.x + crop.width - 1) >> e.shift_x;
    const int64_t y0 = crop.y >> e.shift_y;
    const int64_t y1 = (crop.y + crop.height - 1) >> e.shift_y;
    const int64_t b0 = x0 * p.pixel;
    const int64_t b1 = row_end(src, i, x1);
    glActiveTexture(GL_TEXTURE0 + kUnitPlane0 + i);
    ensure_texture(source_[i], GL_R8UI, to_int(row_end(src, i, e.width - 1)), to_int(e.height));
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, p.gl_buffer);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, y1 > y0 ? to_int(p.row) : 0);
    const int64_t start = y0 * p.row + b0;
    const void* data = p.gl_buffer != 0 ? reinterpret_cast<const void*>(static_cast<uintptr_t>(p.offset + start))
                                        : static_cast<const void*>(p.base + start);
    glTexSubImage2D(GL_TEXTURE_2D, 0, to_int(b0), to_int(y0), to_int(b1 - b0), to_int(y1 - y0 + 1), GL_RED_INTEGER,
                    GL_UNSIGNED_BYTE, data);
  }
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  return gl_check("glTexSubImage2D (source planes)");
}

Result<void> GlConverter::sample(const ImageRef& src, const ConvertOptions& options) {
  const Rect& box = geometry_.content;
  MEMHAL_TRY(ensure_target(content_, to_int(box.width), to_int(box.height)));
  glViewport(0, 0, to_int(box.width), to_int(box.height));
  const auto info = *pixel_format_info(src.format);
  const int kind = src.gl_external != 0              ? 5
                   : info.planar                     ? 1
                   : packed_422(src.format)          ? 2
                   : info.yuv && info.planes == 2    ? 3
                   : src.format == PixelFormat::I420 ? 4
                                                     : 0;
  const auto& offsets = info.order;
  // Imported planes are R8 textures over the DMA-BUF (all or none of a source's planes).
  const bool unorm = src.gl_external == 0 && src.planes[0].gl_texture != 0;
  MEMHAL_ASSIGN_OR_RETURN(const GLuint p, sample_program(kind, info.alpha, affine_[0], affine_[1], unorm));
  glUseProgram(p);
  const auto& pl = src.planes;
  glUniform4i(at(p, "u_pixel"), to_int(pl[0].pixel), to_int(pl[1].pixel), to_int(pl[2].pixel), to_int(pl[3].pixel));
  glUniform4i(at(p, "u_comp"), to_int(pl[0].comp), to_int(pl[1].comp), to_int(pl[2].comp), to_int(pl[3].comp));
  glUniform4i(at(p, "u_offsets"), offsets[0], offsets[1], offsets[2], offsets[3]);
  glUniform2i(at(p, "u_shift"), info.chroma_shift_x, info.chroma_shift_y);
  glUniform2i(at(p, "u_origin"), to_int(geometry_.crop.x), to_int(geometry_.crop.y));
  glUniform1i(at(p, "u_columns"), geometry_.column_lines ? 1 : 0);
  glUniform4i(at(p, "u_affine"), affine_at_[0], affine_at_[1], affine_at_[2], affine_at_[3]);
  const ColorCoeffs c = color_coeffs(options.matrix, options.range);
  glUniform2f(at(p, "u_luma"), c.y_offset, c.y_scale);
  glUniform4f(at(p, "u_chroma"), c.rv, c.gu, c.gv, c.bu);
  for (int i = 0; i < 4; ++i) {
    glActiveTexture(GL_TEXTURE0 + kUnitTaps + i);
    glBindTexture(GL_TEXTURE_2D, taps_[i].id);
  }
  glBindVertexArray(vao_);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  return gl_check("glDrawArrays (decode and resample)");
}

int GlConverter::out_planes(const ImageRef& dst, const ConvertOptions& options, std::array<OutPlane, kMaxPlanes>& out) {
  const auto info = *pixel_format_info(dst.format);
  std::array<int, 4> order{0, 1, 2, 3};
  if (!info.yuv) std::copy(info.order.begin(), info.order.end(), order.begin());
  if (options.swap_rb) {
    for (int& c : order) c = c == 0 ? 2 : c == 2 ? 0 : c;
  }
  OutPlane base;
  base.select = order;
  for (int j = 0; j < 4; ++j) {
    base.scale[j] = 1.0f / (255.0f * options.std[j]);
    base.bias[j] = -options.mean[j] / options.std[j];
  }
  base.width = dst.width;
  base.rows = dst.height;
  OutPlane chroma = base;
  chroma.mode = 3;
  chroma.width = dst.width / 2;
  chroma.rows = dst.height / 2;
  chroma.select = {0, 1, 0, 0};
  switch (dst.format) {
    case PixelFormat::Rgb:
    case PixelFormat::Bgr:
    case PixelFormat::Rgba:
    case PixelFormat::Bgra:
      out[0] = base;
      out[0].channels = info.channels;
      return 1;
    case PixelFormat::Grey: out[0] = base, out[0].mode = 1; return 1;
    case PixelFormat::PlanarRgb:
    case PixelFormat::PlanarRgba: {
      const int planes = info.planes;
      for (int j = 0; j < planes; ++j) {
        out[j] = base;
        out[j].select = {order[j], 0, 0, 0};
        out[j].scale = {base.scale[j], 0, 0, 0};
        out[j].bias = {base.bias[j], 0, 0, 0};
      }
      return planes;
    }
    case PixelFormat::Nv12:
      out[0] = base, out[0].mode = 2;
      out[1] = chroma, out[1].channels = 2;
      return 2;
    case PixelFormat::I420:
      out[0] = base, out[0].mode = 2;
      out[1] = chroma, out[1].select = {0, 0, 0, 0};
      out[2] = chroma, out[2].select = {1, 0, 0, 0};
      return 3;
    case PixelFormat::Yuyv: out[0] = base, out[0].mode = 4, out[0].channels = 2; return 1;
    default: return 0;
  }
}

int GlConverter::direct_planes(const ImageRef& dst, const ConvertOptions& options,
                               std::array<DirectPlane, kMaxPlanes>& out) const {
  std::array<OutPlane, kMaxPlanes> planes{};
  const int count = out_planes(dst, options, planes);
  const auto esize = static_cast<int64_t>(size_of(dst.dtype));
  for (int i = 0; i < count; ++i) {
    out[i] = {planes[i].width * planes[i].channels * esize, planes[i].rows,
              direct_texel(planes[i], dst.planes[i], esize)};
    if (out[i].texel != 0 && out[i].row_bytes / out[i].texel > max_size_) out[i].texel = 0;
  }
  return count;
}

int GlConverter::direct_texel(const OutPlane& out, const PlaneRef& plane, int64_t esize) {
  const int64_t row_bytes = out.width * out.channels * esize;
  const bool dense = plane.pixel == out.channels * esize && (out.channels == 1 || plane.comp == esize);
  if (!dense || plane.row < row_bytes) return 0;
  if (row_bytes % 4 == 0 && plane.row % 4 == 0 && plane.offset % 4 == 0) return 4;
  return esize == 1 ? 1 : 0;
}

Result<void> GlConverter::pack_plane(const OutPlane& out, const ImageRef& dst, int index,
                                     const ConvertOptions& options) {
  const auto esize = static_cast<int64_t>(size_of(dst.dtype));
  const PlaneRef& plane = dst.planes[index];
  // Rendered straight into the destination's bytes (imported), or into a target read back.
  const int texel = plane.gl_framebuffer != 0 ? direct_texel(out, plane, esize) : 16;
  if (texel == 0)
    return fail(ErrorCode::Internal, "GL converter: destination plane ", index, " cannot be rendered into");
  const int words = to_int((out.width * out.channels * esize + texel - 1) / texel);
  if (texel == 16) {
    MEMHAL_TRY(ensure_target(outputs_[index], words, to_int(out.rows)));
  } else {
    glBindFramebuffer(GL_FRAMEBUFFER, plane.gl_framebuffer);
  }
  glViewport(0, 0, words, to_int(out.rows));
  const int dtype = dst.dtype == DType::I8 ? 1 : dst.dtype == DType::F16 ? 2 : dst.dtype == DType::F32 ? 3 : 0;
  MEMHAL_ASSIGN_OR_RETURN(const GLuint p, pack_program(out.mode, dtype, out.channels, texel));
  glUseProgram(p);
  const Rect& box = geometry_.content;
  glUniform4i(at(p, "u_content"), to_int(box.x), to_int(box.y), to_int(box.width), to_int(box.height));
  const auto& pad = options.pad;
  glUniform4f(at(p, "u_pad"), pad[0], pad[1], pad[2], pad[3]);
  glUniform4i(at(p, "u_select"), out.select[0], out.select[1], out.select[2], out.select[3]);
  glUniform1i(at(p, "u_width"), to_int(out.width));
  glUniform4fv(at(p, "u_scale"), 1, out.scale.data());
  glUniform4fv(at(p, "u_bias"), 1, out.bias.data());
  const ColorCoeffs c = color_coeffs(options.matrix, options.range);
  glUniform3f(at(p, "u_weights"), c.kr, c.kg, c.kb);
  glUniform4f(at(p, "u_encode"), c.y_offset, 1.0f / c.y_scale, 1.0f / (2.0f * (1.0f - c.kb) * c.c_scale),
              1.0f / (2.0f * (1.0f - c.kr) * c.c_scale));
  glActiveTexture(GL_TEXTURE0 + kUnitContent);
  glBindTexture(GL_TEXTURE_2D, content_.texture.id);
  glBindVertexArray(vao_);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  MEMHAL_TRY(gl_check("glDrawArrays (pack)"));
  if (texel != 16) return {};
  return read_back(out, plane, esize, words);
}

Result<void> GlConverter::read_back(const OutPlane& out, const PlaneRef& plane, int64_t esize, int words) {
  const int64_t row_bytes = out.width * out.channels * esize;
  const int rows = to_int(out.rows);
  const bool dense = plane.pixel == out.channels * esize && (out.channels == 1 || plane.comp == esize);
  const auto address =
      plane.gl_buffer != 0 ? static_cast<uintptr_t>(plane.offset) : reinterpret_cast<uintptr_t>(plane.base);
  // Whole 16-byte texels land in the destination's own rows: no staging, no CPU copy.
  if (dense && row_bytes % 16 == 0 && address % 4 == 0 &&
      (rows == 1 || (plane.row % 16 == 0 && plane.row >= row_bytes))) {
    glBindBuffer(GL_PIXEL_PACK_BUFFER, plane.gl_buffer);
    glPixelStorei(GL_PACK_ROW_LENGTH, rows == 1 ? 0 : to_int(plane.row / 16));
    glReadPixels(0, 0, words, rows, GL_RGBA_INTEGER, GL_UNSIGNED_INT, reinterpret_cast<void*>(address));
    glPixelStorei(GL_PACK_ROW_LENGTH, 0);
    glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
    return gl_check("glReadPixels (into the destination)");
  }
  if (plane.gl_buffer != 0 && dense) return copy_rows_on_gl(plane, row_bytes, words, rows);
  const std::size_t need = static_cast<std::size_t>(words) * 4 * static_cast<std::size_t>(rows);
  if (staging_.size() < need) staging_.resize(need);
  glPixelStorei(GL_PACK_ROW_LENGTH, 0);
  glReadPixels(0, 0, words, rows, GL_RGBA_INTEGER, GL_UNSIGNED_INT, staging_.data());
  MEMHAL_TRY(gl_check("glReadPixels (staging)"));
  const auto* from = reinterpret_cast<const std::byte*>(staging_.data());
  const int64_t stride = int64_t{words} * 16;
  if (plane.gl_buffer == 0) {
    scatter(from, stride, plane.base, plane, out.width, out.channels, esize, rows);
    return {};
  }
  // Elements scattered in a GL buffer: the CPU places them through a mapping.
  const int64_t extent =
      (rows - 1) * plane.row + (out.width - 1) * plane.pixel + (out.channels - 1) * plane.comp + esize;
  glBindBuffer(GL_COPY_WRITE_BUFFER, plane.gl_buffer);
  void* mapped = glMapBufferRange(GL_COPY_WRITE_BUFFER, plane.offset, extent, GL_MAP_WRITE_BIT);
  if (mapped == nullptr) {
    glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
    MEMHAL_TRY(gl_check("glMapBufferRange (destination)"));
    return fail(ErrorCode::Unavailable, "GL converter: glMapBufferRange of ", extent, " destination bytes failed");
  }
  scatter(from, stride, static_cast<std::byte*>(mapped), plane, out.width, out.channels, esize, rows);
  const GLboolean intact = glUnmapBuffer(GL_COPY_WRITE_BUFFER);
  glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
  if (intact != GL_TRUE) return fail(ErrorCode::Unavailable, "GL converter: glUnmapBuffer: the destination was lost");
  return gl_check("glUnmapBuffer (destination)");
}

Result<void> GlConverter::copy_rows_on_gl(const PlaneRef& plane, int64_t row_bytes, int words, int rows) {
  // Rows that are not whole texels go through a staging buffer and are copied row by row on
  // the GL side, so that a Pbo destination is never mapped (no stall, no CPU copy).
  const int64_t stride = int64_t{words} * 16;
  if (staging_buffer_ == 0) {
    glGenBuffers(1, &staging_buffer_);
    ++objects_made_;
  }
  glBindBuffer(GL_PIXEL_PACK_BUFFER, staging_buffer_);
  if (staging_buffer_size_ < stride * rows) {
    staging_buffer_size_ = stride * rows;
    glBufferData(GL_PIXEL_PACK_BUFFER, staging_buffer_size_, nullptr, GL_STREAM_COPY);
    ++objects_made_;
  }
  glPixelStorei(GL_PACK_ROW_LENGTH, 0);
  glReadPixels(0, 0, words, rows, GL_RGBA_INTEGER, GL_UNSIGNED_INT, nullptr);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  MEMHAL_TRY(gl_check("glReadPixels (staging buffer)"));
  glBindBuffer(GL_COPY_READ_BUFFER, staging_buffer_);
  glBindBuffer(GL_COPY_WRITE_BUFFER, plane.gl_buffer);
  for (int64_t y = 0; y < rows; ++y) {
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, y * stride, plane.offset + y * plane.row, row_bytes);
  }
  glBindBuffer(GL_COPY_READ_BUFFER, 0);
  glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
  return gl_check("glCopyBufferSubData (into the destination)");
}

Result<void> GlConverter::run(const ImageRef& src, const ImageRef& dst, const Rect& crop,
                              const ConvertOptions& options) {
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  // The context is shared with other GL work of the backend (DMA-BUF import draws): set every
  // state a pass depends on.
  for (GLenum cap : {GL_BLEND, GL_SCISSOR_TEST, GL_DEPTH_TEST, GL_STENCIL_TEST, GL_CULL_FACE, GL_RASTERIZER_DISCARD}) {
    glDisable(cap);
  }
  glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
  MEMHAL_TRY(prepare_taps(dst, crop, options));
  MEMHAL_TRY(upload_source(src, crop));
  MEMHAL_TRY(sample(src, options));
  std::array<OutPlane, kMaxPlanes> planes{};
  const int count = out_planes(dst, options, planes);
  bool rendered = false;
  for (int i = 0; i < count; ++i) {
    MEMHAL_TRY(pack_plane(planes[i], dst, i, options));
    rendered |= dst.planes[i].gl_framebuffer != 0;
  }
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  // What was rendered into imported memory is there when the caller (or a peer) reads it.
  if (rendered) glFinish();
  return context_->check_reset();
}

std::optional<std::string> GlConverter::unsupported(const ImageRef& src, const ImageRef& dst,
                                                    const ConvertOptions& options) const {
  if (src.dtype != DType::U8) return cat(to_string(src.dtype), " source");
  std::array<OutPlane, kMaxPlanes> planes{};
  const int count = out_planes(dst, options, planes);
  const bool yuv_out =
      dst.format == PixelFormat::Nv12 || dst.format == PixelFormat::I420 || dst.format == PixelFormat::Yuyv;
  const bool dtype_ok = dst.dtype == DType::U8 ||
                        (!yuv_out && (dst.dtype == DType::I8 || dst.dtype == DType::F16 || dst.dtype == DType::F32));
  if (count == 0 || !dtype_ok) return cat(to_string(dst.format), " ", to_string(dst.dtype), " output");
  const int64_t max = max_size_;
  for (int i = 0; i < src.plane_count; ++i) {
    const PlaneRef& p = src.planes[i];
    if (p.row < 0) return std::string("source rows run upward (negative pitch)");
    if (p.pixel < 0 || p.comp < 0) return std::string("source pixels run right to left (negative stride)");
    const Extent e = source_extent(src, i);
    const int64_t bytes = row_end(src, i, e.width - 1);
    if (bytes > max) return cat("a ", bytes, "-byte-wide source plane exceeds GL_MAX_TEXTURE_SIZE ", max);
    if (e.height > max) return cat("a ", e.height, "-row source plane exceeds GL_MAX_TEXTURE_SIZE ", max);
    if (e.height > 1 && p.row < bytes) return cat("source rows overlap (pitch ", p.row, " < ", bytes, " bytes a row)");
  }
  if (dst.width > max || dst.height > max) {
    return cat("a ", dst.width, "x", dst.height, " destination exceeds GL_MAX_TEXTURE_SIZE ", max);
  }
  for (int i = 0; i < count; ++i) {
    const PlaneRef& p = dst.planes[i];
    if (p.row < 0) return std::string("destination rows run upward (negative pitch)");
    if (p.pixel < 0 || p.comp < 0) return std::string("destination pixels run right to left (negative stride)");
    const int64_t words = (planes[i].width * planes[i].channels * static_cast<int64_t>(size_of(dst.dtype)) + 15) / 16;
    if (words > max) return cat("a ", 16 * words, "-byte destination row exceeds GL_MAX_TEXTURE_SIZE ", max, " x 16");
  }
  return std::nullopt;
}

}  // namespace memhal::detail::gl
