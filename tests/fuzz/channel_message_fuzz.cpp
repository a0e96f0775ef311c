// libFuzzer target: the channel's message parser, every message type (the first byte picks how
// many fds "arrived"); a descriptor it accepts (a tensor's, or a share's view) is checked too.
#include <memhal/channel.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto bytes = std::as_bytes(std::span<const uint8_t>(data + 1, size - 1));
  auto message = memhal::ipc::parse_channel_message(bytes, data[0] % 6);
  if (message && message->descriptor) (void)message->descriptor->layout();
  return 0;
}
