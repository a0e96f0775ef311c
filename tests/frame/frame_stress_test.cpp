// Many threads sharing, writing (copy-on-write) and dropping the payloads and metadata of a
// few frames at once. Meant for TSan (scripts/test.sh runs it in build/tsan): a data race in
// the reference counts or the copy-on-write paths shows up there as a report; here it checks
// that every native object and every lent buffer is released exactly once and that no write
// reached a shared original.
#include <memhal/memory.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/tee.hpp>
#include <memhal/tensor_pool.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "test_support.hpp"

namespace memhal {
namespace {

constexpr int kThreads = 8;
constexpr int kIterations = 40000;  // x 8 threads x ~4 operations each: over 10^6

struct Native {
  explicit Native(std::atomic<int>* counter) : releases(counter) {}
  ~Native() { releases->fetch_add(1); }
  std::atomic<int>* releases;
};

struct Roots {
  std::vector<Frame> frames;
  std::vector<std::byte> lent_storage = std::vector<std::byte>(256, std::byte{0x5A});
};

void build_roots(Roots& roots, std::atomic<int>* releases, std::atomic<int>* lent_releases) {
  Metadata metadata;
  metadata.set("camera", std::string("front"));
  metadata.set("exposure", 8000);
  SystemSlice owned = SystemSlice::adopt(std::vector<std::byte>(256, std::byte{0x11}));
  owned.make_shareable();
  auto view = SystemView::create(SharedBytes::adopt(std::vector<std::byte>(16 * 16 * 3, std::byte{0x22})),
                                 *TensorView::contiguous({16, 16, 3}, DType::U8));
  ASSERT_TRUE(view.has_value());
  roots.frames.push_back(Frame{std::move(owned), {}, 0, metadata});
  roots.frames.push_back(
      Frame{SystemSlice::lend(roots.lent_storage, [lent_releases] { lent_releases->fetch_add(1); }), {}, 1, metadata});
  roots.frames.push_back(Frame{*view->rotate90(), {}, 2, metadata});
  roots.frames.push_back(
      Frame{OwnedCudaBuffer{.device_pointers = {1}, .keep_alive = KeepAlive::of(std::make_shared<Native>(releases))},
            {},
            3,
            metadata});
  roots.frames.push_back(
      Frame{OwnedVulkanTexture{.image = 2, .keep_alive = KeepAlive::of(std::make_shared<Native>(releases))},
            {},
            4,
            metadata});
  OwnedDmaBuf dmabuf;
  dmabuf.plane_count = 1;
  dmabuf.keep_alive = KeepAlive::of(std::make_shared<Native>(releases));
  roots.frames.push_back(Frame{dmabuf, {}, 5, metadata});
}

// One thread's work; returns the operations it made (shares, writes, metadata edits, drops).
long hammer(const std::vector<Frame>& roots, const Tee& tee, int seed) {
  long operations = 0;
  for (int i = 0; i < kIterations; ++i) {
    // i / 4 walks the roots while (i + seed) % 4 walks the cases, so every case meets every root.
    const Frame& root = roots[static_cast<std::size_t>(i / 4 + seed) % roots.size()];
    auto share = root.share();
    if (!share.has_value()) return -1;
    ++operations;
    switch ((i + seed) % 4) {
      case 0: {
        auto again = share->share();
        operations += again.has_value() ? 2 : -1000000;  // a share and, at scope end, a drop
        break;
      }
      case 1:
        if (SystemSlice* slice = share->payload.get_if<SystemSlice>()) {
          auto bytes = slice->mutable_bytes();  // copies: the root still holds the bytes
          if (!bytes.has_value() || bytes->empty()) return -1;
          (*bytes)[0] = std::byte{0xFF};
          auto in_place = slice->mutable_bytes();  // now unique: no copy
          if (!in_place.has_value() || in_place->data() != bytes->data()) return -1;
          operations += 2;
        }
        break;
      case 2:
        share->metadata.set("thread", seed);
        if (share->metadata.get<int>("thread") == nullptr || root.metadata.contains("thread")) return -1;
        ++operations;
        break;
      case 3: {
        auto branches = tee.push(std::move(*share));
        if (!branches.has_value()) return -1;
        operations += static_cast<long>(branches->size());
        break;
      }
    }
    ++operations;  // the drop of `share`
  }
  return operations;
}

TEST(FrameStress, EightThreadsShareWriteAndDropWithoutRacesOrLeaks) {
  std::atomic<int> releases{0};
  std::atomic<int> lent_releases{0};
  long total = 0;
  {
    Roots roots;
    build_roots(roots, &releases, &lent_releases);
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(3));
    std::vector<long> counts(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { counts[static_cast<std::size_t>(t)] = hammer(roots.frames, tee, t); });
    }
    for (auto& thread : threads) thread.join();
    for (const long count : counts) {
      ASSERT_GE(count, 0) << "a share, write or metadata check failed on some thread";
      total += count;
    }
    EXPECT_EQ(roots.frames[0].payload.as_system_slice()->front(), std::byte{0x11}) << "a write reached the original";
    EXPECT_EQ(roots.lent_storage[0], std::byte{0x5A});
    EXPECT_FALSE(roots.frames[0].metadata.contains("thread"));
    EXPECT_EQ(releases.load(), 0);
    EXPECT_EQ(lent_releases.load(), 0);
  }
  EXPECT_GE(total, 1000000);
  EXPECT_EQ(releases.load(), 3) << "each native object released exactly once";
  EXPECT_EQ(lent_releases.load(), 1) << "the lent bytes given back exactly once";
}

