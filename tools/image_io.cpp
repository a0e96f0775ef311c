#include "image_io.hpp"

#include <jpeglib.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memhal/pixel_format.hpp>
#include <sstream>

namespace memhal::cli {
namespace {

constexpr int64_t kMaxSide = 16384;
constexpr int64_t kMaxPixels = int64_t{1} << 26;  // 64 Mpixel: a decoder's memory stays bounded

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
  if (image.width > kMaxSide || image.height > kMaxSide || int64_t{image.width} * image.height > kMaxPixels) {
    png_image_free(&image);
    return fail(ErrorCode::InvalidArgument, "PNG of " + std::to_string(image.width) + "x" +
                                                std::to_string(image.height) + " is larger than 16384 a side");
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

void jpeg_quiet(j_common_ptr, int) {}

// Runs the decoder; libjpeg's errors land back here by longjmp. Everything the jump could
// leave half-updated lives in the caller's frame and is reached through references.
bool run_jpeg(jpeg_decompress_struct& info, JpegError& error, std::span<const uint8_t> bytes,
              std::vector<uint8_t>& pixels) {
  if (setjmp(error.jump)) return false;
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  info.out_color_space = info.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  if (int64_t{info.image_width} * info.image_height > kMaxPixels || info.image_width > kMaxSide ||
      info.image_height > kMaxSide) {
    std::snprintf(error.message, sizeof error.message, "%ux%u is larger than memhal convert reads", info.image_width,
                  info.image_height);
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
  error.manager.emit_message = jpeg_quiet;
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

}  // namespace

Result<Tensor> decode_image(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) return decode_png(bytes);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return decode_jpeg(bytes);
  return fail(ErrorCode::Corrupt, "neither a PNG nor a JPEG file (for raw YUV pass --size and --format)");
}

Result<Tensor> decode_raw(std::span<const uint8_t> bytes, int64_t width, int64_t height, PixelFormat format) {
  if (width <= 0 || height <= 0 || width > kMaxSide || height > kMaxSide) {
    return fail(ErrorCode::InvalidArgument,
                "raw frame size " + std::to_string(width) + "x" + std::to_string(height) + " is outside 1..16384");
  }
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

Result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::Io, "cannot open " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return fail(ErrorCode::Io, "reading " + path + " failed");
  return bytes;
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
