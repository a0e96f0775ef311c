// memhal convert: one ImageProcessor call on an image file or a raw YUV frame, written as PNG
// (to look at), .npy (for numpy) or raw bytes. How a user checks their preprocessing by eye.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "image_io.hpp"

namespace memhal::cli {
namespace {

constexpr const char* kUsage =
    "usage: memhal convert INPUT OUTPUT [options]\n"
    "  INPUT   .png or .jpg file, or a raw frame with --size WxH --format FORMAT\n"
    "  OUTPUT  .png (8-bit rgb, rgba or grey), .npy (any format and dtype) or .yuv/.raw bytes\n"
    "options:\n"
    "  --size WxH            size of a raw input frame\n"
    "  --format FORMAT       pixel format of a raw input frame (nv12, yuyv, i420, ...)\n"
    "  --to FORMAT           output pixel format (default rgb; planar_rgb for NCHW)\n"
    "  --dtype DTYPE         output dtype: u8 (default), i8, f16, f32\n"
    "  --out-size WxH        output size (default: the oriented crop's size)\n"
    "  --letterbox           keep the aspect ratio and pad (default: stretch)\n"
    "  --pad R,G,B[,A]       letterbox colour (default 114,114,114,255)\n"
    "  --interp MODE         bilinear (default), nearest, area\n"
    "  --crop X,Y,W,H        source rectangle\n"
    "  --flip h|v|both       mirror the source\n"
    "  --rotate 90|180|270   rotate clockwise after the flip\n"
    "  --matrix bt601|bt709  YUV matrix (default bt601)\n"
    "  --range limited|full  YUV range (default limited)\n"
    "  --mean A,B,C --std A,B,C  normalisation of float outputs: (x/255 - mean)/std\n"
    "  --swap-rb             exchange R and B in the output\n"
    "  --threads N           worker threads (default: all)\n"
    "  --backend cpu|gl      image backend (default: GL on a hardware GPU, else the CPU)\n";

bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

template <class T>
bool parse_list(std::string_view text, std::vector<T>& out, std::size_t min_count, std::size_t max_count) {
  out.clear();
  while (!text.empty()) {
    const std::size_t comma = text.find_first_of(",x");
    const std::string item(text.substr(0, comma));
    T value{};
    try {
      std::size_t used = 0;
      if constexpr (std::is_floating_point_v<T>) {
        value = static_cast<T>(std::stod(item, &used));
      } else {
        value = static_cast<T>(std::stoll(item, &used));
      }
      if (used != item.size()) return false;
    } catch (...) {
      return false;
    }
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out.size() >= min_count && out.size() <= max_count;
}

struct Args {
  std::string input, output;
  std::optional<std::pair<int64_t, int64_t>> size, out_size;
  std::optional<PixelFormat> format;
  PixelFormat to = PixelFormat::Rgb;
  DType dtype = DType::U8;
  unsigned threads = 0;
  std::optional<ImageBackend> backend;
  ConvertOptions options;
};

// Parses one option with its value; returns an error message, empty on success.
std::string parse_option(std::string_view name, std::string_view value, Args& a) {
  std::vector<int64_t> ints;
  std::vector<float> floats;
  auto& o = a.options;
  if (name == "--size" || name == "--out-size") {
    if (!parse_list(value, ints, 2, 2)) return "expects WxH";
    (name == "--size" ? a.size : a.out_size) = std::pair{ints[0], ints[1]};
  } else if (name == "--format" || name == "--to") {
    auto f = from_string<PixelFormat>(value);
    if (!f) return "unknown pixel format '" + std::string(value) + "'";
    if (name == "--format") {
      a.format = *f;
    } else {
      a.to = *f;
    }
  } else if (name == "--dtype") {
    auto d = from_string<DType>(value);
    if (!d) return "unknown dtype '" + std::string(value) + "'";
    a.dtype = *d;
  } else if (name == "--pad") {
    if (!parse_list(value, ints, 3, 4)) return "expects R,G,B[,A]";
    for (std::size_t i = 0; i < ints.size(); ++i) o.pad[i] = static_cast<uint8_t>(ints[i]);
  } else if (name == "--interp") {
    if (value == "bilinear")
      o.interpolation = Interpolation::Bilinear;
    else if (value == "nearest")
      o.interpolation = Interpolation::Nearest;
    else if (value == "area")
      o.interpolation = Interpolation::Area;
    else
      return "expects bilinear, nearest or area";
  } else if (name == "--crop") {
    if (!parse_list(value, ints, 4, 4)) return "expects X,Y,W,H";
    o.crop = Rect{ints[0], ints[1], ints[2], ints[3]};
  } else if (name == "--flip") {
    if (value == "h")
      o.flip = Flip::Horizontal;
    else if (value == "v")
      o.flip = Flip::Vertical;
    else if (value == "both")
      o.flip = Flip::Both;
    else
      return "expects h, v or both";
  } else if (name == "--rotate") {
    if (value == "90")
      o.rotation = Rotation::Cw90;
    else if (value == "180")
      o.rotation = Rotation::Cw180;
    else if (value == "270")
      o.rotation = Rotation::Cw270;
    else if (value == "0")
      o.rotation = Rotation::None;
    else
      return "expects 90, 180 or 270";
  } else if (name == "--matrix") {
    if (value == "bt601")
      o.matrix = ColorMatrix::Bt601;
    else if (value == "bt709")
      o.matrix = ColorMatrix::Bt709;
    else
      return "expects bt601 or bt709";
  } else if (name == "--range") {
    if (value == "limited")
      o.range = ColorRange::Limited;
    else if (value == "full")
      o.range = ColorRange::Full;
    else
      return "expects limited or full";
  } else if (name == "--mean" || name == "--std") {
    if (!parse_list(value, floats, 1, 4)) return "expects up to 4 comma-separated numbers";
    auto& target = name == "--mean" ? o.mean : o.std;
    for (std::size_t i = 0; i < 4; ++i) target[i] = floats[std::min(i, floats.size() - 1)];
  } else if (name == "--threads") {
    if (!parse_list(value, ints, 1, 1) || ints[0] < 0) return "expects a count";
    a.threads = static_cast<unsigned>(ints[0]);
  } else if (name == "--backend") {
    if (value == "cpu")
      a.backend = ImageBackend::Cpu;
    else if (value == "gl")
      a.backend = ImageBackend::Gl;
    else
      return "expects cpu or gl";
  } else {
    return "unknown option";
  }
  return {};
}

int usage_error(const std::string& message) {
  std::cerr << "memhal convert: " << message << "\n" << kUsage;
  return 2;
}

int failure(const Error& error) {
  std::cerr << "memhal convert: " << error.to_string() << "\n";
  return 1;
}

}  // namespace

int run_convert(std::span<const std::string_view> args) {
  Args a;
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--letterbox") {
      a.options.resize = ResizeMode::Letterbox;
    } else if (arg == "--swap-rb") {
      a.options.swap_rb = true;
    } else if (arg.substr(0, 2) == "--") {
      if (i + 1 >= args.size()) return usage_error(std::string(arg) + " needs a value");
      const std::string problem = parse_option(arg, args[++i], a);
      if (!problem.empty()) return usage_error(std::string(arg) + ": " + problem);
    } else {
      positional.emplace_back(arg);
    }
  }
  if (positional.size() != 2) return usage_error("expects INPUT and OUTPUT");
  if (a.size.has_value() != a.format.has_value()) return usage_error("a raw input needs both --size and --format");