// The copy-on-write hazard itself: a reader on another thread reads shared bytes and drops
// its share; the owner, now alone, writes them in place. The drop is the only thing ordering
// the read before the write, so the owner's uniqueness test must synchronise with it (TSan
// reports a race here if it does not).
void owner(std::atomic<SystemSlice*>* slot, int rounds, bool* ok) {
  SystemSlice slice = SystemSlice::adopt(std::vector<std::byte>(64, std::byte{1}));
  slice.make_shareable();
  const std::byte* data = slice.data();
  for (int round = 0; round < rounds; ++round) {
    auto share = slice.share();
    if (!share.has_value()) return;
    slot->store(new SystemSlice(std::move(*share)), std::memory_order_release);
    while (!slice.shared_bytes().unique()) std::this_thread::yield();
    auto bytes = slice.mutable_bytes();
    if (!bytes.has_value() || bytes->data() != data) return;  // alone again: must write in place
    for (std::byte& b : *bytes) b = static_cast<std::byte>(round);
  }
  *ok = true;
}

void reader(std::atomic<SystemSlice*>* slot, int rounds, long* sum) {
  for (int round = 0; round < rounds; ++round) {
    SystemSlice* share = nullptr;
    while ((share = slot->exchange(nullptr, std::memory_order_acquire)) == nullptr) std::this_thread::yield();
    for (const std::byte b : share->bytes()) *sum += static_cast<long>(b);
    delete share;
  }
}

TEST(FrameStress, ASoleOwnerWritesInPlaceOnlyAfterOtherThreadsDroppedTheirShares) {
  constexpr int kPairs = kThreads / 2;
  constexpr int kRounds = 5000;
  std::vector<std::atomic<SystemSlice*>> slots(kPairs);
  std::vector<char> oks(kPairs, 0);
  std::vector<long> sums(kPairs, 0);
  std::vector<std::thread> threads;
  for (int p = 0; p < kPairs; ++p) {
    threads.emplace_back(owner, &slots[static_cast<std::size_t>(p)], kRounds,
                         reinterpret_cast<bool*>(&oks[static_cast<std::size_t>(p)]));
    threads.emplace_back(reader, &slots[static_cast<std::size_t>(p)], kRounds, &sums[static_cast<std::size_t>(p)]);
  }
  for (auto& thread : threads) thread.join();
  for (int p = 0; p < kPairs; ++p) {
    EXPECT_TRUE(oks[static_cast<std::size_t>(p)]) << "owner " << p << " copied or failed";
    // Round r's reader sees the bytes written after round r - 1: 64 * (r - 1), and 64 for r = 0.
    long expected = 64;
    for (int r = 1; r < kRounds; ++r) expected += 64L * ((r - 1) & 0xFF);
    EXPECT_EQ(sums[static_cast<std::size_t>(p)], expected) << "a reader saw a write meant for later";
  }
}

// The byte at `index` of frame `sequence`: every frame differs from the last three everywhere.
uint8_t pattern(uint64_t sequence, std::size_t index) {
  return static_cast<uint8_t>(sequence * 131 + index * 7 + (index >> 8));
}

