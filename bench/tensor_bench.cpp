// Tensor foundation costs: Mem allocation, materialize of strided views against memcpy of the
// same bytes, and view creation (which must not depend on the tensor's size).
//
// Ratios are printed after the Google Benchmark table, from the same run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memhal/tensor.hpp>
#include <string>
#include <vector>

#include "support/ratio_reporter.hpp"

namespace {

using memhal::CpuAccess;
using memhal::DType;
using memhal::MemoryKind;
using memhal::Tensor;

constexpr int64_t kWidth1080 = 1920, kHeight1080 = 1080;

Tensor must(memhal::Result<Tensor> result) {
  if (!result) {
    std::fprintf(stderr, "bench setup failed: %s\n", result.error().to_string().c_str());
    std::abort();
  }
  return std::move(*result);
}

Tensor filled_rgba(int64_t width, int64_t height) {
  Tensor tensor = must(Tensor::create({height, width, 4}, DType::U8, MemoryKind::Mem));
  auto map = tensor.map(CpuAccess::Write);
  std::memset(map->data(), 0x5a, static_cast<std::size_t>(tensor.nbytes()));
  return tensor;
}

void BM_MemAllocate(benchmark::State& state) {
  const int64_t width = state.range(0), height = state.range(1);
  for (auto _ : state) {
    auto tensor = Tensor::create({height, width, 4}, DType::U8, MemoryKind::Mem);
    benchmark::DoNotOptimize(tensor);
  }
  state.SetLabel(std::to_string(width) + "x" + std::to_string(height) + " rgba");
}
BENCHMARK(BM_MemAllocate)->Args({1920, 1080})->Args({3840, 2160});

void BM_MemAllocateAndFirstWrite(benchmark::State& state) {
  const int64_t width = state.range(0), height = state.range(1);
  for (auto _ : state) {
    Tensor tensor = must(Tensor::create({height, width, 4}, DType::U8, MemoryKind::Mem));
    auto map = tensor.map(CpuAccess::Write);
    std::memset(map->data(), 1, static_cast<std::size_t>(tensor.nbytes()));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * width * height * 4);
}
BENCHMARK(BM_MemAllocateAndFirstWrite)->Args({1920, 1080})->Args({3840, 2160});

// The bound: copying the same bytes between two warm buffers.
void BM_Memcpy1080pRgba(benchmark::State& state) {
  std::vector<std::byte> src(kWidth1080 * kHeight1080 * 4, std::byte{1}), dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(src.size()));
}
BENCHMARK(BM_Memcpy1080pRgba);

void materialize_into(benchmark::State& state, const std::function<memhal::Result<Tensor>(const Tensor&)>& view_of) {
  Tensor source = filled_rgba(kWidth1080, kHeight1080);
  Tensor view = must(view_of(source));
  // Copy into a warm destination so the figure is the gather, not page faults of a fresh buffer.
  Tensor dst = must(view.materialize());
  for (auto _ : state) {
    auto copied = view.copy_to(dst);
    benchmark::DoNotOptimize(copied);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * source.nbytes());
}

void BM_MaterializeFlippedRows1080pRgba(benchmark::State& state) {
  materialize_into(state, [](const Tensor& t) { return t.flip(0); });
}
BENCHMARK(BM_MaterializeFlippedRows1080pRgba);

void BM_MaterializeFlippedColumns1080pRgba(benchmark::State& state) {
  materialize_into(state, [](const Tensor& t) { return t.flip(1); });
}
BENCHMARK(BM_MaterializeFlippedColumns1080pRgba);

void BM_MaterializeTransposed1080pRgba(benchmark::State& state) {
  materialize_into(state, [](const Tensor& t) { return t.transpose(0, 1); });
}
BENCHMARK(BM_MaterializeTransposed1080pRgba);

// A fresh allocation each time, as `materialize()` is called in user code.
void BM_MaterializeFreshTransposed1080pRgba(benchmark::State& state) {
  Tensor source = filled_rgba(kWidth1080, kHeight1080);
  Tensor view = must(source.transpose(0, 1));
  for (auto _ : state) {
    auto copy = view.materialize();
    benchmark::DoNotOptimize(copy);
  }
  state.SetBytesProcessed(state.iterations() * source.nbytes());
}
BENCHMARK(BM_MaterializeFreshTransposed1080pRgba);

void BM_ViewChain(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  Tensor tensor = must(Tensor::create({bytes / 4096, 1024}, DType::F32, MemoryKind::Mem));
  for (auto _ : state) {
    auto view = tensor.slice(0, 0, bytes / 8192)
                    .and_then([](const Tensor& t) { return t.flip(1); })
                    .and_then([](const Tensor& t) { return t.transpose(0, 1); });
    benchmark::DoNotOptimize(view);
  }
  state.SetLabel(std::to_string(bytes) + " bytes");
}
BENCHMARK(BM_ViewChain)->Arg(int64_t{1} << 13)->Arg(int64_t{64} << 20);

}  // namespace

int main(int argc, char** argv) {
  return memhal::bench::run_benchmarks(argc, argv, [](const memhal::bench::RatioReporter& r) {
    const double memcpy_time = r.real_seconds("BM_Memcpy1080pRgba");
    std::printf("\nratios (lower is better; 1.0 = memcpy of the same 8294400 bytes):\n");
    for (const char* name : {"BM_MaterializeFlippedRows1080pRgba", "BM_MaterializeFlippedColumns1080pRgba",
                             "BM_MaterializeTransposed1080pRgba", "BM_MaterializeFreshTransposed1080pRgba"}) {
      std::printf("  %-40s %.2fx memcpy\n", name, r.real_seconds(name) / memcpy_time);
    }
    const double small = r.real_seconds("BM_ViewChain/8192"), large = r.real_seconds("BM_ViewChain/67108864");
    std::printf("view creation, 64 MiB vs 8 KiB tensor: %.2fx (O(1) if within 1.5x)\n", large / small);
  });
}
