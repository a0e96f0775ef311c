// memhal info: what this process can allocate, and why not.
#include <cstdio>
#include <iostream>
#include <memhal/memhal.hpp>
#include <string>

#include "commands.hpp"
#include "json.hpp"

namespace memhal::cli {
namespace {

// The image backends: the CPU one always; GL with its driver, or why there is none.
void print_image_backends() {
  std::printf("\nimage backends:\n  %-4s yes  SIMD kernels with run-time dispatch, on a thread pool\n",
              to_string(ImageBackend::Cpu).data());
  std::printf("  %-4s ", to_string(ImageBackend::Gl).data());
  const auto gl = ImageProcessor::probe_gl();
  if (!gl) {
    std::cout << "no   " << gl.error().message() << "\n";
    return;
  }
  std::cout << "yes  " << gl->renderer << (gl->software ? " (software rasteriser: auto-selection prefers cpu)" : "")
            << "\n       vendor " << gl->vendor << "; " << gl->version << "; " << gl->glsl_version << "\n       EGL "
            << gl->egl_version << " on the " << gl->platform << " platform; max texture " << gl->max_texture_size
            << "\n       dma-buf import: "
            << (gl->dma_buf_import_works ? "yes (imported and sampled in place)"
                                         : "no (" + gl->dma_buf_import_why + "): DmaBuf frames are uploaded")
            << "\n       render to dma-buf: "
            << (gl->dma_buf_render_works ? "yes (DmaBuf destinations are rendered into in place)"
                                         : "no (" + gl->dma_buf_render_why + "): DmaBuf destinations are read back")
            << "\n       extensions:";
  for (const std::string& extension : gl->extensions) std::cout << " " << extension;
  std::cout << "\n";
}

std::string image_backends_json() {
  std::string out = "[{\"name\":" + json_string(to_string(ImageBackend::Cpu)) +
                    ",\"available\":true,\"reason\":\"\"},{\"name\":" + json_string(to_string(ImageBackend::Gl)) + ",";
  const auto gl = ImageProcessor::probe_gl();
  if (!gl) return out + "\"available\":false,\"reason\":" + json_string(gl.error().message()) + "}]";
  out += "\"available\":true,\"reason\":\"\",\"vendor\":" + json_string(gl->vendor) +
         ",\"renderer\":" + json_string(gl->renderer) + ",\"version\":" + json_string(gl->version) +
         ",\"glsl_version\":" + json_string(gl->glsl_version) + ",\"egl_version\":" + json_string(gl->egl_version) +
         ",\"platform\":" + json_string(gl->platform) + ",\"software\":" + (gl->software ? "true" : "false") +
         ",\"dma_buf_import\":" + (gl->dma_buf_import_works ? "true" : "false") +
         ",\"dma_buf_import_why\":" + json_string(gl->dma_buf_import_why) +
         ",\"dma_buf_render\":" + (gl->dma_buf_render_works ? "true" : "false") +
         ",\"dma_buf_render_why\":" + json_string(gl->dma_buf_render_why) + ",\"extensions\":[";
  for (std::size_t i = 0; i < gl->extensions.size(); ++i) out += (i ? "," : "") + json_string(gl->extensions[i]);
  return out + "]}]";
}

std::string cameras_json() {
  std::string out = "[";
  for (const CameraInfo& camera : V4l2Camera::list()) {
    out += (out.size() > 1 ? ",{" : "{") + std::string("\"path\":") + json_string(camera.path) +
           ",\"driver\":" + json_string(camera.driver) + ",\"card\":" + json_string(camera.card) +
           ",\"bus\":" + json_string(camera.bus) + ",\"multi_planar\":" + (camera.multi_planar ? "true" : "false") +
           ",\"formats\":[";
    for (std::size_t f = 0; f < camera.formats.size(); ++f) {
      const CameraFormat& format = camera.formats[f];
      out += (f ? ",{" : "{") + std::string("\"fourcc\":") + json_string(fourcc_to_string(format.fourcc)) +
             ",\"format\":" + (format.format ? json_string(to_string(*format.format)) : std::string("null")) +
             ",\"description\":" + json_string(format.description) +
             ",\"stepwise\":" + (format.stepwise ? "true" : "false") + ",\"sizes\":[";
      for (std::size_t s = 0; s < format.sizes.size(); ++s) {
        const auto& size = format.sizes[s];
        out += (s ? ",{" : "{") + std::string("\"width\":") + std::to_string(size.width) +
               ",\"height\":" + std::to_string(size.height) + ",\"fps\":[";
        for (std::size_t r = 0; r < size.fps.size(); ++r) {
          char rate[32];
          std::snprintf(rate, sizeof rate, "%.6g", size.fps[r]);
          out += (r ? "," : "") + std::string(rate);
        }
        out += "]}";
      }
      out += "]}";
    }
    out += "]}";
  }
  return out + "]";
}

void print_table() {
  std::cout << "memhal " << MEMHAL_VERSION_STRING << "\n\nmemory kinds:\n";
  std::printf("  %-10s %-4s %-9s %s\n", "name", "code", "available", "reason");
  for (MemoryKind kind : all<MemoryKind>()) {
    const Availability answer = availability(kind);
    std::printf("  %-10s %-4u %-9s %s\n", std::string(to_string(kind)).c_str(), code(kind),
                answer.available ? "yes" : "no", answer.reason.c_str());
  }
  std::cout << "\ndma-buf sources (preference order):\n";
  for (const DmaBufSource& source : dma_buf_sources()) {
    std::printf("  %-12s %-26s %-6s %s\n", source.name.c_str(), source.path.c_str(), source.usable ? "usable" : "no",
                source.state.c_str());
  }
  print_image_backends();
  std::cout << "\ncameras (V4L2 capture devices):\n";
  const auto cameras = V4l2Camera::list();
  if (cameras.empty()) std::cout << "  none found\n";
  for (const CameraInfo& camera : cameras) {
    std::printf("  %-12s %s (driver %s, %s)%s\n", camera.path.c_str(), camera.card.c_str(), camera.driver.c_str(),
                camera.bus.c_str(), camera.multi_planar ? ", multi-planar" : "");
    std::string formats;
    for (const CameraFormat& format : camera.formats) {
      if (!format.format) continue;  // the JSON lists every FourCC; the table those memhal reads
      formats += (formats.empty() ? "" : " ") + fourcc_to_string(format.fourcc);
      if (!format.sizes.empty()) {
        const auto& largest = format.sizes.back();
        formats += "<=" + std::to_string(largest.width) + "x" + std::to_string(largest.height);
      }
    }
    std::printf("    formats memhal reads: %s\n", formats.empty() ? "none" : formats.c_str());
  }
  std::cout << "\nMEMHAL_FORCE_MEM: "
            << (force_mem_requested() ? "set (auto-selection goes straight to mem)" : "not set") << "\n";
}

void print_json() {
  std::cout << "{\"version\":" << json_string(MEMHAL_VERSION_STRING) << ",\"memory_kinds\":[";
  bool first = true;
  for (MemoryKind kind : all<MemoryKind>()) {
    const Availability answer = availability(kind);
    std::cout << (first ? "" : ",") << "{\"name\":" << json_string(to_string(kind)) << ",\"code\":" << code(kind)
              << ",\"available\":" << (answer.available ? "true" : "false")
              << ",\"reason\":" << json_string(answer.reason) << "}";
    first = false;
  }
  std::cout << "],\"dma_buf_sources\":[";
  first = true;
  for (const DmaBufSource& source : dma_buf_sources()) {
    std::cout << (first ? "" : ",") << "{\"name\":" << json_string(source.name)
              << ",\"path\":" << json_string(source.path) << ",\"usable\":" << (source.usable ? "true" : "false")
              << ",\"state\":" << json_string(source.state) << "}";
    first = false;
  }
  std::cout << "],\"image_backends\":" << image_backends_json() << ",\"cameras\":" << cameras_json()
            << ",\"force_mem\":" << (force_mem_requested() ? "true" : "false") << "}\n";
}

}  // namespace

int run_info(std::span<const std::string_view> args) {
  bool json = false;
  for (std::string_view arg : args) {
    if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << "usage: memhal info [--json]\n";
      return 0;
    } else {
      std::cerr << "memhal info: unknown argument '" << arg << "'\nusage: memhal info [--json]\n";
      return 2;
    }
  }
  json ? print_json() : print_table();
  return 0;
}

}  // namespace memhal::cli
