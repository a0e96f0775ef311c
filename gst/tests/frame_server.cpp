// frame_server: a memhal program serving frames on a Channel listener, for memhalsrc to read.
// Usage: frame_server SOCKET FORMAT FRAMES   (FORMAT: a memhal pixel format name, e.g. nv12)
// Prints each frame's PTS and plane SHA-1 as it sends it; waits for one consumer (30 s).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memhal/channel.hpp>
#include <memhal/frame.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/tensor_pool.hpp>
#include <memhal/vocabulary.hpp>

#include "checksum.hpp"

namespace {
memhal::Result<int> serve(const char* socket, const char* format_name, long frames) {
  using namespace memhal;
  const auto format = from_string<PixelFormat>(format_name);
  if (!format) return unexpected(Error(ErrorCode::InvalidArgument, std::string("unknown pixel format ") + format_name));
  MEMHAL_ASSIGN_OR_RETURN(const Layout layout, Layout::image(320, 240, *format));
  MEMHAL_ASSIGN_OR_RETURN(TensorPool pool, TensorPool::create(layout, 4, MemoryKind::Shm));
  MEMHAL_ASSIGN_OR_RETURN(ipc::Listener listener, ipc::Listener::bind(socket));
  MEMHAL_ASSIGN_OR_RETURN(ipc::Channel channel, listener.accept(std::chrono::seconds(30)));
  constexpr int64_t kDuration = 40'000'000;  // 25 frames a second
  for (long i = 0; i < frames; ++i) {
    MEMHAL_ASSIGN_OR_RETURN(Tensor tensor, pool.acquire(std::chrono::seconds(30)));
    {
      MEMHAL_ASSIGN_OR_RETURN(TensorMap map, tensor.map(CpuAccess::Write));
      auto* base = const_cast<std::byte*>(gst_detail::buffer_base(map, tensor.layout()));
      for (const auto& plane : gst_detail::planes_of(tensor.layout())) {
        for (int64_t row = 0; row < plane.height; ++row) {
          for (int64_t x = 0; x < plane.row_bytes; ++x) {
            base[plane.offset + row * plane.pitch + x] = static_cast<std::byte>((x * 3 + row * 7 + i * 11) & 0xff);
          }
        }
      }
    }
    MEMHAL_ASSIGN_OR_RETURN(const std::string sha1, gst_test::plane_sha1(tensor));
    MEMHAL_ASSIGN_OR_RETURN(MemoryDomain payload, MemoryDomain::from_tensor(tensor));
    Frame frame{std::move(payload), FrameTiming{i * kDuration, std::nullopt, kDuration}, static_cast<uint64_t>(i), {}};
    auto sent = channel.send(frame);
    if (!sent && sent.error().code() == ErrorCode::Unavailable) return 0;  // the consumer left
    MEMHAL_TRY(sent);
    gst_test::print_line(i * kDuration, sha1);
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: frame_server SOCKET FORMAT FRAMES\n");
    return 2;
  }
  auto result = serve(argv[1], argv[2], std::atol(argv[3]));
  if (!result) {
    std::fprintf(stderr, "frame_server: %s\n", result.error().message().c_str());
    return 1;
  }
  std::fflush(stdout);
  return *result;
}
