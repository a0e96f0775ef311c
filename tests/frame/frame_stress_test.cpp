// Many threads sharing, writing (copy-on-write) and dropping the payloads and metadata of a
// few frames at once. Meant for TSan (scripts/test.sh runs it in build/tsan): a data race in
// the reference counts or the copy-on-write paths shows up there as a report; here it checks
// that every native object and every lent buffer is released exactly once and that no write
// reached a shared original.
#include <memhal/tee.hpp>

#include <atomic>
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

}  // namespace
}  // namespace memhal
