#include "storage/allocator.hpp"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "core/strings.hpp"
#include "storage/dmabuf.hpp"
#include "storage/heap.hpp"
#include "storage/shm.hpp"

namespace memhal {
namespace detail {

uint64_t next_storage_id() noexcept {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace {

using AllocateFn = Result<std::shared_ptr<Storage>> (*)(std::size_t);

struct Backend {
  MemoryKind kind;
  Availability (*probe)();
  AllocateFn allocate;  // null when this build has no allocator for the kind
};

Availability probe_heap() {
  auto storage = allocate_heap(kHeapAlignment);
  if (!storage) return {false, storage.error().message(), ErrorCode::Unavailable};
  return {true, cat("process heap, ", kHeapAlignment, "-byte aligned, zero-filled"), ErrorCode::Unavailable};
}

Availability probe_iosurface() {
  return {false, "IOSurface exists only on Apple platforms", ErrorCode::NotImplemented};
}

Availability probe_pbo() {
  return {false,
          "pbo tensors are made only by ImageProcessor::create_image, which owns a GL context; "
          "Tensor::create has none",
          ErrorCode::NotImplemented};
}

Availability probe_cuda() {
  // The driver is loaded at run time, never linked: a machine without it still runs memhal.
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return {false, "no CUDA driver (libcuda.so.1 not found)", ErrorCode::NotImplemented};
  ::dlclose(driver);
  return {false, "libcuda.so.1 loads, but this build has no CUDA storage backend", ErrorCode::NotImplemented};
}

constexpr std::array<Backend, 6> kBackends{{
    {MemoryKind::Mem, probe_heap, allocate_heap},
    {MemoryKind::Shm, probe_shm, allocate_shm},
    {MemoryKind::DmaBuf, probe_dmabuf, allocate_dmabuf},
    {MemoryKind::IoSurface, probe_iosurface, nullptr},
    {MemoryKind::Pbo, probe_pbo, nullptr},
    {MemoryKind::Cuda, probe_cuda, nullptr},
}};

static_assert(
    [] {
      for (std::size_t i = 0; i < kBackends.size(); ++i) {
        if (kBackends[i].kind != all<MemoryKind>()[i]) return false;
      }
      return kBackends.size() == all<MemoryKind>().size();
    }(),
    "kBackends must list every MemoryKind in code order");

const Backend* find_backend(MemoryKind kind) {
  for (const auto& backend : kBackends) {
    if (backend.kind == kind) return &backend;
  }
  return nullptr;
}

struct ProbeCache {
  std::array<std::once_flag, kBackends.size()> once;
  std::array<Availability, kBackends.size()> answers;
};

ProbeCache& probe_cache() {
  static ProbeCache cache;
  return cache;
}

constexpr std::array<MemoryKind, 2> kTensorChain{MemoryKind::DmaBuf, MemoryKind::Mem};
constexpr std::array<MemoryKind, 2> kImageChain{MemoryKind::DmaBuf, MemoryKind::Mem};

Result<std::shared_ptr<Storage>> allocate_pinned(std::size_t bytes, MemoryKind kind) {
  const Backend* backend = find_backend(kind);
  if (backend == nullptr) {
    return fail(ErrorCode::InvalidArgument, "memory kind code ", code(kind), " is not a MemoryKind");
  }
  Availability answer = availability(kind);
  if (!answer.available || backend->allocate == nullptr) {
    return fail(answer.refusal, to_string(kind), " allocation of ", bytes, " bytes refused: ", answer.reason);
  }
  return backend->allocate(bytes);
}

}  // namespace

Result<std::shared_ptr<Storage>> allocate(std::size_t bytes, std::optional<MemoryKind> memory,
                                          AllocationPurpose purpose) {
  if (memory) return allocate_pinned(bytes, *memory);
  std::span<const MemoryKind> chain = purpose == AllocationPurpose::Image ? std::span<const MemoryKind>(kImageChain)
                                                                          : std::span<const MemoryKind>(kTensorChain);
  std::string notes;
  const bool force_mem = force_mem_requested();
  for (MemoryKind kind : chain) {
    if (force_mem && kind != MemoryKind::Mem) {
      notes += cat(to_string(kind), " skipped: MEMHAL_FORCE_MEM is set; ");
      continue;
    }
    auto storage = allocate_pinned(bytes, kind);
    if (storage) {
      if (!notes.empty()) (*storage)->set_notes(notes + cat("allocated ", to_string(kind)));
      return storage;
    }
    notes += cat(to_string(kind), " skipped: ", storage.error().message(), "; ");
    if (kind == MemoryKind::Mem) return unexpected(Error(storage.error().code(), notes));
  }
  return fail(ErrorCode::Internal, "auto-selection chain did not end on mem: ", notes);
}

}  // namespace detail

Availability availability(MemoryKind kind) {
  const detail::Backend* backend = detail::find_backend(kind);
  if (backend == nullptr) {
    return {false, detail::cat("code ", code(kind), " is not a MemoryKind"), ErrorCode::InvalidArgument};
  }
  auto& cache = detail::probe_cache();
  const std::size_t index = static_cast<std::size_t>(backend - detail::kBackends.data());
  std::call_once(cache.once[index], [&] { cache.answers[index] = backend->probe(); });
  return cache.answers[index];
}

bool is_available(MemoryKind kind) {
  return availability(kind).available;
}

bool force_mem_requested() {
  const char* value = std::getenv("MEMHAL_FORCE_MEM");
  if (value == nullptr) return false;
  const std::string_view text(value);
  return !(text.empty() || text == "0" || detail::equals_ignoring_ascii_case(text, "false"));
}

}  // namespace memhal
