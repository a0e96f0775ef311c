#include "image_io.hpp"

#include <fcntl.h>
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memhal/pixel_format.hpp>
#include <memhal/unique_fd.hpp>
#include <optional>
#include <sstream>

namespace memhal::cli {
namespace {

constexpr int64_t kMaxSide = 16384;
constexpr int64_t kMaxPixels = int64_t{1} << 26;  // 64 Mpixel: a decoder's memory stays bounded
// A Huffman-coded JPEG spends at least one bit on each 8x8 block of its full-resolution
// component (the DC symbol; progressive DC scans too), so a file of n bytes holds at most
// 8n blocks = 512n pixels. A header claiming more is a lie that would cost memory.
constexpr int64_t kJpegMaxPixelsPerByte = 512;
// Deflate expands at most 1032 times, and a PNG row costs a filter byte and at least one bit
// a pixel before compression.
constexpr int64_t kDeflateMaxRatio = 1032;

std::string size_text(int64_t width, int64_t height) {
  return std::to_string(width) + "x" + std::to_string(height);
}

tl::unexpected<Error> fail(ErrorCode code, const std::string& message) {
  return memhal::unexpected(Error(code, message));
}

// Copies packed rows into an image tensor (whose rows may be padded).
void store_rows(const TensorMap& map, const uint8_t* packed, int64_t rows, int64_t row_bytes) {
  for (int64_t y = 0; y < rows; ++y) std::memcpy(map.data() + y * map.strides()[0], packed + y * row_bytes, row_bytes);
}

Result<Tensor> decode_png(std::span<const uint8_t> bytes) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    return fail(ErrorCode::Corrupt, std::string("PNG header: ") + image.message);
  }
  const int64_t width = image.width, height = image.height;
  if (width > kMaxSide || height > kMaxSide || width * height > kMaxPixels) {
    png_image_free(&image);
    return fail(ErrorCode::InvalidArgument, "PNG of " + size_text(width, height) +
                                                " is larger than memhal convert reads (16384 a side, 64 Mpixel)");
  }
  const int64_t least_data = (width * height + 7) / 8 + height;
  if (least_data > kDeflateMaxRatio * static_cast<int64_t>(bytes.size())) {
    png_image_free(&image);
    return fail(ErrorCode::Corrupt, "PNG header claims " + size_text(width, height) + ", which needs at least " +
                                        std::to_string(least_data) + " bytes of pixel data; " +
                                        std::to_string(bytes.size()) + " bytes of file cannot hold them");
  }
  const bool alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  const bool colour = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  image.format = alpha ? PNG_FORMAT_RGBA : colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  const PixelFormat format = alpha ? PixelFormat::Rgba : colour ? PixelFormat::Rgb : PixelFormat::Grey;
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
    return fail(ErrorCode::Corrupt, std::string("PNG data: ") + image.message);
  }
  MEMHAL_ASSIGN_OR_RETURN(Tensor t, Tensor::image(image.width, image.height, format));
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, t.map(CpuAccess::Write));
  store_rows(map, pixels.data(), image.height, PNG_IMAGE_ROW_STRIDE(image));
  return t;
}

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// libjpeg's default handler calls exit(); jump back to the decoder and return an error instead.
void jpeg_error_exit(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

// Level -1 is a warning about the data (premature end, corrupt entropy data): libjpeg would
// go on and fill the rest with grey. A damaged file is an error here; trace levels are quiet.
void jpeg_warning_is_error(j_common_ptr info, int level) {
  if (level < 0) jpeg_error_exit(info);
}

// Runs the decoder; libjpeg's errors land back here by longjmp. Everything the jump could
// leave half-updated lives in the caller's frame and is reached through references.
bool run_jpeg(jpeg_decompress_struct& info, JpegError& error, std::span<const uint8_t> bytes,
              std::vector<uint8_t>& pixels) {
  if (setjmp(error.jump)) return false;
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  info.out_color_space = info.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  const int64_t claimed = int64_t{info.image_width} * info.image_height;
  if (claimed > kMaxPixels || info.image_width > kMaxSide || info.image_height > kMaxSide) {
    std::snprintf(error.message, sizeof error.message,
                  "%ux%u is larger than memhal convert reads (16384 a side, 64 Mpixel)", info.image_width,
                  info.image_height);
    return false;
  }
  if (!info.arith_code && claimed > kJpegMaxPixelsPerByte * static_cast<int64_t>(bytes.size())) {
    std::snprintf(error.message, sizeof error.message,
                  "the header claims %ux%u, more than %zu bytes can hold (at most %lld pixels a byte)",
                  info.image_width, info.image_height, bytes.size(), static_cast<long long>(kJpegMaxPixelsPerByte));
    return false;
  }
  jpeg_start_decompress(&info);
  const std::size_t row_bytes = std::size_t{info.output_width} * info.output_components;
  pixels.resize(row_bytes * info.output_height);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = pixels.data() + info.output_scanline * row_bytes;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  return true;
}

Result<Tensor> decode_jpeg(std::span<const uint8_t> bytes) {
  jpeg_decompress_struct info;
  JpegError error;
  std::memset(&info, 0, sizeof info);
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = jpeg_error_exit;
  error.manager.emit_message = jpeg_warning_is_error;
  std::vector<uint8_t> pixels;
  const bool ok = run_jpeg(info, error, bytes, pixels);
  const int64_t width = info.output_width, height = info.output_height;
  const int components = info.output_components;
  jpeg_destroy_decompress(&info);
  if (!ok) return fail(ErrorCode::Corrupt, std::string("JPEG: ") + error.message);
  MEMHAL_ASSIGN_OR_RETURN(Tensor t,
                          Tensor::image(width, height, components == 1 ? PixelFormat::Grey : PixelFormat::Rgb));
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, t.map(CpuAccess::Write));
  store_rows(map, pixels.data(), height, width * components);
  return t;
}

