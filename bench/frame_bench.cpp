// Frame fan-out and system-byte access costs, each against the copy it avoids or the memcpy
// bound, measured in the same run:
//  * a Tee to 1, 4 and 16 branches of a 4K RGBA frame vs giving each branch a deep copy;
//  * require_system_bytes on a flipped 1080p RGBA view (a gather into new bytes) vs memcpy
//    of the same 8294400 bytes into new bytes and between two warm buffers.
//
// Ratios are printed after the Google Benchmark table.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memhal/tee.hpp>
#include <string>
#include <vector>

#include "support/ratio_reporter.hpp"

namespace {

using namespace memhal;

constexpr int64_t k4kBytes = int64_t{3840} * 2160 * 4;
constexpr int64_t k1080Bytes = int64_t{1920} * 1080 * 4;

template <class T>
T must(Result<T> result) {
  if (!result) {
    std::fprintf(stderr, "bench setup failed: %s\n", result.error().to_string().c_str());
    std::abort();
  }
  return std::move(*result);
}

Frame frame_4k() {
  Frame frame{
      SystemSlice::adopt(std::vector<std::byte>(static_cast<std::size_t>(k4kBytes), std::byte{0x5a})), {}, 0, {}};
  frame.metadata.set("camera", std::string("front"));
  return frame;
}

// The memhal way: one shareable payload, a count bump per branch.
void BM_Tee4kRgba(benchmark::State& state) {
  const auto branches = static_cast<std::size_t>(state.range(0));
  Frame root = frame_4k();
  root.make_shareable();
  const Tee tee = must(Tee::create(branches));
  for (auto _ : state) {
    auto out = tee.push(must(root.share()));
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(std::to_string(branches) + " branches");
}
BENCHMARK(BM_Tee4kRgba)->Arg(1)->Arg(4)->Arg(16);

// The peer: every branch gets its own copy of the bytes (fresh memory, as a copying tee has).
void BM_DeepCopy4kRgba(benchmark::State& state) {
  const auto branches = static_cast<std::size_t>(state.range(0));
  const Frame root = frame_4k();
  for (auto _ : state) {
    std::vector<Frame> out;
    for (std::size_t i = 0; i < branches; ++i) out.push_back(must(root.share()));  // owned: deep copies
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(branches) * k4kBytes);
  state.SetLabel(std::to_string(branches) + " branches");
}
BENCHMARK(BM_DeepCopy4kRgba)->Arg(1)->Arg(4)->Arg(16)->Unit(benchmark::kMillisecond);

MemoryDomain flipped_1080p(std::size_t axis) {
  std::vector<std::byte> pixels(static_cast<std::size_t>(k1080Bytes));
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::byte>(i * 31);
  const auto view = must(TensorView::contiguous({1080, 1920, 4}, DType::U8));
  const SystemView image = must(SystemView::create(SharedBytes::adopt(std::move(pixels)), view));
  return must(image.flip(axis));
}

void BM_RequireSystemBytesFlippedRows1080p(benchmark::State& state) {
  const MemoryDomain domain = flipped_1080p(0);
  for (auto _ : state) {
    auto bytes = domain.require_system_bytes("bench");
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(state.iterations() * k1080Bytes);
}
BENCHMARK(BM_RequireSystemBytesFlippedRows1080p)->Unit(benchmark::kMillisecond);

void BM_RequireSystemBytesFlippedColumns1080p(benchmark::State& state) {
  const MemoryDomain domain = flipped_1080p(1);
  for (auto _ : state) {
    auto bytes = domain.require_system_bytes("bench");
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(state.iterations() * k1080Bytes);
}
BENCHMARK(BM_RequireSystemBytesFlippedColumns1080p)->Unit(benchmark::kMillisecond);

// The bound for a gather into new bytes: memcpy into a fresh allocation of the same size.
void BM_MemcpyFresh1080p(benchmark::State& state) {
  const std::vector<std::byte> src(static_cast<std::size_t>(k1080Bytes), std::byte{1});
  for (auto _ : state) {
    void* dst = std::aligned_alloc(64, src.size());
    std::memcpy(dst, src.data(), src.size());
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
    std::free(dst);
  }
  state.SetBytesProcessed(state.iterations() * k1080Bytes);
}
BENCHMARK(BM_MemcpyFresh1080p)->Unit(benchmark::kMillisecond);

// The physical bound: copying the same bytes between two warm buffers.
void BM_MemcpyWarm1080p(benchmark::State& state) {
  const std::vector<std::byte> src(static_cast<std::size_t>(k1080Bytes), std::byte{1});
  std::vector<std::byte> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * k1080Bytes);
}
BENCHMARK(BM_MemcpyWarm1080p)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  return memhal::bench::run_benchmarks(argc, argv, [](const memhal::bench::RatioReporter& r) {
    std::printf("\ntee vs deep copy of a 4K RGBA frame (33177600 bytes) to each branch:\n");
    for (const char* n : {"1", "4", "16"}) {
      const double tee = r.real_seconds(std::string("BM_Tee4kRgba/") + n);
      const double copy = r.real_seconds(std::string("BM_DeepCopy4kRgba/") + n);
      std::printf("  %2s branches: tee %8.3f us, deep copy %9.3f us: tee is %.0fx faster\n", n, tee * 1e6, copy * 1e6,
                  copy / tee);
    }
    const double fresh = r.real_seconds("BM_MemcpyFresh1080p"), warm = r.real_seconds("BM_MemcpyWarm1080p");
    std::printf("\nrequire_system_bytes of a flipped 1080p RGBA view (8294400 bytes), lower is better:\n");
    for (const char* name : {"BM_RequireSystemBytesFlippedRows1080p", "BM_RequireSystemBytesFlippedColumns1080p"}) {
      std::printf("  %-42s %.2fx memcpy into fresh bytes, %.2fx warm memcpy\n", name, r.real_seconds(name) / fresh,
                  r.real_seconds(name) / warm);
    }
  });
}
