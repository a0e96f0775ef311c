// A frame's timing, sequence and metadata on the wire: shared by descriptors (and so
// recordings) and the channel's registered-buffer messages. Format: see memhal/descriptor.hpp.
#pragma once

#include <memhal/descriptor.hpp>

#include "ipc/wire.hpp"

namespace memhal::ipc {

/// Appends `fields`. `InvalidArgument` naming the key for metadata the format cannot carry.
Result<void> put_frame_fields(detail::WireWriter& out, const Descriptor::FrameFields& fields);

/// Reads frame fields written by `put_frame_fields` (version 1: no metadata). `Corrupt`, naming
/// `where`, for fields past the end, out-of-order keys or an unknown type.
Result<Descriptor::FrameFields> get_frame_fields(detail::WireReader& in, uint16_t version, std::string_view where);

}  // namespace memhal::ipc
