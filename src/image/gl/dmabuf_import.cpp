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
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include <memhal/memory.hpp>
#include <memhal/tensor.hpp>
#include <memhal/tensor_map.hpp>

#include "core/strings.hpp"
#include "storage/storage.hpp"
#include "tensor/tensor_access.hpp"

namespace memhal::detail::gl {
namespace {

// From the kernel's drm_fourcc.h: one 8-bit channel, and the linear (untiled) modifier.
constexpr uint32_t kDrmFormatR8 = 'R' | ('8' << 8) | (' ' << 16) | (static_cast<uint32_t>(' ') << 24);
// Four bytes R, G, B, A in memory order (DRM_FORMAT_ABGR8888, "AB24").
constexpr uint32_t kDrmFormatAbgr8888 = 'A' | ('B' << 8) | ('2' << 16) | (static_cast<uint32_t>('4') << 24);
constexpr uint64_t kDrmFormatModLinear = 0;
// A buffer holds at most this many planes; more entries for one buffer are stale geometry.
constexpr std::size_t kEntriesPerBuffer = 4;

constexpr uint32_t fourcc(char a, char b, char c, char d) {
  return static_cast<uint32_t>(a) | (static_cast<uint32_t>(b) << 8) | (static_cast<uint32_t>(c) << 16) |
         (static_cast<uint32_t>(d) << 24);
}

// The EGL attributes of plane i (EGL_DMA_BUF_PLANE<i>_*).
struct PlaneAttribs {
  EGLint fd, offset, pitch, modifier_lo, modifier_hi;
};
constexpr PlaneAttribs kPlaneAttribs[] = {
    {EGL_DMA_BUF_PLANE0_FD_EXT, EGL_DMA_BUF_PLANE0_OFFSET_EXT, EGL_DMA_BUF_PLANE0_PITCH_EXT,
     EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT},
    {EGL_DMA_BUF_PLANE1_FD_EXT, EGL_DMA_BUF_PLANE1_OFFSET_EXT, EGL_DMA_BUF_PLANE1_PITCH_EXT,
     EGL_DMA_BUF_PLANE1_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE1_MODIFIER_HI_EXT},
    {EGL_DMA_BUF_PLANE2_FD_EXT, EGL_DMA_BUF_PLANE2_OFFSET_EXT, EGL_DMA_BUF_PLANE2_PITCH_EXT,
     EGL_DMA_BUF_PLANE2_MODIFIER_LO_EXT, EGL_DMA_BUF_PLANE2_MODIFIER_HI_EXT},
};

std::string fourcc_name(uint32_t code) {
  std::string name(4, ' ');
  for (int i = 0; i < 4; ++i) name[i] = static_cast<char>((code >> (8 * i)) & 0xff);
  name.erase(name.find_last_not_of(' ') + 1);  // "R8  " reads "R8"
  return name;
}

// Drivers (vendor, renderer, version) that refused a writable memfd in this process.
std::mutex refusing_mutex;
std::set<std::string>& refusing_drivers() {
  static std::set<std::string> drivers;
  return drivers;
}

std::string driver_key(const GlContext& context) {
  const GlInfo& i = context.info();
  return cat(i.vendor, "|", i.renderer, "|", i.version);
}

// Why a driver refused rendering into a memory kind as a format, by driver key, kind and format.
std::map<std::string, std::string>& render_refusals() {
  static std::map<std::string, std::string> refusals;
  return refusals;
}

// Why a driver refused a fourcc as one image, by driver key and fourcc.
std::map<std::string, std::string>& whole_image_refusals() {
  static std::map<std::string, std::string> refusals;
  return refusals;
}

}  // namespace

uint32_t whole_image_fourcc(PixelFormat format) noexcept {
  switch (format) {
    case PixelFormat::Nv12: return fourcc('N', 'V', '1', '2');
    case PixelFormat::Nv21: return fourcc('N', 'V', '2', '1');
    case PixelFormat::Nv16: return fourcc('N', 'V', '1', '6');
    case PixelFormat::Nv24: return fourcc('N', 'V', '2', '4');
    case PixelFormat::I420: return fourcc('Y', 'U', '1', '2');
    // Packed 4:2:2 stays bytes: Mesa 25's llvmpipe takes YUYV whole but samples it wrongly
    // through texelFetch and crashes compiling texture() on it (measured).
    default: return 0;
  }
}

std::string DmaBufImporter::whole_image_refusal(uint32_t code) const {
  std::lock_guard lock(refusing_mutex);
  const auto it = whole_image_refusals().find(cat(driver_key(context_), "|", code));
  return it == whole_image_refusals().end() ? std::string() : it->second;
}

Result<GLuint> DmaBufImporter::external_texture(const DmaBufImage& image) {
  cache_.collect([this](Entry& entry) { release(entry); });
  const DmaBufPlane& first = image.planes[0];
  const Entry* hit = cache_.find(*first.storage, [&](const Entry& e) {
    return e.fourcc == image.fourcc && e.width == image.width && e.height == image.height && e.offset == first.offset &&
           e.pitch == first.pitch && e.matrix == image.matrix && e.range == image.range;
  });
  if (hit != nullptr) return hit->texture;
  if (!context_.info().image_external) {
    return fail(ErrorCode::Unavailable, "GL driver ", context_.info().renderer,
                " has no GL_OES_EGL_image_external_essl3 to sample a whole ", fourcc_name(image.fourcc), " image");
  }
  std::vector<EGLint> attribs = {
      EGL_WIDTH, static_cast<EGLint>(image.width), EGL_HEIGHT, static_cast<EGLint>(image.height),
      EGL_LINUX_DRM_FOURCC_EXT, static_cast<EGLint>(image.fourcc), EGL_YUV_COLOR_SPACE_HINT_EXT,
      image.matrix == ColorMatrix::Bt709 ? EGL_ITU_REC709_EXT : EGL_ITU_REC601_EXT, EGL_SAMPLE_RANGE_HINT_EXT,
      image.range == ColorRange::Full ? EGL_YUV_FULL_RANGE_EXT : EGL_YUV_NARROW_RANGE_EXT,
      // Chroma sampled where the CPU backend reads it: the left and top
      // luma sample of its cell, not interpolated between cells.
      EGL_YUV_CHROMA_HORIZONTAL_SITING_HINT_EXT, EGL_YUV_CHROMA_SITING_0_EXT, EGL_YUV_CHROMA_VERTICAL_SITING_HINT_EXT,
      EGL_YUV_CHROMA_SITING_0_EXT};
  for (int i = 0; i < image.plane_count; ++i) {
    const DmaBufPlane& p = image.planes[i];
    if (p.offset > INT_MAX || p.pitch > INT_MAX || p.pitch <= 0) {
      return fail(ErrorCode::InvalidArgument, "DMA-BUF plane ", i, " at offset ", p.offset, " pitch ", p.pitch,
                  " cannot be described to EGL");
    }
    const PlaneAttribs& a = kPlaneAttribs[i];
    attribs.insert(attribs.end(), {a.fd, p.storage->fd(), a.offset, static_cast<EGLint>(p.offset), a.pitch,
                                   static_cast<EGLint>(p.pitch)});
    if (modifiers_) attribs.insert(attribs.end(), {a.modifier_lo, 0, a.modifier_hi, 0});  // linear
  }
  attribs.push_back(EGL_NONE);
  auto refuse = [&](const std::string& why) -> Result<GLuint> {
    std::lock_guard lock(refusing_mutex);
    whole_image_refusals()[cat(driver_key(context_), "|", image.fourcc)] = why;
    return fail(ErrorCode::Unavailable, why);
  };
  Entry entry;
  entry.image = create_image_(context_.display(), EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, nullptr, attribs.data());
  if (entry.image == EGL_NO_IMAGE_KHR) {
    return refuse(cat("eglCreateImageKHR(EGL_LINUX_DMA_BUF_EXT, ", fourcc_name(image.fourcc), " ", image.width, "x",
                      image.height, " as one image, ", image.plane_count,
                      " planes) failed: ", egl_error_name(eglGetError())));
  }
  if (const GLenum error = bind_image(GL_TEXTURE_EXTERNAL_OES, entry); error != GL_NO_ERROR) {
    release(entry);
    return refuse(cat("binding a whole ", fourcc_name(image.fourcc),
                      " image to GL_TEXTURE_EXTERNAL_OES failed: ", gl_error_name(error)));
  }
  entry.fourcc = image.fourcc;
  entry.width = image.width;
  entry.height = image.height;
  entry.offset = first.offset;
  entry.pitch = first.pitch;
  entry.matrix = image.matrix;
  entry.range = image.range;
  // Another whole-image entry of this buffer describes it no more.
  for (auto& e : cache_.entries()) {
    if (e.buffer == first.storage->id() && e.value.fourcc != 0) release(e.value);
  }
  return keep_import(*first.storage, std::move(entry));
}

bool DmaBufImporter::refuses_host_fds() const {
  std::lock_guard lock(refusing_mutex);
  return refusing_drivers().count(driver_key(context_)) != 0;
}

void DmaBufImporter::refuse_host_fds() const {
  std::lock_guard lock(refusing_mutex);
  refusing_drivers().insert(driver_key(context_));
}

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
  for (auto& entry : cache_.entries()) release(entry.value);
  for (auto& entry : targets_.entries()) release(entry.value);
}

