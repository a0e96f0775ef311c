// TensorPool: pre-faulted tensors handed out and returned when their last reference drops.
#include <atomic>
#include <deque>
#include <memhal/memory.hpp>
#include <memhal/tensor_pool.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "storage/buffer_cache.hpp"
#include "tensor/tensor_access.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

using namespace std::chrono_literals;

Layout rgba(int64_t width, int64_t height) {
  return Layout::image(width, height, PixelFormat::Rgba).value();
}

TEST(TensorPool, HandsOutEveryTensorThenSaysBusy) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(64, 32), 3, MemoryKind::Shm));
  EXPECT_EQ(pool.capacity(), 3u);
  EXPECT_EQ(pool.memory(), MemoryKind::Shm);
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, pool.try_acquire());
    EXPECT_EQ(tensor.layout(), pool.layout());
    EXPECT_EQ(tensor.memory(), MemoryKind::Shm);
    for (const Tensor& other : out) EXPECT_FALSE(same_storage(tensor, other));
    out.push_back(std::move(tensor));
  }
  EXPECT_EQ(pool.available(), 0u);
  EXPECT_ERROR(ErrorCode::Busy, pool.try_acquire());
  EXPECT_ERROR(ErrorCode::Busy, pool.acquire(5ms));
  out.pop_back();
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_OK(pool.try_acquire());
}

TEST(TensorPool, ATensorComesBackOnlyWhenItsLastViewAndMapDrop) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(16, 16), 1, MemoryKind::Mem));
  std::optional<Tensor> view;
  std::optional<TensorMap> map;
  {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, pool.try_acquire());
    ASSERT_OK_AND_ASSIGN(view, tensor.crop(2, 2, 4, 4));
    ASSERT_OK_AND_ASSIGN(map, tensor.map(CpuAccess::Write));
  }
  EXPECT_EQ(pool.available(), 0u) << "a view and a map are still out";
  view.reset();
  EXPECT_EQ(pool.available(), 0u) << "the map is still out";
  map.reset();
  EXPECT_EQ(pool.available(), 1u);
}

TEST(TensorPool, RecyclesTheSameMemory) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(16, 16), 1, MemoryKind::Shm));
  std::byte* first = nullptr;
  {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, pool.try_acquire());
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Write));
    first = map.data();
    map.data()[0] = std::byte{77};
  }
  ASSERT_OK_AND_ASSIGN(Tensor again, pool.try_acquire());
  ASSERT_OK_AND_ASSIGN(TensorMap map, again.map(CpuAccess::Write));  // a read map has an address of its own
  EXPECT_EQ(map.data(), first);
  EXPECT_EQ(map.data()[0], std::byte{77}) << "recycled tensors keep the last user's bytes";
}

TEST(TensorPool, AcquireWaitsForATensorToComeBack) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(16, 16), 1));
  ASSERT_OK_AND_ASSIGN(Tensor held, pool.try_acquire());
  std::thread returner([held = std::move(held)]() mutable {
    std::this_thread::sleep_for(20ms);
    held = Tensor::create({1}, DType::U8, MemoryKind::Mem).value();
  });
  auto tensor = pool.acquire(10s);
  returner.join();
  EXPECT_OK(tensor);
}

TEST(TensorPool, AcquireWithTheLongestTimeoutsWaitsInsteadOfTimingOutAtOnce) {
  // Both overflow `now + timeout`; the first is "forever".
  for (const auto timeout : {std::chrono::nanoseconds::max(), std::chrono::nanoseconds::max() - 1s}) {
    ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(16, 16), 1));
    ASSERT_OK_AND_ASSIGN(Tensor held, pool.try_acquire());
    const auto start = std::chrono::steady_clock::now();
    std::thread returner([held = std::move(held)]() mutable {
      std::this_thread::sleep_for(100ms);
      held = Tensor::create({1}, DType::U8, MemoryKind::Mem).value();
    });
    auto tensor = pool.acquire(timeout);
    returner.join();
    EXPECT_TRUE(tensor.has_value()) << timeout.count() << ": " << tensor.error().to_string();
    EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms) << "returned before the tensor came back";
  }
}

