/// @file
/// `ImageProcessor`: turns one image tensor into another in as few passes over memory as
/// possible — pixel-format conversion, crop, flip, rotation, resize (stretch or letterbox),
/// output dtype and per-channel normalisation, fused into one call.
///
/// The CPU backend converts each source line once, resamples it, and writes the destination
/// row by row on a thread pool, with SIMD kernels chosen at run time (Highway dynamic
/// dispatch), so one binary runs at full width on every x86 and ARM CPU it meets. 8-bit outputs
/// (u8, i8) under nearest, bilinear or area sampling (area: box sums of the decoded lines) are
/// decoded and resampled in 16-bit fixed point (value x 64), never through float, except under
/// 90 and 270 degree rotations; the results stay within the same +-1 of the semantics below.
///
/// The GL backend opens a headless EGL display (no window system) and an OpenGL ES 3 context
/// that is current on one thread the processor owns; every GL call runs there. So the rule is
/// simple: a processor and its Pbo images may be used from any thread, and no caller ever
/// needs a context current. Conversions it cannot do on GL run on the CPU backend, counted in
/// `stats()`.
///
/// Semantics (what the reference implementation in tests/ computes): the source is cropped,
/// then flipped, then rotated clockwise; each source pixel is decoded to RGB (YUV: chroma of
/// the pixel's own subsampled cell, the chosen matrix and range); the oriented image is
/// resampled onto the destination (or onto the letterboxed rectangle, centred, the rest filled
/// with `pad`) with pixel centres aligned (`(x + 0.5) * scale - 0.5`); the result is written in
/// the destination's dtype: u8 rounded, i8 as x - 128, f16/f32 as `(x/255 - mean)/std`.
#pragma once

#include <array>
#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/export.hpp>
#include <memhal/tensor.hpp>
#include <memhal/vocabulary.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memhal {

// Flip, Rotation, ResizeMode, Interpolation, ColorMatrix, ColorRange and ImageBackend are
// vocabularies (memhal/vocabulary.hpp): codes, wire strings and aliases on every surface.

/// A rectangle of source pixels.
struct Rect {
  int64_t x = 0;
  int64_t y = 0;
  int64_t width = 0;
  int64_t height = 0;
};

/// What `ImageProcessor::convert` does besides converting formats; defaults per DESIGN §5a.
struct ConvertOptions {
  std::optional<Rect> crop;  ///< source pixels to use; none = the whole source
  Flip flip = Flip::None;
  Rotation rotation = Rotation::None;
  ResizeMode resize = ResizeMode::Stretch;
  Interpolation interpolation = Interpolation::Bilinear;
  std::array<uint8_t, 4> pad{114, 114, 114, 255};  ///< RGBA colour of the letterbox bars
  ColorMatrix matrix = ColorMatrix::Bt601;
  ColorRange range = ColorRange::Limited;
  std::array<float, 4> mean{0, 0, 0, 0};  ///< per output channel, float outputs only
  std::array<float, 4> std{1, 1, 1, 1};   ///< per output channel, float outputs only
  /// Exchanges R and B in the output (BGR model inputs in a planar or plain tensor).
  bool swap_rb = false;
  /// The format to write when `dst` carries none (a plain tensor, e.g. one image sliced from a
  /// batch); when unset it is inferred from the shape: `{c, h, w}` planar, `{h, w, c}`
  /// interleaved (c = 1, 3 or 4; a leading batch dimension of 1 is allowed).
  std::optional<PixelFormat> dst_format;
};

/// How the processor is built.
struct ImageProcessorOptions {
  /// Worker threads of the CPU backend; 0 = one per hardware thread.
  unsigned threads = 0;
  /// The backend to run on. Empty: GL when a hardware GL driver works, else the CPU (a software
  /// rasteriser such as llvmpipe is slower than the CPU backend, so auto-selection skips it;
  /// `backend_notes()` says why GL was not chosen); the environment variable `MEMHAL_BACKEND`
  /// (an `ImageBackend` wire string, `cpu` or `gl`, as `from_string` reads it), read by
  /// `create`, pins it instead. A pinned backend is never swapped: `create` fails with
  /// `Unavailable` and the reason when it cannot start.
  std::optional<ImageBackend> backend = std::nullopt;
};

/// The GL driver behind a processor, as `memhal info` prints it.
struct GlDriverInfo {
  std::string platform;  ///< EGL platform the display was opened on: surfaceless, device or default
  std::string egl_version;
  std::string vendor;
  std::string renderer;
  std::string version;
  std::string glsl_version;
  int max_texture_size = 0;
  bool software = false;        ///< a software rasteriser (llvmpipe, softpipe, swrast)
  bool dma_buf_import = false;  ///< EGL_EXT_image_dma_buf_import: DmaBuf frames are sampled in place
  /// Filled by `ImageProcessor::probe_gl` (what `memhal info` shows), which tries them for real
  /// on a DMA-BUF (a memfd where this machine allocates none): a buffer imported and sampled
  /// gives back its bytes; a buffer imported as a render target holds what GL drew into it.
  /// `*_why` says why not ("eglCreateImageKHR ... failed: EGL_BAD_ALLOC"); empty when it works
  /// or when it was not probed (a processor's `gl_driver()`).
  bool dma_buf_import_works = false;
  std::string dma_buf_import_why;
  bool dma_buf_render_works = false;
  std::string dma_buf_render_why;
  /// The EGL and GL extensions memhal uses that the driver advertises.
  std::vector<std::string> extensions;
};

