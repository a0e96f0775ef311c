// An outside program using the installed memhal: allocate, view, map, materialize.
#include <cstdio>
#include <memhal/memhal.hpp>

int main() {
  auto tensor = memhal::Tensor::create({2, 3}, memhal::DType::U8, memhal::MemoryKind::Mem, "consumer");
  if (!tensor) {
    std::fprintf(stderr, "create failed: %s\n", tensor.error().to_string().c_str());
    return 1;
  }
  {
    auto map = tensor->map(memhal::CpuAccess::Write);
    if (!map) return 1;
    auto bytes = map->span<uint8_t>();
    if (!bytes) return 1;
    for (std::size_t i = 0; i < bytes->size(); ++i) (*bytes)[i] = static_cast<uint8_t>(i);
  }
  auto flipped = tensor->flip(1).and_then([](const memhal::Tensor& t) { return t.materialize(); });
  if (!flipped) return 1;
  auto map = flipped->map(memhal::CpuAccess::Read);
  auto bytes = map->span<const uint8_t>();
  if (!bytes || (*bytes)[0] != 2 || (*bytes)[5] != 3) return 1;
  std::printf("consumer ok: memhal %s, %s\n", MEMHAL_VERSION_STRING,
              std::string(memhal::to_string(tensor->memory())).c_str());
  return 0;
}