class FrameQueue {
 public:
  void push(std::optional<Frame> frame) {
    {
      std::lock_guard lock(mutex_);
      frames_.push_back(std::move(frame));
    }
    ready_.notify_one();
  }
  std::optional<Frame> pop() {  // nothing: the producer is done
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !frames_.empty(); });
    std::optional<Frame> frame = std::move(frames_.front());
    frames_.pop_front();
    return frame;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::optional<Frame>> frames_;
};

// A consumer that turns each frame back into a tensor, drops the frame, holds the tensor (or a
// view of it) a while and then checks every byte: a slot handed out again too early would
// have been overwritten with a later frame's pattern by then.
void consume(FrameQueue& queue, bool through_view, std::atomic<int>& bad, std::atomic<int>& seen) {
  uint64_t held = 0;
  while (std::optional<Frame> frame = queue.pop()) {
    const uint64_t sequence = frame->sequence;
    auto tensor = frame->payload.to_tensor();
    if (!tensor) {
      bad.fetch_add(1);
      continue;
    }
    frame.reset();
    if (through_view) tensor = tensor->crop(0, 0, tensor->shape()[1], tensor->shape()[0]);
    if (!tensor) {
      bad.fetch_add(1);
      continue;
    }
    if (++held % 7 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    } else {
      std::this_thread::yield();
    }
    auto map = tensor->map(CpuAccess::Read);
    const std::byte* bytes = map ? map->data() : nullptr;
    bool ok = bytes != nullptr;
    const auto size = static_cast<std::size_t>(tensor->layout().byte_extent(0).end);
    for (std::size_t i = 0; ok && i < size; ++i) {
      ok = bytes[i] == std::byte{pattern(sequence, i)};
    }
    if (!ok) bad.fetch_add(1);
    seen.fetch_add(1);
  }
}

// Producer against two consumers through a pool of three: 10^4 frames, each fanned out by a
// Tee; the producer blocks until a slot is really free. Fails (and TSan reports a race) if a
// slot could come back while a tensor from a frame of it still lives.
TEST(FrameStress, APoolSlotIsNeverHandedOutWhileAFrameOfItLives) {
  constexpr uint64_t kFrames = 10000;
  for (const MemoryKind kind : {MemoryKind::Mem, MemoryKind::Shm}) {
    if (!is_available(kind)) continue;
    ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::image(64, 32, PixelFormat::Nv12));
    ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(layout, 3, kind));
    ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(2));
    std::array<FrameQueue, 2> queues;
    std::atomic<int> bad{0}, seen{0};
    std::thread a(consume, std::ref(queues[0]), false, std::ref(bad), std::ref(seen));
    std::thread b(consume, std::ref(queues[1]), true, std::ref(bad), std::ref(seen));
    std::array<uint64_t, 3> slots{};
    std::size_t distinct = 0;
    for (uint64_t n = 0; n < kFrames; ++n) {
      auto image = pool.acquire(std::chrono::seconds(30));
      ASSERT_TRUE(image.has_value()) << image.error().to_string();
      const uint64_t id = image->buffer_id();
      if (std::find(slots.begin(), slots.begin() + distinct, id) == slots.begin() + distinct) {
        ASSERT_LT(distinct, slots.size()) << "a pool of 3 handed out a 4th buffer identity " << id;
        slots[distinct++] = id;
      }
      {
        ASSERT_OK_AND_ASSIGN(const TensorMap map, image->map(CpuAccess::Write));
        const std::size_t size = static_cast<std::size_t>(layout.byte_extent(0).end);
        for (std::size_t i = 0; i < size; ++i) map.data()[i] = std::byte{pattern(n, i)};
      }
      ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(*image));
      image = Tensor::create({1}, DType::U8, MemoryKind::Mem);  // only the frame holds the slot now
      ASSERT_OK_AND_ASSIGN(std::vector<Frame> branches, tee.push(Frame{std::move(payload), {}, n, {}}));
      queues[0].push(std::move(branches[0]));
      queues[1].push(std::move(branches[1]));
    }
    queues[0].push(std::nullopt);
    queues[1].push(std::nullopt);
    a.join();
    b.join();
    EXPECT_EQ(bad.load(), 0) << to_string(kind) << ": frames whose bytes changed while a consumer held them";
    EXPECT_EQ(seen.load(), static_cast<int>(2 * kFrames));
    EXPECT_EQ(distinct, 3u) << "every slot was used, each as one buffer identity";
    EXPECT_EQ(pool.available(), 3u);
  }
}

}  // namespace
}  // namespace memhal
