#include <memhal/frame.hpp>
#include <memhal/metadata.hpp>
#include <memhal/tee.hpp>

#include "core/checked_vector.hpp"
#include "core/strings.hpp"

namespace memhal {

// ---- Metadata ----

const Metadata::Entry* Metadata::find(std::string_view key) const noexcept {
  if (!table_) return nullptr;
  const auto it = table_->find(key);
  return it != table_->end() ? &it->second : nullptr;
}

Metadata::Table& Metadata::writable_table() {
  // Entries are immutable, so a private table copies only the map, never the values.
  if (!table_) {
    table_ = detail::Counted<Table>::make();
  } else if (!table_.unique()) {
    table_ = detail::Counted<Table>::make(*table_);
  }
  return *table_;
}

void Metadata::put(std::string key, Entry entry) {
  writable_table().insert_or_assign(std::move(key), std::move(entry));
}

bool Metadata::erase(std::string_view key) {
  if (find(key) == nullptr) return false;
  Table& table = writable_table();
  table.erase(table.find(key));
  return true;
}

std::vector<std::string> Metadata::keys() const {
  std::vector<std::string> out;
  if (table_) {
    for (const auto& [key, entry] : *table_) out.push_back(key);
  }
  return out;
}

// ---- Frame ----

Result<Frame> Frame::share() const {
  MEMHAL_ASSIGN_OR_RETURN(MemoryDomain shared, payload.share());
  return Frame{std::move(shared), timing, sequence, metadata};
}

// ---- Tee ----

Result<Tee> Tee::create(std::size_t branches) {
  if (branches == 0) return detail::fail(ErrorCode::InvalidArgument, "a tee needs at least one branch");
  return Tee(branches);
}

Result<std::vector<Frame>> Tee::push(Frame frame) const {
  std::vector<Frame> out;
  MEMHAL_TRY(detail::checked_reserve(out, branches_, "tee push to ", branches_, " branches"));
  frame.make_shareable();
  for (std::size_t i = 0; i + 1 < branches_; ++i) {
    MEMHAL_ASSIGN_OR_RETURN(Frame share, frame.share());
    out.push_back(std::move(share));
  }
  out.push_back(std::move(frame));
  return out;
}

}  // namespace memhal