// Visits the rows of every plane of an image: fn(pointer to row, row bytes).
template <class Fn>
void for_each_row(const TensorMap& map, Fn&& fn) {
  const Layout& l = map.layout();
  if (l.is_multi_plane()) {
    for (std::size_t i = 0; i < l.planes().size(); ++i) {
      const PlaneLayout& p = l.planes()[i];
      for (int64_t y = 0; y < p.height; ++y) fn(map.plane(i) + y * p.pitch, p.row_bytes);
    }
    return;
  }
  const auto shape = l.shape();
  const auto strides = l.strides();
  const int64_t esize = static_cast<int64_t>(l.element_size());
  // Any rank: the last axis is dense in every image this tool makes; gather element-wise otherwise.
  const int64_t inner = shape.empty() ? 1 : shape.back();
  const bool dense_inner = shape.empty() || strides.back() == esize;
  int64_t outer = 1;
  for (std::size_t a = 0; a + 1 < shape.size(); ++a) outer *= shape[a];
  for (int64_t r = 0; r < outer; ++r) {
    int64_t offset = 0, rest = r;
    for (std::size_t a = shape.size() - 1; a-- > 0;) {
      offset += (rest % shape[a]) * strides[a];
      rest /= shape[a];
    }
    if (dense_inner) {
      fn(map.data() + offset, inner * esize);
    } else {
      for (int64_t i = 0; i < inner; ++i) fn(map.data() + offset + i * strides.back(), esize);
    }
  }
}

Result<void> write_bytes(const std::string& path, const std::string& header, const Tensor& tensor) {
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, tensor.map(CpuAccess::Read));
  std::ofstream out(path, std::ios::binary);
  if (!out) return fail(ErrorCode::Io, "cannot open " + path + " for writing");
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for_each_row(map, [&](const std::byte* p, int64_t n) { out.write(reinterpret_cast<const char*>(p), n); });
  if (!out.flush()) return fail(ErrorCode::Io, "writing " + path + " failed");
  return {};
}

bool is_png(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0;
}

