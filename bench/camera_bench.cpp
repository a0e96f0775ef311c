// The capture path of V4l2Camera against the same loop plus a memcpy of each frame out, on a
// real camera (the first V4L2 capture device, or MEMHAL_BENCH_CAMERA; in the DMA-heap VM:
// vivid, `run-in-dmaheap-vm --modules vivid build/bench/camera_bench`). CPU time per frame is
// the capture path's cost (the wait for the driver sleeps in poll and is not counted); the
// latency counters are from the buffer's timestamp to the frame in the consumer's hands.
#include <fcntl.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memhal/v4l2_camera.hpp>
#include <string>
#include <vector>

#include "support/ratio_reporter.hpp"

namespace {

using namespace memhal;

constexpr uint32_t kWidth = 1280, kHeight = 720;
constexpr double kFps = 30;
constexpr int kFrames = 150;

std::string camera_path() {
  if (const char* path = std::getenv("MEMHAL_BENCH_CAMERA")) return path;
  const auto cameras = V4l2Camera::list();
  return cameras.empty() ? std::string() : cameras.front().path;
}

// vivid stamps the nominal end of the frame period, which can lie ahead of the clock: ask it
// for start-of-exposure stamps, as a real sensor's, where the control exists.
void prefer_start_of_exposure(int fd) {
  v4l2_queryctrl query{};
  query.id = V4L2_CTRL_FLAG_NEXT_CTRL;
  while (::ioctl(fd, VIDIOC_QUERYCTRL, &query) == 0) {
    if (std::strcmp(reinterpret_cast<const char*>(query.name), "Timestamp Source") == 0) {
      v4l2_control control{query.id, 1};
      (void)::ioctl(fd, VIDIOC_S_CTRL, &control);  // a bench nicety, not a requirement
      return;
    }
    query.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
  }
}

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
int64_t now_ns() {
  return clock_ns(CLOCK_MONOTONIC);
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  const auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(at), values.end());
  return values[at];
}

// The median CPU per frame of each run, by io and whether the frame was copied out.
std::map<std::pair<CameraIo, bool>, double> g_cpu_p50_us;

// dequeue → frame → tensor (→ map + memcpy out) → release → requeue, once per iteration.
void capture_loop(benchmark::State& state, CameraIo io, bool copy_out) {
  const std::string path = camera_path();
  if (path.empty()) {
    state.SkipWithError("no V4L2 capture device (run it in the DMA-heap VM with --modules vivid)");
    return;
  }
  auto camera = V4l2Camera::open(
      path, {.width = kWidth, .height = kHeight, .format = PixelFormat::Nv12, .fps = kFps, .buffers = 4, .io = io});
  if (!camera) {
    state.SkipWithError(camera.error().message().c_str());
    return;
  }
  prefer_start_of_exposure(camera->fd());
  std::vector<std::byte> out(static_cast<std::size_t>(kWidth) * kHeight * 3 / 2);
  std::vector<double> latency_us, cpu_us;
  for (auto _ : state) {
    const int64_t cpu_begin = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    {
      auto frame = camera->next_frame(std::chrono::seconds(2));
      if (!frame) {
        state.SkipWithError(frame.error().message().c_str());
        return;
      }
      latency_us.push_back(static_cast<double>(now_ns() - *frame->timing.pts) / 1e3);
      auto tensor = frame->payload.to_tensor();
      if (copy_out) {
        auto map = tensor->map(CpuAccess::Read);
        const auto& plane = tensor->layout().planes();
        std::size_t offset = 0;
        for (std::size_t p = 0; p < plane.size(); ++p) {
          for (int64_t row = 0; row < plane[p].height; ++row) {
            std::memcpy(out.data() + offset, map->const_plane(p) + row * plane[p].pitch,
                        static_cast<std::size_t>(plane[p].row_bytes));
            offset += static_cast<std::size_t>(plane[p].row_bytes);
          }
        }
        benchmark::DoNotOptimize(out.data());
      }
      benchmark::DoNotOptimize(tensor);
    }  // the frame and its tensor drop: the buffer goes back to the driver
    cpu_us.push_back(static_cast<double>(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_begin) / 1e3);
  }
  // The median frame: an emulated guest's CPU clock also runs while the host has the vCPU
  // descheduled, and the mean takes every such stall in.
  state.counters["cpu_p50_us"] = g_cpu_p50_us[{io, copy_out}] = percentile(cpu_us, 0.5);
  state.counters["lat_p50_us"] = percentile(latency_us, 0.5);
  state.counters["lat_p99_us"] = percentile(latency_us, 0.99);
  state.counters["dropped"] = static_cast<double>(camera->stats().dropped);
  state.SetLabel(std::string(to_string(camera->config().io)) + " " + path);
}

void BM_Capture(benchmark::State& state) {
  capture_loop(state, static_cast<CameraIo>(state.range(0)), false);
}
void BM_CaptureAndMemcpy(benchmark::State& state) {
  capture_loop(state, static_cast<CameraIo>(state.range(0)), true);
}
BENCHMARK(BM_Capture)
    ->Arg(int(CameraIo::Mmap))
    ->Arg(int(CameraIo::DmaBufImport))
    ->Iterations(kFrames)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CaptureAndMemcpy)
    ->Arg(int(CameraIo::Mmap))
    ->Arg(int(CameraIo::DmaBufImport))
    ->Iterations(kFrames)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  return memhal::bench::run_benchmarks(argc, argv, [](const memhal::bench::RatioReporter&) {
    std::printf("\nMedian CPU per 1280x720 NV12 frame, capture path vs the same plus a memcpy of the frame out:\n");
    for (auto io : {CameraIo::Mmap, CameraIo::DmaBufImport}) {
      const auto plain = g_cpu_p50_us.find({io, false}), copied = g_cpu_p50_us.find({io, true});
      if (plain == g_cpu_p50_us.end() || copied == g_cpu_p50_us.end() || plain->second <= 0) continue;
      std::printf("  %-14s capture %7.1f us, + memcpy %7.1f us: the copy would cost %.1fx the capture path\n",
                  to_string(io), plain->second, copied->second, copied->second / plain->second);
    }
  });
}
