#include "image/gl/gl_backend.hpp"

#include <fcntl.h>
#include <memhal/tensor_map.hpp>

#include <variant>

#include "core/strings.hpp"
#include "image/gl/dmabuf_import.hpp"
#include "image/gl/gl_context.hpp"
#include "image/gl/gl_converter.hpp"
#include "image/gl/pbo_storage.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal::detail::gl {
namespace {

bool software_renderer(const std::string& renderer) {
  for (const char* name : {"llvmpipe", "softpipe", "swrast", "SwiftShader"}) {
    if (renderer.find(name) != std::string::npos) return true;
  }
  return false;
}

// One operand of a GL conversion: its planes in GL terms, and the CPU mapping that keeps host
// memory reachable while GL reads or writes it.
struct Operand {
  ImageRef image;
  std::optional<TensorMap> map;
};

// Pbo images of this context are used in place; anything else host-mappable is mapped. A Pbo
// the CPU holds mapped, or one of another processor, cannot be used by this context (the
// caller converts it on the CPU); one whose processor was destroyed is `Unavailable`.
Result<std::variant<Operand, std::string>> bind(const Tensor& tensor, const ImageRef& g, CpuAccess access,
                                                const GlContext& context, const char* role, bool map_host = true) {
  Operand op{g, std::nullopt};
  const auto& buffers = TensorAccess::buffers(tensor);
  for (int i = 0; i < g.plane_count; ++i) {
    const PlaneRef& p = g.planes[i];
    const auto* pbo = dynamic_cast<const PboStorage*>(buffers[p.buffer].get());
    if (pbo == nullptr) continue;
    if (!pbo->belongs_to(context)) {
      // A dead context's buffer name may be reused by a live context: never touch it.
      if (pbo->context_gone()) {
        return fail(ErrorCode::Unavailable, "GL convert: ", role, " '", tensor.name(), "' is a Pbo image (buffer ",
                    pbo->buffer(), ") of a destroyed ImageProcessor: GL context gone");
      }
      return cat(role, " '", tensor.name(), "' is a Pbo image of another processor");
    }
    if (pbo->mapped()) return cat(role, " '", tensor.name(), "' is a Pbo image the CPU holds mapped");
    op.image.planes[i].gl_buffer = pbo->buffer();
  }
  if (tensor.memory() != MemoryKind::Pbo && map_host) {
    MEMHAL_ASSIGN_OR_RETURN(TensorMap map, tensor.map(access));
    MEMHAL_ASSIGN_OR_RETURN(op.image, resolve(std::move(op.image), map, role));
    op.map.emplace(std::move(map));
  }
  return op;
}

// The planes of a DmaBuf image as EGL imports them: whole byte rows of each plane. Empty for a
// layout whose rows are not contiguous bytes (a strided view); that one is mapped and uploaded.
std::optional<std::array<DmaBufPlane, kMaxPlanes>> dma_buf_planes(const Tensor& tensor, const ImageRef& g) {
  std::array<DmaBufPlane, kMaxPlanes> planes{};
  const auto info = *pixel_format_info(g.format);
  const auto& buffers = TensorAccess::buffers(tensor);
  for (int i = 0; i < g.plane_count; ++i) {
    const PlaneRef& p = g.planes[i];
    DmaBufPlane& d = planes[i];
    d.storage = buffers[p.buffer];
    d.offset = p.offset;
    d.pitch = p.row;
    if (g.multi_plane) {
      const PlaneLayout& l = tensor.layout().planes()[i];
      d.row_bytes = l.row_bytes;
      d.rows = l.height;
    } else {
      const bool packed = p.comp == 0 ? p.pixel == 1 : (p.comp == 1 && p.pixel == info.plane_bytes_per_pixel[0]);
      if (!packed || p.row <= 0) return std::nullopt;
      d.row_bytes = g.width * p.pixel;
      d.rows = g.height;
    }
    if (d.storage == nullptr || d.storage->fd() < 0) return std::nullopt;
  }
  return planes;
}

bool writable_fd(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_ACCMODE) != O_RDONLY;
}

}  // namespace

GlBackend::GlBackend(std::shared_ptr<GlContext> context, std::unique_ptr<GlConverter> converter)
    : context_(std::move(context)), converter_(std::move(converter)), driver_(describe(*context_)) {
  auto importer = context_->run([this] { return DmaBufImporter::create(*context_); });
  if (importer) {
    importer_ = std::move(*importer);
  } else {
    import_note_ = importer.error().message();
  }
}

