// memhal capture: frames from a V4L2 camera into a file — PNG (converted to RGB), .npy (the
// image as captured, see write_npy) or .raw (the captured planes, packed).
#include <iostream>
#include <memhal/image_processor.hpp>
#include <memhal/v4l2_camera.hpp>
#include <string>

#include "args.hpp"
#include "commands.hpp"
#include "image_io.hpp"

namespace memhal::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: memhal capture DEVICE OUT.png|OUT.npy|OUT.raw [--format F] [--size WxH] [--fps N] [--frames N]\n"
    "                      [--io auto|mmap|dmabuf-import]\n"
    "  Streams N frames (default 1) from the V4L2 capture device DEVICE (memhal info lists them)\n"
    "  and writes the last: .png as RGB, .npy and .raw as captured (planes packed). --format is a\n"
    "  memhal pixel format (nv12, yuyv, ...); without it and --size the device keeps its own.\n";

int usage_error(const std::string& problem) {
  std::cerr << "memhal capture: " << problem << "\n" << kUsage;
  return 2;
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

int run_capture(std::span<const std::string_view> args) {
  auto split = split_arguments(args, {"-h", "--help"});
  if (!split) return usage_error(split.error());
  std::vector<std::string> positional;
  CameraOptions options;
  int64_t frames = 1;
  for (const auto& [name, value] : *split) {
    if (name == "-h" || name == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (name.empty()) {
      positional.emplace_back(value);
    } else if (name == "--format") {
      auto format = parse_vocabulary<PixelFormat>(value);
      if (!format) return usage_error(about(name, format.error()));
      options.format = *format;
    } else if (name == "--size") {
      auto size = parse_size(value, 16384);
      if (!size) return usage_error(about(name, size.error()));
      options.width = static_cast<uint32_t>(size->first);
      options.height = static_cast<uint32_t>(size->second);
    } else if (name == "--fps") {
      auto fps = parse_real(value, 0.001, 10000);
      if (!fps) return usage_error(about(name, fps.error()));
      options.fps = *fps;
    } else if (name == "--frames") {
      auto count = parse_integer(value, 1, 1'000'000);
      if (!count) return usage_error(about(name, count.error()));
      frames = *count;
    } else if (name == "--io") {
      auto io = camera_io_from_string(value);
      if (!io) return usage_error("--io: unknown io '" + std::string(value) + "' (expects auto|mmap|dmabuf-import)");
      options.io = *io;
    } else {
      return usage_error("unknown option '" + std::string(name) + "'");
    }
  }
  if (positional.size() != 2) return usage_error("expects DEVICE and OUT");
  const std::string& device = positional[0];
  const std::string& out = positional[1];
  if (!ends_with(out, ".png") && !ends_with(out, ".npy") && !ends_with(out, ".raw")) {
    return usage_error("OUT must end in .png, .npy or .raw: '" + out + "'");
  }
  const auto fail = [](const Error& error) {
    std::cerr << "memhal capture: " << error.message() << "\n";
    return 1;
  };
  auto camera = V4l2Camera::open(device, options);
  if (!camera) return fail(camera.error());
  std::optional<Frame> last;
  for (int64_t i = 0; i < frames; ++i) {
    last.reset();  // the previous buffer goes back to the driver first
    auto frame = camera->next_frame(std::chrono::seconds(5));
    if (!frame) return fail(frame.error());
    last = std::move(*frame);
  }
  auto image = last->payload.to_tensor();
  if (!image) return fail(image.error());
  const auto& config = camera->config();
  Result<void> written;
  if (ends_with(out, ".png")) {
    auto processor = ImageProcessor::create();
    if (!processor) return fail(processor.error());
    auto rgb = Tensor::image(config.width, config.height, PixelFormat::Rgb, MemoryKind::Mem);
    if (!rgb) return fail(rgb.error());
    if (auto converted = processor->convert(*image, *rgb); !converted) return fail(converted.error());
    written = write_png(*rgb, out);
  } else {
    written = ends_with(out, ".npy") ? write_npy(*image, out) : write_raw(*image, out);
  }
  if (!written) return fail(written.error());
  const auto stats = camera->stats();
  // On stderr: OUT may be stdout (a pipe, /proc/self/fd/1).
  std::cerr << "memhal capture: " << frames << " frame(s) from " << device << ": " << fourcc_to_string(config.fourcc)
            << " " << config.width << "x" << config.height << " at " << config.fps
            << " fps, io=" << to_string(config.io) << (config.io_notes.empty() ? "" : " (" + config.io_notes + ")")
            << ", sequence=" << last->sequence << " dropped_frames=" << stats.dropped << "; wrote " << out << "\n";
  return 0;
}

}  // namespace memhal::cli