/// What a processor did: which backend served how many conversions, and why any fell back.
struct ImageProcessorStats {
  uint64_t gl_calls = 0;      ///< conversions the GL backend ran
  uint64_t cpu_calls = 0;     ///< conversions the CPU backend ran (fallbacks included)
  uint64_t fallbacks = 0;     ///< conversions a GL processor handed to the CPU backend
  std::string last_fallback;  ///< why the latest fallback happened ("gl: ...")
  /// EGL images the GL backend imported from DmaBuf (and memfd-backed Shm) sources: one per
  /// plane, or one per frame where the driver takes a multi-plane YUV frame whole; a cached
  /// buffer is imported once.
  uint64_t dma_buf_imports = 0;
  /// Why the GL backend uploads DmaBuf sources instead of importing them (no
  /// EGL_EXT_image_dma_buf_import, or the EGL error of a refused import), or imports a YUV
  /// frame plane by plane (the EGL error of the whole-frame import); empty otherwise.
  std::string dma_buf_import_note;
  /// Conversions the GL backend rendered straight into a DmaBuf (or memfd-backed Shm)
  /// destination, imported as an EGLImage render target (DRM_FORMAT_ABGR8888, or R8 for 8-bit
  /// rows of no whole 4 bytes), instead of reading the output back into it.
  uint64_t dma_buf_renders = 0;
  /// Why the latest DmaBuf or Shm destination was read back instead (no
  /// EGL_EXT_image_dma_buf_import, the driver's refusal, remembered per driver, or a plane
  /// layout those formats cannot describe); empty when none was.
  std::string dma_buf_render_note;
};

class MEMHAL_EXPORT ImageProcessor {
 public:
  /// A processor with its thread pool started. `InvalidArgument` for an absurd thread count
  /// (above 256), `Unavailable` when threads cannot be started.
  static Result<ImageProcessor> create(const ImageProcessorOptions& options = {});

  ImageProcessor(ImageProcessor&&) noexcept;
  ImageProcessor& operator=(ImageProcessor&&) noexcept;
  ~ImageProcessor();

  /// Writes `src`, converted per `options`, into `dst` (its pixel format and dtype say what to
  /// produce). Both must be host-mappable, or Pbo images of this processor. On a GL processor
  /// a conversion GL cannot do (see `stats().last_fallback`) runs on the CPU backend. After the first call of a given
  /// geometry, calls allocate nothing. Calls on one processor are serialised; use one processor per thread for parallel
  /// pipelines. Errors (nothing is written to `dst`): `InvalidArgument` for mismatched or odd sizes, a crop outside the
  /// source, a batch dst; `NotImplemented` for a format pair or dtype this backend does not convert (the message names
  /// it); `NotHostAddressable` for memory the CPU cannot map (Cuda).
  Result<void> convert(const Tensor& src, Tensor& dst, const ConvertOptions& options = {});

  /// Fills a batch from `srcs.size()` frames in one call (multi-camera models): frame i, of any
  /// size and format, is converted as `convert` would into image i of `dst`, a plain `{N, C, H,
  /// W}` (planar) or `{N, H, W, C}` (interleaved) tensor with N = `srcs.size()`; the format is
  /// inferred per image as for `convert` (or `options.dst_format`). Plans are cached per
  /// geometry, so frames of a few distinct sizes cost no re-planning from call to call. Every
  /// frame is checked before any is written: errors as `convert`, naming the frame, and
  /// `InvalidArgument` for an empty `srcs` or a destination that is no such batch.
  Result<void> convert_batch(std::span<const Tensor> srcs, Tensor& dst, const ConvertOptions& options = {});

  /// Worker threads in use.
  unsigned threads() const noexcept;

  /// The backend conversions run on (a GL processor hands pairs GL cannot do to the CPU).
  ImageBackend backend() const noexcept;
  /// Why auto-selection did not choose GL ("GL renderer llvmpipe is a software rasteriser");
  /// empty when it did, or when the backend was pinned.
  const std::string& backend_notes() const noexcept;
  /// The backend that ran the latest successful conversion; empty before the first.
  std::optional<ImageBackend> last_backend() const;
  /// Counters since creation. Thread-safe.
  ImageProcessorStats stats() const;
  /// The GL driver of a GL processor; nullptr for a CPU one.
  const GlDriverInfo* gl_driver() const noexcept;
  /// Opens a GL context the way a GL processor would, reads the driver and closes it: what
  /// `memhal info` shows. `Unavailable` with the EGL call that refused when there is none.
  static Result<GlDriverInfo> probe_gl();

  /// Allocates an image where this processor works best. Empty `memory` auto-selects: a CPU
  /// processor DmaBuf, then Mem; a GL processor DmaBuf when its driver imports DMA-BUFs, then
  /// Pbo, then Mem (the tensor's `allocation_notes()` say what was skipped); with
  /// `MEMHAL_FORCE_MEM` set, Mem on either backend, as `Tensor::create`. A pinned `memory`
  /// never falls back; `Pbo` needs a GL processor (`Unavailable` otherwise). Pbo images belong
  /// to this processor's GL context: they map for the CPU from any thread, convert without a
  /// CPU copy on this processor, and answer `Unavailable` ("GL context gone") once it is
  /// destroyed.
  Result<Tensor> create_image(int64_t width, int64_t height, PixelFormat format, DType dtype = DType::U8,
                              std::optional<MemoryKind> memory = std::nullopt) const;

 private:
  struct Impl;
  explicit ImageProcessor(std::unique_ptr<Impl> impl);
  struct Checked;  // a conversion checked completely, nothing written yet
  static Result<Checked> check(const Tensor& src, const Tensor& dst, const ConvertOptions& options);
  // Runs a conversion `check` accepted; the caller holds the lock.
  Result<void> convert_checked(const Tensor& src, Tensor& dst, const Checked& c, const ConvertOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memhal