GlBackend::~GlBackend() {
  // GL objects die on the GL thread; the context goes when the last Pbo map lets it.
  context_->run([this] {
    importer_.reset();
    converter_.reset();
  });
}

GlDriverInfo GlBackend::describe(const GlContext& context) {
  const GlInfo& info = context.info();
  GlDriverInfo d;
  d.platform = info.platform;
  d.egl_version = info.egl_version;
  d.vendor = info.vendor;
  d.renderer = info.renderer;
  d.version = info.version;
  d.glsl_version = info.glsl_version;
  d.max_texture_size = info.max_texture_size;
  d.software = software_renderer(info.renderer);
  d.dma_buf_import = info.dma_buf_import;
  d.extensions = info.extensions;
  return d;
}

Result<std::unique_ptr<GlBackend>> GlBackend::create() {
  MEMHAL_ASSIGN_OR_RETURN(std::shared_ptr<GlContext> context, GlContext::create());
  MEMHAL_ASSIGN_OR_RETURN(std::unique_ptr<GlConverter> converter,
                          context->run([&] { return GlConverter::create(*context); }));
  return std::unique_ptr<GlBackend>(new GlBackend(std::move(context), std::move(converter)));
}

Result<Tensor> GlBackend::create_image(Layout layout, std::string notes) const {
  if (layout.buffer_count() != 1) {
    return fail(ErrorCode::InvalidArgument, "a Pbo image keeps its planes in one buffer, not ", layout.buffer_count());
  }
  const int64_t bytes = layout.byte_extent(0).end;
  MEMHAL_ASSIGN_OR_RETURN(std::shared_ptr<PboStorage> storage,
                          PboStorage::create(context_, static_cast<std::size_t>(bytes)));
  storage->set_notes(std::move(notes));
  TensorAccess::Buffers buffers{};
  buffers[0] = std::move(storage);
  return TensorAccess::make(std::move(layout), std::move(buffers));
}

Result<std::optional<std::string>> GlBackend::convert(const Tensor& src, const ImageRef& src_geometry, Tensor& dst,
                                                      const ImageRef& dst_geometry, const Rect& crop,
                                                      const ConvertOptions& options) {
  if (context_->lost()) return fail(ErrorCode::Unavailable, "GL backend: the GL context was lost (GPU reset)");
  // DMA-BUFs and memfds are offered to the driver for import; a driver that refused a memfd
  // is not offered another (see dmabuf_import.hpp).
  std::optional<std::array<DmaBufPlane, kMaxPlanes>> imported;
  const bool host_fd = src.memory() == MemoryKind::Shm;
  if (importer_ && (src.memory() == MemoryKind::DmaBuf || (host_fd && !importer_->refuses_host_fds()))) {
    imported = dma_buf_planes(src, src_geometry);
  }
  MEMHAL_ASSIGN_OR_RETURN(auto in, bind(src, src_geometry, CpuAccess::Read, *context_, "source", !imported));
  if (auto* why = std::get_if<std::string>(&in)) return std::optional<std::string>(std::move(*why));
  MEMHAL_ASSIGN_OR_RETURN(auto out, bind(dst, dst_geometry, CpuAccess::Write, *context_, "destination"));
  if (auto* why = std::get_if<std::string>(&out)) return std::optional<std::string>(std::move(*why));
  ImageRef& s = std::get<Operand>(in).image;
  const ImageRef& d = std::get<Operand>(out).image;
  if (auto why = converter_->unsupported(s, d, options)) return why;
  ImageRef target = d;
  const bool rendered = render_targets(dst, target, options);
  if (imported) {
    auto textures = context_->run([&]() -> Result<void> {
      // A YUV image whole first (what GPU drivers prefer); a driver that refused its fourcc
      // once gets the planes one by one, and the note says why.
      const uint32_t fourcc = whole_image_fourcc(s.format);
      bool one_buffer = true;
      for (int i = 1; i < s.plane_count; ++i) one_buffer &= (*imported)[i].storage == (*imported)[0].storage;
      if (fourcc != 0 && one_buffer) {
        std::string refused = importer_->whole_image_refusal(fourcc);
        if (refused.empty()) {
          DmaBufImage whole{fourcc, s.width, s.height, s.plane_count, *imported, options.matrix, options.range};
          auto external = importer_->external_texture(whole);
          if (external) {
            s.gl_external = *external;
            return {};
          }
          refused = external.error().message();
        }
        import_note_ = cat(refused, "; its planes are imported one by one instead");
      }
      for (int i = 0; i < s.plane_count; ++i) {
        MEMHAL_ASSIGN_OR_RETURN(s.planes[i].gl_texture, importer_->texture((*imported)[i]));
      }
      return {};
    });
    if (!textures) {
      // The driver refused this buffer: upload it through a CPU mapping instead, and say why.
      // A refused writable memfd means the driver takes no memfds at all (a GPU driver's PRIME
      // import); a read-only one only that it cannot map this one.
      import_note_ = textures.error().message();
      if (host_fd && writable_fd((*imported)[0].storage->fd()) && !importer_->refuses_host_fds()) {
        importer_->refuse_host_fds();
        import_note_ += cat("; ", driver_.renderer, " takes no memfds: Shm sources are uploaded from now on");
      }
      MEMHAL_ASSIGN_OR_RETURN(in, bind(src, src_geometry, CpuAccess::Read, *context_, "source"));
      if (auto* why = std::get_if<std::string>(&in)) return std::optional<std::string>(std::move(*why));
    }
  }
  const ImageRef& source = std::get<Operand>(in).image;
  auto done = context_->run([&]() -> Result<void> {
    MEMHAL_TRY(converter_->run(source, target, crop, options));
    return context_->check_reset();
  });
  if (!done) return unexpected(done.error());
  if (rendered) ++renders_;
  return std::optional<std::string>();
}