  auto bytes = read_file(positional[0]);
  if (!bytes) return failure(bytes.error());
  auto src = a.size ? decode_raw(*bytes, a.size->first, a.size->second, *a.format) : decode_image(*bytes);
  if (!src) return failure(src.error());

  const auto& o = a.options;
  const bool rotated = o.rotation == Rotation::Cw90 || o.rotation == Rotation::Cw270;
  const bool planar = *src->pixel_format() == PixelFormat::PlanarRgb;
  const int64_t sw = src->layout().is_multi_plane() ? src->shape()[1] : src->shape()[planar ? 2 : 1];
  const int64_t sh = src->shape()[planar ? 1 : 0];
  const int64_t cw = o.crop ? o.crop->width : sw, ch = o.crop ? o.crop->height : sh;
  const auto [dw, dh] = a.out_size.value_or(rotated ? std::pair{ch, cw} : std::pair{cw, ch});

  auto processor = ImageProcessor::create({.threads = a.threads, .backend = a.backend});
  if (!processor) return failure(processor.error());
  auto dst = processor->create_image(dw, dh, a.to, a.dtype);
  if (!dst) return failure(dst.error());
  if (auto done = processor->convert(*src, *dst, o); !done) return failure(done.error());

  const std::string& out = positional[1];
  Result<void> written = ends_with(out, ".png")   ? write_png(*dst, out)
                         : ends_with(out, ".npy") ? write_npy(*dst, out)
                                                  : write_raw(*dst, out);
  if (!written) return failure(written.error());
  const ImageProcessorStats stats = processor->stats();
  std::cout << "wrote " << out << ": " << to_string(a.to) << " " << to_string(a.dtype) << " " << dw << "x" << dh << " ("
            << to_string(processor->last_backend().value_or(processor->backend())) << " backend"
            << (stats.fallbacks > 0 ? "; " + stats.last_fallback : "") << ")\n";
  return 0;
}

}  // namespace memhal::cli
