// Image files for `memhal convert`: PNG and JPEG decoding (libpng, libjpeg-turbo), raw YUV
// frames, and PNG / .npy writing. The decoders take untrusted bytes and are fuzzed
// (tests/fuzz/image_file_fuzz.cpp, raw_yuv_fuzz.cpp): every failure is a Result, never a
// crash or an exit. Inputs are read with a bound: never more than the format can need, so a
// device (/dev/zero), a pipe or a directory is an error message, not an abort.
//
// What the decoders accept: at most 16384 pixels a side and 64 Mpixel; a JPEG whose header
// claims more pixels than its bytes can hold (Huffman coding spends at least one bit per 8x8
// block: 512 pixels a byte), or a PNG claiming more than deflate's 1032:1 can expand into, is
// `Corrupt` before anything is allocated; libjpeg's warnings (premature end of data, corrupt
// entropy data) are errors, not grey pixels.
#pragma once

#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/tensor.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memhal::cli {

/// The largest PNG or JPEG file `read_image` reads (256 MiB).
inline constexpr std::size_t kMaxImageFileBytes = std::size_t{256} << 20;

/// Decodes a PNG or JPEG (told apart by their signatures) into an Rgb, Rgba or Grey image.
/// `Corrupt` for a damaged, truncated or unsupported file or a header claiming more pixels than
/// the file can hold, `InvalidArgument` for a size above 16384 a side or 64 Mpixel.
Result<Tensor> decode_image(std::span<const uint8_t> bytes);

/// A raw frame of `format` (packed rows, planes one after another, as ffmpeg's rawvideo
/// writes them) into an image. `Corrupt` when `bytes` is not exactly one frame.
Result<Tensor> decode_raw(std::span<const uint8_t> bytes, int64_t width, int64_t height, PixelFormat format);

/// Bytes of one raw frame of `format`, packed (as `decode_raw` takes it). `InvalidArgument` for
/// a side outside 1..16384 or a size the format cannot have (odd for subsampled chroma).
Result<int64_t> raw_frame_bytes(int64_t width, int64_t height, PixelFormat format);

/// The whole file at `path`, which holds at most `max_bytes` (`what` the file should be names
/// the limit in the error). `Io` when it cannot be opened or read; `InvalidArgument` for a
/// directory or more bytes than `max_bytes` (a device or pipe is read no further than that).
Result<std::vector<uint8_t>> read_file(const std::string& path, std::size_t max_bytes, std::string_view what);

/// Reads and decodes the PNG or JPEG file at `path` (at most `kMaxImageFileBytes`; anything
/// else is refused after its first 8 bytes). Errors as `read_file` and `decode_image`.
Result<Tensor> read_image(const std::string& path);

/// Reads the raw frame at `path`: exactly `raw_frame_bytes` bytes, read no further than one
/// byte past them. Errors as `read_file` and `decode_raw`.
Result<Tensor> read_raw(const std::string& path, int64_t width, int64_t height, PixelFormat format);

/// Writes an 8-bit Rgb, Rgba or Grey image as PNG. `Io` on failure.
Result<void> write_png(const Tensor& image, const std::string& path);

/// Writes any image or tensor as a numpy .npy file (dense, shape of the tensor; multi-plane
/// images are written as their planes' bytes, 1-D). `Io` on failure.
Result<void> write_npy(const Tensor& tensor, const std::string& path);

/// Writes the raw bytes of an image, planes packed one after another. `Io` on failure.
Result<void> write_raw(const Tensor& image, const std::string& path);

}  // namespace memhal::cli