bool GlBackend::render_targets(const Tensor& dst, ImageRef& target, const ConvertOptions& options) {
  const MemoryKind kind = dst.memory();
  if (kind != MemoryKind::DmaBuf && kind != MemoryKind::Shm) return false;
  if (!importer_) {
    render_note_ = cat(to_string(kind), " destinations are read back: ", import_note_);
    return false;
  }
  if (kind == MemoryKind::Shm && importer_->refuses_host_fds()) {
    render_note_ = cat("Shm destinations are read back: ", driver_.renderer, " takes no memfds");
    return false;
  }
  std::array<GlConverter::DirectPlane, kMaxPlanes> direct{};
  const int count = converter_->direct_planes(target, options, direct);
  const auto& buffers = TensorAccess::buffers(dst);
  std::array<DmaBufPlane, kMaxPlanes> planes{};
  for (int i = 0; i < count; ++i) {
    const PlaneRef& p = target.planes[i];
    if (direct[i].texel == 0) {
      render_note_ =
          cat("a ", target.width, "x", target.height, " ", to_string(target.format), " ", to_string(target.dtype),
              " destination is read back: plane ", i, " (pitch ", p.row, ", offset ", p.offset, ", ",
              direct[i].row_bytes, " bytes a row) is not ABGR8888 or R8 texels of at most GL_MAX_TEXTURE_SIZE a row");
      return false;
    }
    planes[i] = {buffers[p.buffer], p.offset, p.row, direct[i].row_bytes, direct[i].rows};
    if (planes[i].storage == nullptr || planes[i].storage->fd() < 0) {
      render_note_ = cat(to_string(kind), " destination '", dst.name(), "' is read back: plane ", i, " has no fd");
      return false;
    }
  }
  auto framebuffers = context_->run([&]() -> Result<std::array<GLuint, kMaxPlanes>> {
    std::array<GLuint, kMaxPlanes> out{};
    for (int i = 0; i < count; ++i) {
      MEMHAL_ASSIGN_OR_RETURN(out[i], importer_->render_target(planes[i], direct[i].texel));
    }
    return out;
  });
  if (!framebuffers) {
    render_note_ = cat(to_string(kind), " destinations are read back: ", framebuffers.error().message());
    return false;
  }
  for (int i = 0; i < count; ++i) target.planes[i].gl_framebuffer = (*framebuffers)[i];
  return true;
}

uint64_t GlBackend::dma_buf_imports() const {
  return importer_ ? context_->run([this] { return importer_->imports(); }) : 0;
}

}  // namespace memhal::detail::gl