bool is_jpeg(std::span<const uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

tl::unexpected<Error> not_an_image(const std::string& path) {
  return fail(ErrorCode::Corrupt, path + " is neither a PNG nor a JPEG file (for raw YUV pass --size and --format)");
}

tl::unexpected<Error> too_long(const std::string& path, std::size_t max_bytes, std::string_view what,
                               std::optional<int64_t> size) {
  return fail(ErrorCode::InvalidArgument, path + (size ? " has " + std::to_string(*size) + " bytes," : " holds") +
                                              " more than " + std::string(what) + " (" + std::to_string(max_bytes) +
                                              " bytes)");
}

// Opens an input file. A directory is refused here (reading one fails with EISDIR, and a
// stream would throw); a regular file longer than `max_bytes` before a byte is read.
Result<UniqueFd> open_input(const std::string& path, std::size_t max_bytes, std::string_view what) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return memhal::unexpected(Error(ErrorCode::Io, "cannot open " + path + ": " + std::strerror(err), err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return memhal::unexpected(Error(ErrorCode::Io, "cannot stat " + path + ": " + std::strerror(err), err));
  }
  if (S_ISDIR(st.st_mode)) return fail(ErrorCode::InvalidArgument, path + " is a directory, not " + std::string(what));
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
    return too_long(path, max_bytes, what, st.st_size);
  }
  return fd;
}

// Reads from `fd` until `bytes` holds `limit` bytes or the input ends. Works on pipes and
// devices too, whose size fstat does not know: `limit` is what bounds them.
Result<void> read_up_to(int fd, const std::string& path, std::vector<uint8_t>& bytes, std::size_t limit) {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  while (bytes.size() < limit) {
    const std::size_t have = bytes.size();
    const std::size_t want = std::min(kChunk, limit - have);
    bytes.resize(have + want);
    const ssize_t got = ::read(fd, bytes.data() + have, want);
    if (got < 0) {
      const int err = errno;
      bytes.resize(have);
      if (err == EINTR) continue;
      return memhal::unexpected(Error(ErrorCode::Io, "reading " + path + ": " + std::strerror(err), err));
    }
    bytes.resize(have + static_cast<std::size_t>(got));
    if (got == 0) break;
  }
  return {};
}

}  // namespace

Result<Tensor> decode_image(std::span<const uint8_t> bytes) {
  if (is_png(bytes)) return decode_png(bytes);
  if (is_jpeg(bytes)) return decode_jpeg(bytes);
  return fail(ErrorCode::Corrupt, "neither a PNG nor a JPEG file (for raw YUV pass --size and --format)");
}

Result<int64_t> raw_frame_bytes(int64_t width, int64_t height, PixelFormat format) {
  if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide) {
    return fail(ErrorCode::InvalidArgument, "raw frame size " + size_text(width, height) + " is outside 1..16384");
  }
  MEMHAL_ASSIGN_OR_RETURN(Layout layout, Layout::image(width, height, format, DType::U8, 1));
  return layout.nbytes();
}

Result<Tensor> decode_raw(std::span<const uint8_t> bytes, int64_t width, int64_t height, PixelFormat format) {
  MEMHAL_TRY(raw_frame_bytes(width, height, format));
  MEMHAL_ASSIGN_OR_RETURN(Tensor t, Tensor::image(width, height, format, std::nullopt, DType::U8, 1));
  if (static_cast<int64_t>(bytes.size()) != t.nbytes()) {
    return fail(ErrorCode::Corrupt, "a raw " + std::string(to_string(format)) + " " + std::to_string(width) + "x" +
                                        std::to_string(height) + " frame is " + std::to_string(t.nbytes()) +
                                        " bytes, the input has " + std::to_string(bytes.size()));
  }
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, t.map(CpuAccess::Write));
  std::size_t at = 0;
  for_each_row(map, [&](std::byte* p, int64_t n) {
    std::memcpy(p, bytes.data() + at, static_cast<std::size_t>(n));
    at += static_cast<std::size_t>(n);
  });
  return t;
}

