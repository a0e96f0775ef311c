// Storage backends per frame: allocate+free, allocate+first write, pooled acquire+write and
// map+unmap of 1080p and 4K RGBA for Mem, Shm and DmaBuf (where this machine has a DMA-BUF
// source). Printed after the table, from the same run: the pooled/fresh ratio (what a
// TensorPool saves per frame) and the 4K/1080p ratio of map+unmap (the persistent mapping
// makes it independent of the size: within 1.5x).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memhal/memory.hpp>
#include <memhal/tensor.hpp>
#include <memhal/tensor_pool.hpp>
#include <string>

#include "support/ratio_reporter.hpp"

namespace {

using memhal::CpuAccess;
using memhal::DType;
using memhal::MemoryKind;
using memhal::Tensor;

MemoryKind kind_of(const benchmark::State& state) {
  return static_cast<MemoryKind>(state.range(0));
}

bool skip_unavailable(benchmark::State& state) {
  if (memhal::is_available(kind_of(state))) return false;
  state.SkipWithError(("unavailable: " + memhal::availability(kind_of(state)).reason).c_str());
  return true;
}

memhal::Result<Tensor> make(const benchmark::State& state) {
  return Tensor::create({state.range(2), state.range(1), 4}, DType::U8, kind_of(state));
}

void label(benchmark::State& state) {
  state.SetLabel(std::string(memhal::to_string(kind_of(state))) + " " + std::to_string(state.range(1)) + "x" +
                 std::to_string(state.range(2)));
}

void fill(const Tensor& tensor, int value) {
  auto map = tensor.map(CpuAccess::Write);
  if (map) std::memset(map->data(), value, map->size_bytes());
}

void BM_AllocateFree(benchmark::State& state) {
  if (skip_unavailable(state)) return;
  for (auto _ : state) {
    auto tensor = make(state);
    benchmark::DoNotOptimize(tensor);
  }
  label(state);
}

void BM_AllocateFirstWrite(benchmark::State& state) {
  if (skip_unavailable(state)) return;
  for (auto _ : state) {
    auto tensor = make(state);
    if (tensor) fill(*tensor, 0x5a);
  }
  label(state);
  state.SetBytesProcessed(state.iterations() * state.range(1) * state.range(2) * 4);
}

void BM_PooledAcquireWrite(benchmark::State& state) {
  if (skip_unavailable(state)) return;
  auto layout = memhal::Layout::contiguous({state.range(2), state.range(1), 4}, DType::U8);
  auto pool = memhal::TensorPool::create(*layout, 2, kind_of(state));
  if (!pool) {
    state.SkipWithError(pool.error().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto tensor = pool->try_acquire();
    if (tensor) fill(*tensor, 0x5a);
  }
  label(state);
  state.SetBytesProcessed(state.iterations() * state.range(1) * state.range(2) * 4);
}

void BM_MapUnmap(benchmark::State& state) {
  if (skip_unavailable(state)) return;
  auto tensor = make(state);
  if (!tensor) {
    state.SkipWithError(tensor.error().message().c_str());
    return;
  }
  fill(*tensor, 1);
  for (auto _ : state) {
    auto map = tensor->map(CpuAccess::ReadWrite);
    benchmark::DoNotOptimize(map);
  }
  label(state);
}

void sizes(benchmark::internal::Benchmark* bench) {
  for (MemoryKind kind : {MemoryKind::Mem, MemoryKind::Shm, MemoryKind::DmaBuf}) {
    bench->Args({static_cast<int64_t>(memhal::code(kind)), 1920, 1080});
    bench->Args({static_cast<int64_t>(memhal::code(kind)), 3840, 2160});
  }
  bench->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_AllocateFree)->Apply(sizes);
BENCHMARK(BM_AllocateFirstWrite)->Apply(sizes);
BENCHMARK(BM_PooledAcquireWrite)->Apply(sizes);
BENCHMARK(BM_MapUnmap)->Apply(sizes);

}  // namespace

int main(int argc, char** argv) {
  return memhal::bench::run_benchmarks(argc, argv, [](const memhal::bench::RatioReporter& r) {
    // CPU time: page faults included, and steadier than wall time on a shared machine.
    auto us = [&](const std::string& name) { return r.cpu_seconds(name) * 1e6; };
    std::printf("\npooled acquire+write / fresh allocate+first write (lower is better):\n");
    for (MemoryKind kind : {MemoryKind::Mem, MemoryKind::Shm, MemoryKind::DmaBuf}) {
      for (const char* size : {"1920/1080", "3840/2160"}) {
        const std::string args = std::to_string(memhal::code(kind)) + "/" + size;
        const double pooled = us("BM_PooledAcquireWrite/" + args), fresh = us("BM_AllocateFirstWrite/" + args);
        if (pooled > 0 && fresh > 0) {
          std::printf("  %-7s %-10s %.2f  (%.0f us vs %.0f us)\n", std::string(memhal::to_string(kind)).c_str(), size,
                      pooled / fresh, pooled, fresh);
        }
      }
    }
    std::printf("\nmap+unmap, 4K / 1080p (the persistent mapping: within 1.5x):\n");
    for (MemoryKind kind : {MemoryKind::Mem, MemoryKind::Shm, MemoryKind::DmaBuf}) {
      const std::string code = std::to_string(memhal::code(kind));
      const double small = us("BM_MapUnmap/" + code + "/1920/1080"), large = us("BM_MapUnmap/" + code + "/3840/2160");
      if (small > 0 && large > 0) {
        std::printf("  %-7s %.2fx  (%.3f us vs %.3f us)\n", std::string(memhal::to_string(kind)).c_str(), large / small,
                    large, small);
      }
    }
  });
}
