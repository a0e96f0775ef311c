#include <memhal/memory_domain.hpp>

#include <utility>

#include "core/strings.hpp"

namespace memhal {
namespace {

// kind() is the variant index: each alternative must sit at its own code.
template <std::size_t... I>
constexpr bool alternatives_in_code_order(std::index_sequence<I...>) {
  return ((code(std::variant_alternative_t<I, MemoryDomain::Payload>::kKind) == I) && ...);
}
constexpr std::size_t kAlternatives = std::variant_size_v<MemoryDomain::Payload>;
static_assert(kAlternatives == VocabularyTraits<MemoryDomainKind>::entries.size(),
              "one MemoryDomain alternative per MemoryDomainKind");
static_assert(alternatives_in_code_order(std::make_index_sequence<kAlternatives>{}),
              "MemoryDomain alternatives must follow MemoryDomainKind codes");

std::string shape_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string details(const SystemSlice& slice) {
  return detail::cat(slice.size(), " bytes, ", to_string(slice.ownership()));
}
std::string details(const SystemView& view) {
  return detail::cat(to_string(view.view().dtype()), " ", shape_string(view.view().shape()),
                     view.is_contiguous() ? ", contiguous" : ", strided");
}
std::string details(const OwnedDmaBuf& dmabuf) {
  return detail::cat(to_string(dmabuf.format), " ", dmabuf.width, "x", dmabuf.height, ", ", dmabuf.plane_count,
                     dmabuf.plane_count == 1 ? " plane" : " planes", ", modifier 0x", std::hex, dmabuf.modifier);
}
std::string details(const OwnedCudaBuffer& cuda) {
  return detail::cat(cuda.format ? to_string(*cuda.format) : std::string_view("tensor"), " ", cuda.width, "x",
                     cuda.height, " on device ", cuda.device_ordinal);
}
std::string details(const OwnedWgpuBuffer& buffer) {
  return detail::cat(buffer.size, " bytes");
}
std::string details(const OwnedWebGPUBuffer& buffer) {
  return detail::cat(buffer.size, " bytes");
}
template <class Texture>
std::string details(const Texture& texture) {
  return detail::cat(texture.width, "x", texture.height);
}

std::string_view hint(MemoryDomainKind kind) {
  switch (kind) {
    case MemoryDomainKind::System: return "";
    case MemoryDomainKind::SystemView:
      return "materialise the view first (require_system_bytes does) or insert a converter";
    case MemoryDomainKind::DmaBuf: return "map or download it to system memory first, or insert a converter";
    default: return "download it to system memory first, or insert a converter";
  }
}

Unexpected refuse(std::string_view category, const MemoryDomain& domain, std::string_view wants) {
  return detail::fail(ErrorCode::UnsupportedDomain, category, " needs ", wants, " but the frame arrived as ",
                      domain.describe(), ": ", hint(domain.kind()), " before ", category);
}

}  // namespace

std::string to_string(DomainSet set) {
  std::string out;
  for (const MemoryDomainKind kind : all<MemoryDomainKind>()) {
    if (set.contains(kind)) out += (out.empty() ? "" : "|") + std::string(to_string(kind));
  }
  return out;
}

std::string MemoryDomain::describe() const {
  return std::visit(
      [](const auto& payload) { return detail::cat(to_string(payload.kKind), " (", details(payload), ")"); }, payload_);
}

std::optional<std::span<const std::byte>> MemoryDomain::as_system_slice() const noexcept {
  if (const auto* slice = std::get_if<SystemSlice>(&payload_)) return slice->bytes();
  return std::nullopt;
}

Result<const SystemSlice*> MemoryDomain::require_system_slice(std::string_view category) const {
  if (const auto* slice = std::get_if<SystemSlice>(&payload_)) return slice;
  return refuse(category, *this, "system memory");
}

Result<SystemSlice*> MemoryDomain::require_system_slice(std::string_view category) {
  if (auto* slice = std::get_if<SystemSlice>(&payload_)) return slice;
  return refuse(category, *this, "system memory");
}

Result<SharedBytes> MemoryDomain::require_system_bytes(std::string_view category) const {
  if (const auto* slice = std::get_if<SystemSlice>(&payload_)) return slice->shared_bytes();
  if (const auto* view = std::get_if<SystemView>(&payload_)) return view->packed_bytes();
  return refuse(category, *this, "system memory or a system view");
}

Result<MemoryDomain> MemoryDomain::share() const {
  return std::visit(
      [](const auto& payload) -> Result<MemoryDomain> {
        if constexpr (std::is_same_v<std::decay_t<decltype(payload)>, SystemSlice>) {
          MEMHAL_ASSIGN_OR_RETURN(SystemSlice shared, payload.share());
          return MemoryDomain(std::move(shared));
        } else {
          return MemoryDomain(payload.share());
        }
      },
      payload_);
}

void MemoryDomain::make_shareable() noexcept {
  if (auto* slice = std::get_if<SystemSlice>(&payload_)) slice->make_shareable();
}

}  // namespace memhal