TEST(TensorPool, ANegativeTimeoutDoesNotWait) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(8, 8), 1));
  ASSERT_OK_AND_ASSIGN(Tensor held, pool.try_acquire());
  EXPECT_ERROR(ErrorCode::Busy, pool.acquire(std::chrono::nanoseconds(-1)));
  EXPECT_ERROR(ErrorCode::Busy, pool.acquire(std::chrono::nanoseconds::min()));
}

TEST(TensorPool, TensorsOutliveTheirPoolAndAreFreedOnce) {
  std::vector<Tensor> out;
  {
    ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(32, 32), 2, MemoryKind::Shm));
    ASSERT_OK_AND_ASSIGN(Tensor a, pool.try_acquire());
    out.push_back(a);
    out.push_back(std::move(a));
  }
  ASSERT_OK_AND_ASSIGN(TensorMap map, out[0].map(CpuAccess::Write));
  map.data()[5] = std::byte{1};
  EXPECT_GE(out[1].fd(), 0);
  out.clear();  // under ASan: no use-after-free and no leak
}

TEST(TensorPool, PerPlaneImagesReturnAsAWhole) {
  ASSERT_OK_AND_ASSIGN(Tensor prototype, Tensor::image(64, 32, PixelFormat::Nv12, MemoryKind::Shm, DType::U8,
                                                       kDefaultRowAlign, PlaneBuffers::PerPlane));
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(prototype.layout(), 1, MemoryKind::Shm));
  {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, pool.try_acquire());
    EXPECT_GE(tensor.fd(1), 0);
    EXPECT_NE(tensor.fd(0), tensor.fd(1));
  }
  EXPECT_EQ(pool.available(), 1u);
}

TEST(TensorPool, ConcurrentAcquireAndReleaseNeverHandOutOneTensorTwice) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(8, 8), 3, MemoryKind::Mem));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        auto tensor = pool.acquire(5s);
        if (!tensor) {
          ++failures;
          continue;
        }
        auto map = tensor->map(CpuAccess::Write);
        const auto mark = std::byte(t * 16 + 1);
        map->data()[0] = mark;
        std::this_thread::yield();
        if (map->data()[0] != mark) ++failures;  // another thread holds the same tensor
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(pool.available(), 3u);
}

TEST(TensorPool, BadRequestsAreRefused) {
  EXPECT_ERROR(ErrorCode::InvalidArgument, TensorPool::create(rgba(8, 8), 0));
  const auto pinned = TensorPool::create(rgba(8, 8), 2, MemoryKind::Cuda);
  EXPECT_FALSE(pinned.has_value()) << "a pinned kind never falls back";
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(8, 8), 1));
  TensorPool moved = std::move(pool);
  EXPECT_OK(moved.try_acquire());
}

TEST(TensorPool, ACountNoMachineCanHoldIsOutOfMemoryNotAnException) {
  for (const std::size_t count : {std::size_t{1} << 62, std::size_t{1} << 40, SIZE_MAX}) {
    const auto pool = TensorPool::create(rgba(8, 8), count);
    ASSERT_FALSE(pool.has_value()) << count;
    EXPECT_EQ(pool.error().code(), ErrorCode::OutOfMemory) << pool.error().to_string();
    EXPECT_NE(pool.error().message().find(std::to_string(count)), std::string::npos) << pool.error().message();
  }
  // An empty layout costs no pixel bytes, but every tensor still needs its slot.
  const Layout empty = Layout::contiguous({0}, DType::U8).value();
  EXPECT_ERROR(ErrorCode::OutOfMemory, TensorPool::create(empty, std::size_t{1} << 62));
}

TEST(TensorPool, AutoSelectionFollowsTheImageChain) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(8, 8), 1));
  EXPECT_EQ(pool.memory(),
            is_available(MemoryKind::DmaBuf) && !force_mem_requested() ? MemoryKind::DmaBuf : MemoryKind::Mem);
}

