// frame_checksums: a memhal C++ consumer of a Channel (memhalsink, a memhal program). Prints,
// for each frame, its PTS (as checksumsink does) and the SHA-1 of its planes' rows.
// Usage: frame_checksums SOCKET [MAX_FRAMES [hold]]   (stops at MAX_FRAMES (-1: none), disconnecting,
// or at the end; `hold` keeps every frame until then, as a consumer that never releases would)
// At the end it says on stderr how many frames came, in which memory kinds, over how many
// distinct buffers (a buffer the sender registers once and shares again counts once).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memhal/channel.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/vocabulary.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "checksum.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: frame_checksums SOCKET [MAX_FRAMES]\n");
    return 2;
  }
  const long max_frames = argc > 2 ? std::atol(argv[2]) : -1;
  const bool hold = argc > 3 && std::string(argv[3]) == "hold";
  std::vector<memhal::Frame> held;
  auto channel = memhal::ipc::Channel::connect(argv[1]);
  for (int tries = 0; !channel && tries < 200; ++tries) {  // the server may not be up yet
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    channel = memhal::ipc::Channel::connect(argv[1]);
  }
  if (!channel) {
    std::fprintf(stderr, "frame_checksums: %s\n", channel.error().message().c_str());
    return 1;
  }
  long frames = 0;
  std::set<std::string> kinds;
  std::set<uint64_t> buffers;
  auto summary = [&] {
    std::string names;
    for (const auto& kind : kinds) names += (names.empty() ? "" : ",") + kind;
    std::fprintf(stderr, "frame_checksums: frames=%ld memory=%s buffers=%zu\n", frames, names.c_str(), buffers.size());
    return 0;
  };
  for (long n = 0; max_frames < 0 || n < max_frames; ++n) {
    auto frame = channel->receive_frame(std::chrono::seconds(30));
    if (!frame) {
      if (frame.error().code() == memhal::ErrorCode::Unavailable) return summary();
      std::fprintf(stderr, "frame_checksums: %s\n", frame.error().message().c_str());
      return 1;
    }
    auto tensor = frame->payload.to_tensor();
    auto sha1 = tensor ? memhal::gst_test::plane_sha1(*tensor)
                       : memhal::Result<std::string>(memhal::unexpected(tensor.error()));
    if (!sha1) {
      std::fprintf(stderr, "frame_checksums: %s\n", sha1.error().message().c_str());
      return 1;
    }
    memhal::gst_test::print_line(frame->timing.pts.value_or(0), *sha1);
    ++frames;
    if (hold) held.push_back(std::move(*frame));
    kinds.insert(std::string(memhal::to_string(tensor->memory())));
    buffers.insert(tensor->buffer_id());
  }
  return summary();
}
