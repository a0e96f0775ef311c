// Image files for `memhal convert`: PNG and JPEG decoding (libpng, libjpeg-turbo), raw YUV
// frames, and PNG / .npy writing. The decoders take untrusted bytes and are fuzzed
// (tests/fuzz/image_io_fuzz.cpp): every failure is a Result, never a crash or an exit.
#pragma once

#include <cstdint>
#include <memhal/error.hpp>
#include <memhal/tensor.hpp>
#include <span>
#include <string>
#include <vector>

namespace memhal::cli {

/// Decodes a PNG or JPEG (told apart by their signatures) into an Rgb, Rgba or Grey image.
/// `Corrupt` for a damaged or unsupported file, `InvalidArgument` for a size above 16384.
Result<Tensor> decode_image(std::span<const uint8_t> bytes);

/// A raw frame of `format` (packed rows, planes one after another, as ffmpeg's rawvideo
/// writes them) into an image. `Corrupt` when `bytes` is not exactly one frame.
Result<Tensor> decode_raw(std::span<const uint8_t> bytes, int64_t width, int64_t height, PixelFormat format);

/// The whole file at `path`. `Io` when it cannot be read.
Result<std::vector<uint8_t>> read_file(const std::string& path);

/// Writes an 8-bit Rgb, Rgba or Grey image as PNG. `Io` on failure.
Result<void> write_png(const Tensor& image, const std::string& path);

/// Writes any image or tensor as a numpy .npy file (dense, shape of the tensor; multi-plane
/// images are written as their planes' bytes, 1-D). `Io` on failure.
Result<void> write_npy(const Tensor& tensor, const std::string& path);

/// Writes the raw bytes of an image, planes packed one after another. `Io` on failure.
Result<void> write_raw(const Tensor& image, const std::string& path);

}  // namespace memhal::cli