TEST(TensorPool, ASlotIsOneBufferIdentityAcrossAcquires) {
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(16, 8), 2, MemoryKind::Mem));
  uint64_t first_id = 0;
  std::optional<Tensor> first;
  {
    ASSERT_OK_AND_ASSIGN(const Tensor a, pool.try_acquire());
    ASSERT_OK_AND_ASSIGN(const Tensor b, pool.try_acquire());
    EXPECT_NE(a.buffer_id(), 0u);
    EXPECT_NE(a.buffer_id(), b.buffer_id());
    EXPECT_EQ(a.buffer_id(1), 0u) << "no second buffer";
    EXPECT_EQ(a.buffer_id(99), 0u);
    ASSERT_OK_AND_ASSIGN(const Tensor view, a.crop(1, 1, 4, 4));
    EXPECT_EQ(view.buffer_id(), a.buffer_id());
    first_id = a.buffer_id();
  }
  // Both are back; a slot handed out again is the same buffer, with the same identity.
  std::vector<Tensor> again;
  for (int i = 0; i < 2; ++i) again.push_back(pool.try_acquire().value());
  const bool seen = again[0].buffer_id() == first_id || again[1].buffer_id() == first_id;
  EXPECT_TRUE(seen) << "slot " << first_id << " came back as " << again[0].buffer_id() << " and "
                    << again[1].buffer_id();
  // The storage object itself is the slot's (not a wrapper made per acquire).
  const Tensor& same = again[0].buffer_id() == first_id ? again[0] : again[1];
  EXPECT_EQ(detail::TensorAccess::buffers(same)[0]->id(), first_id);
  ASSERT_OK_AND_ASSIGN(const Tensor fresh, Tensor::image(16, 8, PixelFormat::Rgba, MemoryKind::Mem));
  EXPECT_NE(fresh.buffer_id(), again[0].buffer_id());
  EXPECT_NE(fresh.buffer_id(), again[1].buffer_id());
}

TEST(TensorPool, APerBufferCacheHitsFromTheSecondHandOutOfEachSlot) {
  // What the GL backend's DMA-BUF import cache does, without EGL: one entry per buffer,
  // kept while the buffer lives. A pool that wrapped its slots anew on each acquire would
  // give a new key (and a liveness that ends with the frame) every time: 100 imports.
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(rgba(16, 8), 4, MemoryKind::Mem));
  detail::BufferCache<int> cache;
  int imports = 0, released = 0;
  const auto release = [&](int&) { ++released; };
  std::deque<Tensor> in_flight;  // three frames downstream at any time: the ring cycles
  for (int frame = 0; frame < 100; ++frame) {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, pool.try_acquire());
    cache.collect(release);
    const detail::Storage& storage = *detail::TensorAccess::buffers(tensor)[0];
    if (cache.find(storage, [](int) { return true; }) == nullptr) cache.insert(storage, ++imports);
    in_flight.push_back(std::move(tensor));
    if (in_flight.size() > 3) in_flight.pop_front();
  }
  EXPECT_EQ(imports, 4);
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(released, 0);
  // An entry lives as long as the buffer, even past its pool while a tensor holds it.
  pool = TensorPool::create(rgba(16, 8), 1, MemoryKind::Mem).value();
  cache.collect(release);
  EXPECT_EQ(released, 1) << "the one slot not out was freed with its pool";
  for (const Tensor& kept : in_flight) {
    EXPECT_NE(cache.find(*detail::TensorAccess::buffers(kept)[0], [](int) { return true; }), nullptr);
  }
  in_flight.clear();
  cache.collect(release);
  EXPECT_EQ(released, 4);
  EXPECT_EQ(cache.size(), 0u);
  // Ids are never reused: the new pool's buffer never hits an old entry.
  ASSERT_OK_AND_ASSIGN(const Tensor next, pool.try_acquire());
  cache.insert(*detail::TensorAccess::buffers(next)[0], 0);
  for (const auto& entry : cache.entries()) EXPECT_EQ(entry.buffer, next.buffer_id());
}

}  // namespace
}  // namespace memhal
