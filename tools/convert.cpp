// memhal convert: one ImageProcessor call on an image file or a raw YUV frame, written as PNG
// (to look at), .npy (for numpy) or raw bytes. How a user checks their preprocessing by eye.
#include <cstdio>
#include <iostream>
#include <memhal/image_processor.hpp>
#include <memhal/pixel_format.hpp>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "image_io.hpp"

namespace memhal::cli {
namespace {

// One help line of an option whose value is a vocabulary: the wire strings from its table,
// what it does, and the aliases it also accepts (old spellings among them).
template <Vocabulary E>
std::string choice_help(std::string_view option, std::string_view what) {
  std::string line = "  " + std::string(option) + " " + spellings<E>();
  line += line.size() < 24 ? std::string(24 - line.size(), ' ') : "\n" + std::string(24, ' ');
  line += what;
  if (const std::string aliases = alias_spellings<E>(); !aliases.empty()) line += " (also: " + aliases + ")";
  return line + "\n";
}

std::string usage() {
  const ConvertOptions defaults;
  auto by_default = [](auto value) { return ", default " + std::string(to_string(value)); };
  return "usage: memhal convert INPUT OUTPUT [options]\n"
         "  INPUT   .png or .jpg file (up to 256 MiB and 16384 pixels a side), or a raw frame with\n"
         "          --size WxH --format FORMAT (exactly one frame of bytes)\n"
         "  OUTPUT  .png (8-bit rgb, rgba or grey), .npy (any format and dtype) or .yuv/.raw bytes\n"
         "options:\n"
         "  --size WxH            size of a raw input frame, sides 1..16384\n"
         "  --format FORMAT       pixel format of a raw input frame (nv12, yuyv, i420, ...)\n"
         "  --to FORMAT           output pixel format (default rgb; planar_rgb for NCHW)\n"
         "  --dtype DTYPE         output dtype: u8 (default), i8, f16, f32\n"
         "  --out-size WxH        output size (default: the oriented crop's size)\n" +
         choice_help<ResizeMode>("--resize",
                                 "letterbox keeps the aspect ratio and pads" + by_default(defaults.resize)) +
         "  --letterbox           the same as --resize letterbox\n"
         "  --pad R,G,B[,A]       letterbox colour, each 0..255 (default 114,114,114,255)\n" +
         choice_help<Interpolation>("--interp", "resampling" + by_default(defaults.interpolation)) +
         "  --crop X,Y,W,H        source rectangle\n" +
         choice_help<Flip>("--flip", "mirror the source" + by_default(defaults.flip)) +
         choice_help<Rotation>("--rotate", "rotate clockwise after the flip" + by_default(defaults.rotation)) +
         choice_help<ColorMatrix>("--matrix", "YUV matrix" + by_default(defaults.matrix)) +
         choice_help<ColorRange>("--range", "YUV range" + by_default(defaults.range)) +
         "  --mean A,B,C --std A,B,C  normalisation of float outputs: (x/255 - mean)/std\n"
         "  --swap-rb             exchange R and B in the output\n"
         "  --threads N           worker threads, 0..256 (default 0: one per hardware thread)\n" +
         choice_help<ImageBackend>("--backend", "image backend, default GL on a hardware GPU, else the CPU") +
         "Options take their value as --name VALUE or --name=VALUE; a value from a list is matched\n"
         "ignoring case. Exit status: 0 done, 1 failed (the message says why), 2 a usage error (the\n"
         "message names the argument).\n";
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// Sides of images and crops: the decoders' and the processor's bound.
constexpr int64_t kMaxSide = 16384;

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

// Sets `target` from `parsed`, or hands its error on.
template <class T, class U>
Parsed<void> assign(T& target, Parsed<U> parsed) {
  if (!parsed) return tl::unexpected(parsed.error());
  target = std::move(*parsed);
  return {};
}

// Parses one option with its value into `a`.
Parsed<void> parse_option(std::string_view name, std::string_view value, Args& a) {
  auto& o = a.options;
  if (name == "--size") return assign(a.size, parse_size(value, kMaxSide));
  if (name == "--out-size") return assign(a.out_size, parse_size(value, kMaxSide));
  if (name == "--format") return assign(a.format, parse_vocabulary<PixelFormat>(value));
  if (name == "--to") return assign(a.to, parse_vocabulary<PixelFormat>(value));
  if (name == "--dtype") return assign(a.dtype, parse_vocabulary<DType>(value));
  if (name == "--resize") return assign(o.resize, parse_vocabulary<ResizeMode>(value));
  if (name == "--interp") return assign(o.interpolation, parse_vocabulary<Interpolation>(value));
  if (name == "--flip") return assign(o.flip, parse_vocabulary<Flip>(value));
  if (name == "--rotate") return assign(o.rotation, parse_vocabulary<Rotation>(value));
  if (name == "--matrix") return assign(o.matrix, parse_vocabulary<ColorMatrix>(value));
  if (name == "--range") return assign(o.range, parse_vocabulary<ColorRange>(value));
  if (name == "--backend") return assign(a.backend, parse_vocabulary<ImageBackend>(value));
  if (name == "--pad") {
    auto pad = parse_integers(value, ',', 3, 4, 0, 255);
    if (!pad) return tl::unexpected(pad.error());
    for (std::size_t i = 0; i < pad->size(); ++i) o.pad[i] = static_cast<uint8_t>((*pad)[i]);
    return {};
  }
  if (name == "--crop") {
    auto crop = parse_integers(value, ',', 4, 4, 0, kMaxSide);
    if (!crop) return tl::unexpected(crop.error());
    o.crop = Rect{(*crop)[0], (*crop)[1], (*crop)[2], (*crop)[3]};
    return {};
  }
  if (name == "--mean" || name == "--std") {
    // A std of 0 would divide by zero; below 1e-6 the output is not a number a model can use.
    auto values = name == "--mean" ? parse_reals(value, 1, 4, -1e6, 1e6) : parse_reals(value, 1, 4, 1e-6, 1e6);
    if (!values) return tl::unexpected(values.error());
    auto& target = name == "--mean" ? o.mean : o.std;
    for (std::size_t i = 0; i < 4; ++i) target[i] = static_cast<float>((*values)[std::min(i, values->size() - 1)]);
    return {};
  }
  if (name == "--threads") {
    // ImageProcessor takes up to 256 threads; 0 means one per hardware thread.
    auto threads = parse_integer(value, 0, 256);
    if (!threads) return tl::unexpected(threads.error());
    a.threads = static_cast<unsigned>(*threads);
    return {};
  }
  return tl::unexpected(std::string("unknown option"));
}

int usage_error(const UsageError& message) {
  std::cerr << "memhal convert: " << message << "\n" << usage();
  return 2;
}

int failure(const Error& error) {
  std::cerr << "memhal convert: " << error.to_string() << "\n";
  return 1;
}

// Width and height of an image tensor. The pixel format says how its shape reads: multi-plane
// YUV is the grid {h, w}; a format whose channels are planes of their own (planar_rgb,
// planar_rgba) is {c, h, w}; an interleaved one is {h, w, c}.
std::pair<int64_t, int64_t> image_size(const Tensor& image) {
  const auto shape = image.shape();
  if (image.layout().is_multi_plane()) return {shape[1], shape[0]};
  if (plane_count(*image.pixel_format()) > 1) return {shape[2], shape[1]};
  return {shape[1], shape[0]};
}

int convert(const Args& a, const std::string& input, const std::string& out) {
  auto src = a.size ? read_raw(input, a.size->first, a.size->second, *a.format) : read_image(input);
  if (!src) return failure(src.error());

  const auto& o = a.options;
  const bool rotated = o.rotation == Rotation::Cw90 || o.rotation == Rotation::Cw270;
  const auto [sw, sh] = image_size(*src);
  const int64_t cw = o.crop ? o.crop->width : sw, ch = o.crop ? o.crop->height : sh;
  const auto [dw, dh] = a.out_size.value_or(rotated ? std::pair{ch, cw} : std::pair{cw, ch});

  auto processor = ImageProcessor::create({.threads = a.threads, .backend = a.backend});
  if (!processor) return failure(processor.error());
  auto dst = processor->create_image(dw, dh, a.to, a.dtype);
  if (!dst) return failure(dst.error());
  if (auto done = processor->convert(*src, *dst, o); !done) return failure(done.error());

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

}  // namespace

int run_convert(std::span<const std::string_view> args) {
  auto arguments = split_arguments(args, {"-h", "--help", "--letterbox", "--swap-rb"});
  if (!arguments) return usage_error(arguments.error());
  Args a;
  std::vector<std::string> positional;
  for (const Argument& arg : *arguments) {
    if (arg.name.empty()) {
      positional.emplace_back(arg.value);
    } else if (arg.name == "-h" || arg.name == "--help") {
      std::cout << usage();
      return 0;
    } else if (arg.name == "--letterbox") {
      a.options.resize = ResizeMode::Letterbox;
    } else if (arg.name == "--swap-rb") {
      a.options.swap_rb = true;
    } else if (auto parsed = parse_option(arg.name, arg.value, a); !parsed) {
      return usage_error(about(arg.name, parsed.error()));
    }
  }
  if (positional.size() != 2) return usage_error("expects INPUT and OUTPUT");
  if (a.size.has_value() != a.format.has_value()) return usage_error("a raw input needs both --size and --format");
  return convert(a, positional[0], positional[1]);
}

}  // namespace memhal::cli