void DmaBufImporter::release(Entry& entry) {
  if (entry.framebuffer != 0) glDeleteFramebuffers(1, &entry.framebuffer);
  if (entry.texture != 0) glDeleteTextures(1, &entry.texture);
  if (entry.image != EGL_NO_IMAGE_KHR) destroy_image_(context_.display(), entry.image);
  entry = Entry{};
}

Result<GLuint> DmaBufImporter::texture(const DmaBufPlane& plane) {
  cache_.collect([this](Entry& entry) { release(entry); });
  if (plane.storage->fd() < 0) {
    return fail(ErrorCode::InvalidArgument, "DMA-BUF import of a ", to_string(plane.storage->kind()),
                " buffer, which has no fd");
  }
  if (plane.row_bytes > INT_MAX || plane.rows > INT_MAX || plane.offset > INT_MAX || plane.pitch > INT_MAX ||
      plane.pitch <= 0) {
    return fail(ErrorCode::InvalidArgument, "DMA-BUF plane ", plane.row_bytes, "x", plane.rows, " at offset ",
                plane.offset, " pitch ", plane.pitch, " cannot be described to EGL");
  }
  const Entry* hit = cache_.find(*plane.storage, [&](const Entry& e) {
    return e.fourcc == 0 && e.offset == plane.offset && e.pitch == plane.pitch && e.row_bytes == plane.row_bytes &&
           e.rows == plane.rows;
  });
  if (hit != nullptr) {
    if (!hit->refused.empty()) return fail(ErrorCode::Unavailable, hit->refused, " (refused before; not retried)");
    return hit->texture;
  }
  auto imported = import(plane, kDrmFormatR8, plane.row_bytes);
  if (!imported) {
    Entry refused;
    refused.offset = plane.offset;
    refused.pitch = plane.pitch;
    refused.row_bytes = plane.row_bytes;
    refused.rows = plane.rows;
    refused.refused = imported.error().message();
    cache_.insert(*plane.storage, std::move(refused));
    return unexpected(imported.error());
  }
  Entry entry = std::move(*imported);
  // The same plane of the buffer at another geometry: the old import no longer describes it.
  // Beyond one entry per plane, the oldest of this buffer is stale too.
  auto& entries = cache_.entries();
  std::size_t of_buffer = 0;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->buffer != plane.storage->id() || it->value.fourcc != 0) continue;
    if (it->value.offset == plane.offset || ++of_buffer >= kEntriesPerBuffer) release(it->value);
  }
  return keep_import(*plane.storage, std::move(entry));
}

