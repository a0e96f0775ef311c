// The C API's handles and the few helpers every C entry point uses: a guard so no exception
// crosses into C, the thread's last error message, and checked vocabulary codes.
#pragma once

#include <memhal/memhal.h>

#include <memhal/memhal.hpp>
#include <new>
#include <optional>
#include <string>

struct memhal_tensor {
  memhal::Tensor tensor;
};
struct memhal_map {
  memhal::TensorMap map;
};
struct memhal_frame {
  memhal::Frame frame;
};
struct memhal_image_processor {
  memhal::ImageProcessor processor;
};
struct memhal_channel {
  memhal::ipc::Channel channel;
};
struct memhal_recorder {
  memhal::Recorder recorder;
};
struct memhal_replayer {
  memhal::Replayer replayer;
};
struct memhal_camera {
  memhal::V4l2Camera camera;
};

namespace memhal::c_api {

/// This thread's last error message.
const char* last_error();

/// Records `message` as this thread's last error and returns `code`.
int fail(ErrorCode code, std::string message);
inline int fail(const Error& error) {
  return fail(error.code(), error.message());
}

/// Runs `body` (which returns a status) with every exception turned into a status.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(ErrorCode::OutOfMemory, "out of memory");
  } catch (const std::exception& e) {
    return fail(ErrorCode::Internal, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    return fail(ErrorCode::Internal, "unexpected exception");
  }
}

/// A checked vocabulary code, or nothing (after recording the error).
template <Vocabulary E>
std::optional<E> checked(uint32_t value, const char* what) {
  auto known = from_code<E>(value);
  if (!known) fail(ErrorCode::InvalidArgument, std::string(what) + " code " + std::to_string(value) + " is unknown");
  return known;
}

/// MEMHAL_MEMORY_KIND_AUTO or a known kind; `ok` is false (error recorded) otherwise.
std::optional<MemoryKind> memory_choice(int32_t memory, bool& ok);

/// Sets a handle output to NULL, first thing in every function that has one, so that no
/// failure path (a NULL argument, an unknown code) leaves the caller's old value there.
template <class Handle>
void clear(Handle** out) noexcept {
  if (out != nullptr) *out = nullptr;
}

/// Stores `result`'s tensor in a new handle at `out`.
int give_tensor(Result<Tensor> result, memhal_tensor_t** out);

/// Writes `get(*handle)` to `out`: the body of every field getter of the C API.
template <class Handle, class Out, class Get>
int read_field(const Handle* handle, Out* out, const char* function, Get&& get) noexcept {
  if (handle == nullptr || out == nullptr) {
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": NULL argument");
  }
  *out = get(*handle);
  return MEMHAL_OK;
}

#define MEMHAL_C_REQUIRE(condition, message) \
  if (!(condition)) return ::memhal::c_api::fail(::memhal::ErrorCode::InvalidArgument, message)

}  // namespace memhal::c_api