Result<std::vector<uint8_t>> read_file(const std::string& path, std::size_t max_bytes, std::string_view what) {
  MEMHAL_ASSIGN_OR_RETURN(UniqueFd fd, open_input(path, max_bytes, what));
  std::vector<uint8_t> bytes;
  MEMHAL_TRY(read_up_to(fd.get(), path, bytes, max_bytes + 1));
  if (bytes.size() > max_bytes) return too_long(path, max_bytes, what, std::nullopt);
  return bytes;
}

Result<Tensor> read_image(const std::string& path) {
  static constexpr std::string_view kWhat = "a PNG or JPEG file memhal convert reads";
  MEMHAL_ASSIGN_OR_RETURN(UniqueFd fd, open_input(path, kMaxImageFileBytes, kWhat));
  // The signature first: a device or a stream of something else is refused after 8 bytes.
  std::vector<uint8_t> bytes;
  MEMHAL_TRY(read_up_to(fd.get(), path, bytes, 8));
  if (!is_png(bytes) && !is_jpeg(bytes)) return not_an_image(path);
  MEMHAL_TRY(read_up_to(fd.get(), path, bytes, kMaxImageFileBytes + 1));
  if (bytes.size() > kMaxImageFileBytes) return too_long(path, kMaxImageFileBytes, kWhat, std::nullopt);
  auto image = decode_image(bytes);
  if (!image) return memhal::unexpected(Error(image.error().code(), path + ": " + image.error().message()));
  return image;
}

Result<Tensor> read_raw(const std::string& path, int64_t width, int64_t height, PixelFormat format) {
  MEMHAL_ASSIGN_OR_RETURN(const int64_t frame_bytes, raw_frame_bytes(width, height, format));
  const std::string what = "a raw " + std::string(to_string(format)) + " " + size_text(width, height) + " frame";
  MEMHAL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path, static_cast<std::size_t>(frame_bytes), what));
  return decode_raw(bytes, width, height, format);
}

Result<void> write_png(const Tensor& image, const std::string& path) {
  const auto format = image.pixel_format();
  if (image.dtype() != DType::U8 || !format ||
      (*format != PixelFormat::Rgb && *format != PixelFormat::Rgba && *format != PixelFormat::Grey)) {
    return fail(ErrorCode::InvalidArgument, "PNG holds 8-bit rgb, rgba or grey images only");
  }
  MEMHAL_ASSIGN_OR_RETURN(TensorMap map, image.map(CpuAccess::Read));
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.shape()[1]);
  png.height = static_cast<png_uint_32>(image.shape()[0]);
  png.format = *format == PixelFormat::Rgb    ? PNG_FORMAT_RGB
               : *format == PixelFormat::Rgba ? PNG_FORMAT_RGBA
                                              : PNG_FORMAT_GRAY;
  const auto stride = static_cast<png_int_32>(map.strides()[0]);
  if (!png_image_write_to_file(&png, path.c_str(), 0, map.data(), stride, nullptr)) {
    return fail(ErrorCode::Io, "writing " + path + ": " + png.message);
  }
  return {};
}

Result<void> write_npy(const Tensor& tensor, const std::string& path) {
  static const char* kDescr[] = {"|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8", "<u2"};
  std::ostringstream shape;
  if (tensor.layout().is_multi_plane()) {
    shape << tensor.nbytes() << ",";
  } else {
    for (int64_t d : tensor.shape()) shape << d << ",";
  }
  std::string dict = "{'descr': '" + std::string(kDescr[code(tensor.dtype())]) +
                     "', 'fortran_order': False, 'shape': (" + shape.str() + "), }";
  // Version 1.0: magic, version, a 16-bit header length; header padded to 64 bytes with '\n'.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header("\x93NUMPY\x01\x00", 8);
  header.push_back(static_cast<char>(dict.size() & 0xFF));
  header.push_back(static_cast<char>(dict.size() >> 8));
  return write_bytes(path, header + dict, tensor);
}

Result<void> write_raw(const Tensor& image, const std::string& path) {
  return write_bytes(path, {}, image);
}

}  // namespace memhal::cli