GLuint DmaBufImporter::keep_import(const Storage& storage, Entry entry) {
  // Released entries go (refused ones, which hold no texture either, stay).
  auto& entries = cache_.entries();
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const auto& e) { return e.value.texture == 0 && e.value.refused.empty(); }),
                entries.end());
  const GLuint texture = entry.texture;
  cache_.insert(storage, std::move(entry));
  ++imports_;
  return texture;
}

std::string DmaBufImporter::render_refusal(MemoryKind kind, int texel_bytes) const {
  std::lock_guard lock(refusing_mutex);
  const auto it = render_refusals().find(cat(driver_key(context_), "|", to_string(kind), "|", texel_bytes));
  return it == render_refusals().end() ? std::string() : it->second;
}

Result<GLuint> DmaBufImporter::render_target(const DmaBufPlane& plane, int texel_bytes) {
  targets_.collect([this](Entry& entry) { release(entry); });
  if (texel_bytes != 4 && texel_bytes != 1) {
    return fail(ErrorCode::InvalidArgument, "a DMA-BUF render target of ", texel_bytes, "-byte texels");
  }
  if (plane.storage == nullptr || plane.storage->fd() < 0) {
    return fail(ErrorCode::InvalidArgument, "DMA-BUF render target in a buffer with no fd");
  }
  if (plane.row_bytes % texel_bytes != 0 || plane.row_bytes <= 0 || plane.rows <= 0 || plane.row_bytes > INT_MAX ||
      plane.rows > INT_MAX || plane.offset > INT_MAX || plane.pitch > INT_MAX || plane.pitch <= 0) {
    return fail(ErrorCode::InvalidArgument, "DMA-BUF render target ", plane.row_bytes, "x", plane.rows, " at offset ",
                plane.offset, " pitch ", plane.pitch, " cannot be described to EGL as ", texel_bytes, "-byte texels");
  }
  const MemoryKind kind = plane.storage->kind();
  if (std::string refused = render_refusal(kind, texel_bytes); !refused.empty()) {
    return fail(ErrorCode::Unavailable, refused, " (refused before; not retried)");
  }
  const uint32_t format = texel_bytes == 4 ? kDrmFormatAbgr8888 : kDrmFormatR8;
  const Entry* hit = targets_.find(*plane.storage, [&](const Entry& e) {
    return e.fourcc == format && e.offset == plane.offset && e.pitch == plane.pitch && e.row_bytes == plane.row_bytes &&
           e.rows == plane.rows;
  });
  if (hit != nullptr) return hit->framebuffer;
  auto refuse = [&](const std::string& why) -> Result<GLuint> {
    std::lock_guard lock(refusing_mutex);
    render_refusals()[cat(driver_key(context_), "|", to_string(kind), "|", texel_bytes)] = why;
    return fail(ErrorCode::Unavailable, why);
  };
  auto imported = import(plane, format, plane.row_bytes / texel_bytes);
  if (!imported) return refuse(imported.error().message());
  Entry entry = std::move(*imported);
  entry.fourcc = format;
  glGenFramebuffers(1, &entry.framebuffer);
  glBindFramebuffer(GL_FRAMEBUFFER, entry.framebuffer);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, entry.texture, 0);
  const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  const GLenum error = glGetError();
  if (status != GL_FRAMEBUFFER_COMPLETE || error != GL_NO_ERROR) {
    release(entry);
    while (glGetError() != GL_NO_ERROR) {
    }
    std::ostringstream why;
    why << "an imported " << fourcc_name(format) << " " << plane.row_bytes / texel_bytes << "x" << plane.rows << " "
        << to_string(kind) << " plane as a render target: ";
    if (status != GL_FRAMEBUFFER_COMPLETE) {
      why << "framebuffer incomplete (status 0x" << std::hex << status << ")";
    } else {
      why << gl_error_name(error);
    }
    return refuse(why.str());
  }
  // The same plane of the buffer at another geometry: the old target no longer describes it.
  auto& entries = targets_.entries();
  std::size_t of_buffer = 0;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->buffer != plane.storage->id()) continue;
    if (it->value.offset == plane.offset || ++of_buffer >= kEntriesPerBuffer) release(it->value);
  }
  entries.erase(std::remove_if(entries.begin(), entries.end(), [](const auto& e) { return e.value.framebuffer == 0; }),
                entries.end());
  const GLuint framebuffer = entry.framebuffer;
  targets_.insert(*plane.storage, std::move(entry));
  ++render_imports_;
  return framebuffer;
}

