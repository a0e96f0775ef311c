// frame_checksums: a memhal C++ consumer of a Channel (memhalsink, a memhal program). Prints,
// for each frame, its PTS (as checksumsink does) and the SHA-1 of its planes' rows.
// Usage: frame_checksums SOCKET [MAX_FRAMES]   (stops at MAX_FRAMES, disconnecting, or at the end)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memhal/channel.hpp>
#include <memhal/memory_domain.hpp>
#include <thread>

#include "checksum.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: frame_checksums SOCKET [MAX_FRAMES]\n");
    return 2;
  }
  const long max_frames = argc > 2 ? std::atol(argv[2]) : -1;
  auto channel = memhal::ipc::Channel::connect(argv[1]);
  for (int tries = 0; !channel && tries < 200; ++tries) {  // the server may not be up yet
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    channel = memhal::ipc::Channel::connect(argv[1]);
  }
  if (!channel) {
    std::fprintf(stderr, "frame_checksums: %s\n", channel.error().message().c_str());
    return 1;
  }
  for (long n = 0; max_frames < 0 || n < max_frames; ++n) {
    auto frame = channel->receive_frame(std::chrono::seconds(30));
    if (!frame) {
      if (frame.error().code() == memhal::ErrorCode::Unavailable) return 0;
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
  }
  return 0;
}
