// The GL backend's conversion: the semantics of the CPU backend (image_processor.hpp) in GLES 3
// shaders. Source planes are uploaded as byte textures (from a GL buffer through
// GL_PIXEL_UNPACK_BUFFER, with no CPU copy), decoded and resampled with the tap tables of
// detail::Geometry — the very source pixels and weights the CPU backend uses — and packed into
// the destination's bytes, which are read back straight into its memory where the layout
// allows. Textures and framebuffers are kept and reused while the geometry stays the same.
#pragma once

#include <GLES3/gl32.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "image/cpu/resample_plan.hpp"
#include "image/gl/gl_context.hpp"
#include "image/image_ref.hpp"

namespace memhal::detail::gl {

/// Converts images on the GL thread of one GlContext. Every member except `unsupported` runs
/// on that thread (inside GlContext::run); `unsupported` makes no GL call and may run anywhere.
class GlConverter {
 public:
  /// Compiles and links the programs. On the GL thread. `Unavailable` with the info log when a
  /// shader does not compile or link.
  static Result<std::unique_ptr<GlConverter>> create(GlContext& context);
  /// Deletes its GL objects; on the GL thread.
  ~GlConverter();
  GlConverter(const GlConverter&) = delete;
  GlConverter& operator=(const GlConverter&) = delete;

  /// Empty when this backend converts src -> dst with these options; otherwise why not, in
  /// words a user reads in a fallback counter ("source rows run upward (negative pitch)").
  std::optional<std::string> unsupported(const ImageRef& src, const ImageRef& dst, const ConvertOptions& options) const;

  /// Converts; the caller validated formats, sizes, crop and options exactly as for the CPU
  /// backend (detail::CpuConverter::run) and asked `unsupported`. A destination plane with a
  /// `gl_framebuffer` (over its own bytes, imported with `direct_planes`' texel format) is
  /// rendered into, and finished (glFinish) before this returns; the others are read back. On
  /// the GL thread. Errors:
  /// `Unavailable` on a GL error or a context reset (the message names the GL call and error).
  Result<void> run(const ImageRef& src, const ImageRef& dst, const Rect& crop, const ConvertOptions& options);

  /// One destination plane as the pack pass writes it: `row_bytes` x `rows` bytes, and the
  /// bytes of a texel when it can render straight into the plane's memory imported as a render
  /// target (4: DRM_FORMAT_ABGR8888 of row_bytes / 4 texels a row; 1: DRM_FORMAT_R8, for 8-bit
  /// elements whose rows are not whole 4-byte texels), 0 when it cannot (elements not dense in
  /// their rows, a row wider than GL_MAX_TEXTURE_SIZE texels).
  struct DirectPlane {
    int64_t row_bytes = 0;
    int64_t rows = 0;
    int texel = 0;
  };
  /// The planes the pack pass writes for dst with these options; their count. No GL call.
  int direct_planes(const ImageRef& dst, const ConvertOptions& options, std::array<DirectPlane, kMaxPlanes>& out) const;

  /// GL objects (textures, framebuffers, programs) made so far; it stays put while calls
  /// repeat a geometry and formats already seen. On the GL thread.
  uint64_t objects_made() const noexcept { return objects_made_; }

 private:
  struct Texture {
    GLuint id = 0;
    GLenum format = 0;
    int width = 0;
    int height = 0;
  };
  struct Target {
    Texture texture;
    GLuint framebuffer = 0;
  };
  struct Key {
    Rect crop;
    Flip flip;
    Rotation rotation;
    ResizeMode resize;
    Interpolation interpolation;
    int64_t dst_w, dst_h;
    bool operator==(const Key& o) const;
  };
  /// One plane of the destination as the pack pass writes it.
  struct OutPlane {
    int mode = 0;      // see kPack in gl_shaders.hpp
    int channels = 1;  // elements per pixel
    std::array<int, 4> select{0, 1, 2, 3};
    std::array<float, 4> scale{1, 1, 1, 1};
    std::array<float, 4> bias{0, 0, 0, 0};
    int64_t width = 0;
    int64_t rows = 0;
  };

  GlConverter(GlContext& context, GLuint vao);
  /// The sample program for a source kind, axis forms and plane texture type (R8UI, or R8 for
  /// imported planes; see gl_shaders.hpp), linked on first use.
  Result<GLuint> sample_program(int kind, bool alpha, bool affine_h, bool affine_v, bool unorm);
  /// The pack program for a plane mode, output dtype (0..3), elements per pixel (1..4) and
  /// bytes per fragment (16, 4 or 1).
  Result<GLuint> pack_program(int mode, int dtype, int channels, int texel);
  Result<void> prepare_taps(const ImageRef& dst, const Rect& crop, const ConvertOptions& options);
  Result<void> upload_source(const ImageRef& src, const Rect& crop);
  Result<void> sample(const ImageRef& src, const ConvertOptions& options);
  Result<void> pack_plane(const OutPlane& out, const ImageRef& dst, int index, const ConvertOptions& options);
  Result<void> read_back(const OutPlane& out, const PlaneRef& plane, int64_t esize, int words);
  Result<void> copy_rows_on_gl(const PlaneRef& plane, int64_t row_bytes, int words, int rows);
  Result<void> ensure_target(Target& target, int width, int height);
  /// Binds `texture` on the active unit, (re)made as width x height of `format` when it is not
  /// that already; true when it was made.
  bool ensure_texture(Texture& texture, GLenum format, int width, int height);
  /// The bytes per fragment of `out` rendered straight into `plane` (DirectPlane::texel).
  static int direct_texel(const OutPlane& out, const PlaneRef& plane, int64_t esize);
  /// The planes the pack pass writes for dst; their count (0: a format it does not write).
  static int out_planes(const ImageRef& dst, const ConvertOptions& options, std::array<OutPlane, kMaxPlanes>& out);

  GlContext* context_;
  std::array<GLuint, 6 * 2 * 2 * 2 * 2> sample_programs_{};  // by kind, alpha, affine axes, unorm
  std::array<GLuint, 5 * 4 * 4 * 3> pack_programs_{};        // by mode, dtype, channels, texel
  GLuint vao_ = 0;
  int max_size_ = 0;
  uint64_t objects_made_ = 0;
  std::array<Texture, kMaxPlanes> source_{};
  std::array<Texture, 4> taps_{};  // first_h, first_v, taps_h, taps_v
  Target content_;
  std::array<Target, kMaxPlanes> outputs_{};
  Geometry geometry_;
  Key key_{};
  bool has_key_ = false;
  std::array<bool, 2> affine_{};        // horizontal, vertical: one tap at base + step * o
  std::array<int32_t, 4> affine_at_{};  // base h, step h, base v, step v
  std::vector<int32_t> first_;
  std::vector<float> entries_;
  std::vector<uint32_t> staging_;
  GLuint staging_buffer_ = 0;  // for GL buffer destinations whose rows are not whole texels
  int64_t staging_buffer_size_ = 0;
};

}  // namespace memhal::detail::gl