Result<DmaBufImporter::Entry> DmaBufImporter::import(const DmaBufPlane& plane, uint32_t drm_format, int64_t width) {
  std::vector<EGLint> attribs = {EGL_WIDTH,
                                 static_cast<EGLint>(width),
                                 EGL_HEIGHT,
                                 static_cast<EGLint>(plane.rows),
                                 EGL_LINUX_DRM_FOURCC_EXT,
                                 static_cast<EGLint>(drm_format),
                                 EGL_DMA_BUF_PLANE0_FD_EXT,
                                 plane.storage->fd(),
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
    return fail(ErrorCode::Unavailable, "eglCreateImageKHR(EGL_LINUX_DMA_BUF_EXT, ", fourcc_name(drm_format), " ",
                width, "x", plane.rows, " pitch ", plane.pitch, " offset ", plane.offset,
                ") failed: ", egl_error_name(eglGetError()));
  }
  if (const GLenum error = bind_image(GL_TEXTURE_2D, entry); error != GL_NO_ERROR) {
    release(entry);
    return fail(ErrorCode::Unavailable, "binding an imported DMA-BUF plane to GL failed: ", gl_error_name(error));
  }
  entry.offset = plane.offset;
  entry.pitch = plane.pitch;
  entry.row_bytes = plane.row_bytes;
  entry.rows = plane.rows;
  return entry;
}

