// libFuzzer target: Descriptor::decode, then layout() and a re-encode that must round-trip.
#include <cstdlib>
#include <memhal/descriptor.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  auto decoded = memhal::ipc::Descriptor::decode(bytes);
  if (!decoded) return 0;
  (void)decoded->layout();
  (void)decoded->memory_description();
  auto encoded = decoded->encode();
  if (!encoded) return 0;
  auto again = memhal::ipc::Descriptor::decode(*encoded);
  if (!again || !(*again == *decoded)) std::abort();  // what decodes must re-encode identically
  return 0;
}