GLenum DmaBufImporter::bind_image(GLenum target, Entry& entry) {
  // texelFetch reads only complete textures: one level, nearest filtering.
  glGenTextures(1, &entry.texture);
  glBindTexture(target, entry.texture);
  target_texture_(target, static_cast<GLeglImageOES>(entry.image));
  glTexParameteri(target, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(target, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glBindTexture(target, 0);
  return glGetError();
}

}  // namespace memhal::detail::gl

namespace memhal::detail::gl {
namespace {

// A small buffer to probe with: a DMA-BUF where this machine allocates them, else a memfd.
Result<Tensor> probe_buffer(int64_t width, int64_t height, PixelFormat format) {
  const MemoryKind memory = is_available(MemoryKind::DmaBuf) ? MemoryKind::DmaBuf : MemoryKind::Shm;
  return Tensor::image(width, height, format, memory);
}

std::string buffer_name(const Tensor& t) {
  return t.memory() == MemoryKind::DmaBuf ? "a DMA-BUF" : "a memfd (no DMA-BUF allocator here)";
}

// Imports a Grey buffer plane by plane as the converter would and reads the bytes back.
Result<void> probe_import(GlContext& context) {
  constexpr int64_t kW = 64, kH = 32;
  MEMHAL_ASSIGN_OR_RETURN(Tensor buffer, probe_buffer(kW, kH, PixelFormat::Grey));
  {
    MEMHAL_ASSIGN_OR_RETURN(TensorMap map, buffer.map(CpuAccess::Write));
    for (int64_t y = 0; y < kH; ++y) {
      for (int64_t x = 0; x < kW; ++x) map.data()[y * buffer.strides()[0] + x] = std::byte((x * 7 + y * 13) & 0xff);
    }
  }
  MEMHAL_ASSIGN_OR_RETURN(auto importer, DmaBufImporter::create(context));
  DmaBufPlane plane{TensorAccess::buffers(buffer)[0], 0, buffer.strides()[0], kW, kH};
  MEMHAL_ASSIGN_OR_RETURN(const GLuint texture, importer->texture(plane));
  GLuint framebuffer = 0;
  glGenFramebuffers(1, &framebuffer);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
  std::vector<uint8_t> texels(static_cast<std::size_t>(kW * kH * 4));
  glReadPixels(0, 0, kW, kH, GL_RGBA, GL_UNSIGNED_BYTE, texels.data());
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, &framebuffer);
  if (const GLenum error = glGetError(); error != GL_NO_ERROR) {
    return fail(ErrorCode::Unavailable, "reading back an imported plane failed: ", gl_error_name(error));
  }
  for (int64_t i = 0; i < kW * kH; ++i) {
    const int64_t x = i % kW, y = i / kW;
    const uint32_t want = static_cast<uint32_t>((x * 7 + y * 13) & 0xff);
    if (texels[static_cast<std::size_t>(4 * i)] != want) {
      return fail(ErrorCode::Unavailable, "an imported ", buffer_name(buffer), " sampled ",
                  int{texels[static_cast<std::size_t>(4 * i)]}, " at (", x, ", ", y, ") where the buffer holds ", want);
    }
  }
  return {};
}

// Imports an RGBA buffer as a renderbuffer, clears it to a colour and reads it on the CPU.
Result<void> probe_render(GlContext& context) {
  constexpr int64_t kW = 16, kH = 8;
  auto storage = reinterpret_cast<PFNGLEGLIMAGETARGETRENDERBUFFERSTORAGEOESPROC>(
      eglGetProcAddress("glEGLImageTargetRenderbufferStorageOES"));
  auto create_image = reinterpret_cast<PFNEGLCREATEIMAGEKHRPROC>(eglGetProcAddress("eglCreateImageKHR"));
  auto destroy_image = reinterpret_cast<PFNEGLDESTROYIMAGEKHRPROC>(eglGetProcAddress("eglDestroyImageKHR"));
  if (storage == nullptr || create_image == nullptr || destroy_image == nullptr) {
    return fail(ErrorCode::Unavailable, "no glEGLImageTargetRenderbufferStorageOES or eglCreateImageKHR");
  }
  MEMHAL_ASSIGN_OR_RETURN(Tensor buffer, probe_buffer(kW, kH, PixelFormat::Rgba));
  {
    MEMHAL_ASSIGN_OR_RETURN(TensorMap map, buffer.map(CpuAccess::Write));
    std::memset(map.data(), 0, static_cast<std::size_t>(buffer.strides()[0] * kH));
  }
  const EGLint attribs[] = {EGL_WIDTH,
                            static_cast<EGLint>(kW),
                            EGL_HEIGHT,
                            static_cast<EGLint>(kH),
                            EGL_LINUX_DRM_FOURCC_EXT,
                            static_cast<EGLint>(fourcc('A', 'B', '2', '4')),  // bytes R, G, B, A
                            EGL_DMA_BUF_PLANE0_FD_EXT,
                            buffer.fd(),
                            EGL_DMA_BUF_PLANE0_OFFSET_EXT,
                            0,
                            EGL_DMA_BUF_PLANE0_PITCH_EXT,
                            static_cast<EGLint>(buffer.strides()[0]),
                            EGL_NONE};
  EGLImageKHR image = create_image(context.display(), EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, nullptr, attribs);
  if (image == EGL_NO_IMAGE_KHR) {
    return fail(ErrorCode::Unavailable, "eglCreateImageKHR(EGL_LINUX_DMA_BUF_EXT, AB24 16x8) of ", buffer_name(buffer),
                " failed: ", egl_error_name(eglGetError()));
  }
  GLuint renderbuffer = 0, framebuffer = 0;
  glGenRenderbuffers(1, &renderbuffer);
  glBindRenderbuffer(GL_RENDERBUFFER, renderbuffer);
  storage(GL_RENDERBUFFER, static_cast<GLeglImageOES>(image));
  glGenFramebuffers(1, &framebuffer);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, renderbuffer);
  const GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  if (status == GL_FRAMEBUFFER_COMPLETE) {
    glViewport(0, 0, kW, kH);
    glClearColor(0.2f, 0.4f, 0.6f, 0.8f);
    glClear(GL_COLOR_BUFFER_BIT);
    glFinish();
  }
  const GLenum error = glGetError();
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, &framebuffer);
  glDeleteRenderbuffers(1, &renderbuffer);
  destroy_image(context.display(), image);
  if (status != GL_FRAMEBUFFER_COMPLETE || error != GL_NO_ERROR) {
    return fail(ErrorCode::Unavailable, "an imported ", buffer_name(buffer), " as a render target: ",
                status != GL_FRAMEBUFFER_COMPLETE ? "framebuffer incomplete" : gl_error_name(error));
  }
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, buffer.map(CpuAccess::Read));
  const uint8_t want[4] = {51, 102, 153, 204};
  for (int64_t y = 0; y < kH; ++y) {
    for (int64_t x = 0; x < kW * 4; ++x) {
      const auto got = static_cast<int>(map.data()[y * buffer.strides()[0] + x]);
      if (std::abs(got - want[x % 4]) > 1) {
        return fail(ErrorCode::Unavailable, "GL drew into an imported ", buffer_name(buffer), " but byte ", x,
                    " of row ", y, " holds ", got, ", not ", int{want[x % 4]});
      }
    }
  }
  return {};
}

}  // namespace

void probe_dma_buf(GlContext& context, GlDriverInfo& info) {
  if (!context.info().dma_buf_import) {
    info.dma_buf_import_why = info.dma_buf_render_why = "no EGL_EXT_image_dma_buf_import";
    return;
  }
  auto imported = probe_import(context);
  info.dma_buf_import_works = imported.has_value();
  if (!imported) info.dma_buf_import_why = imported.error().message();
  auto rendered = probe_render(context);
  info.dma_buf_render_works = rendered.has_value();
  if (!rendered) info.dma_buf_render_why = rendered.error().message();
  while (glGetError() != GL_NO_ERROR) {
  }
}

}  // namespace memhal::detail::gl
