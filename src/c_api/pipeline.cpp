// Frames, tees, image processing, channels and recordings for C.
#include <climits>
#include <vector>

#include "c_api/c_api.hpp"

using namespace memhal;
using memhal::c_api::checked;
using memhal::c_api::fail;
using memhal::c_api::give_tensor;
using memhal::c_api::guarded;

namespace {

constexpr int kInvalid = static_cast<int>(ErrorCode::InvalidArgument);

std::optional<std::chrono::milliseconds> timeout_of(int timeout_ms) {
  if (timeout_ms < 0) return std::nullopt;
  return std::chrono::milliseconds(timeout_ms);
}

// The C options as the C++ ones; false (error recorded) for a value outside its enum.
bool convert_options(const memhal_convert_options_t& in, ConvertOptions& out) {
  if (in.reserved0 != 0) {
    fail(ErrorCode::InvalidArgument, "memhal_image_processor_convert: options.reserved0 is " +
                                         std::to_string(in.reserved0) + "; reserved fields must be 0");
    return false;
  }
  for (std::size_t i = 0; i < std::size(in.reserved1); ++i) {
    if (in.reserved1[i] != 0) {
      fail(ErrorCode::InvalidArgument, "memhal_image_processor_convert: options.reserved1[" + std::to_string(i) +
                                           "] is " + std::to_string(in.reserved1[i]) + "; reserved fields must be 0");
      return false;
    }
  }
  // Each option field through its vocabulary: an unknown code is refused, naming the field.
  bool ok = true;
  auto take = [&ok]<class E>(E& target, uint32_t value, const char* field) {
    auto known = ok ? checked<E>(value, field) : std::nullopt;
    if (known) target = *known;
    ok = ok && known.has_value();
  };
  take(out.flip, in.flip, "memhal_convert_options_t.flip: Flip");
  take(out.rotation, in.rotation, "memhal_convert_options_t.rotation: Rotation");
  take(out.resize, in.resize, "memhal_convert_options_t.resize: ResizeMode");
  take(out.interpolation, in.interpolation, "memhal_convert_options_t.interpolation: Interpolation");
  take(out.matrix, in.matrix, "memhal_convert_options_t.matrix: ColorMatrix");
  take(out.range, in.range, "memhal_convert_options_t.range: ColorRange");
  if (!ok) return false;
  if (in.has_crop) out.crop = Rect{in.crop_x, in.crop_y, in.crop_width, in.crop_height};
  for (int i = 0; i < 4; ++i) {
    out.pad[i] = in.pad[i];
    out.mean[i] = in.mean[i];
    out.std[i] = in.std[i];
  }
  out.swap_rb = in.swap_rb != 0;
  return true;
}

}  // namespace

extern "C" {

int memhal_frame_from_tensor(const memhal_tensor_t* tensor, int64_t pts, uint64_t sequence, memhal_frame_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(tensor != nullptr && out != nullptr, "memhal_frame_from_tensor: NULL argument");
    auto payload = MemoryDomain::from_tensor(tensor->tensor);
    if (!payload) return fail(payload.error());
    FrameTiming timing;
    if (pts != INT64_MIN) timing.pts = pts;
    *out = new memhal_frame{Frame{std::move(*payload), timing, sequence, {}}};
    return MEMHAL_OK;
  });
}

int memhal_frame_to_tensor(const memhal_frame_t* frame, memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(frame != nullptr && out != nullptr, "memhal_frame_to_tensor: NULL argument");
    return give_tensor(frame->frame.payload.to_tensor(), out);
  });
}

int memhal_frame_domain_kind(const memhal_frame_t* frame, uint32_t* out) {
  return c_api::read_field(frame, out, "memhal_frame_domain_kind",
                           [](const auto& x) { return code(x.frame.payload.kind()); });
}

int memhal_frame_pts(const memhal_frame_t* frame, int64_t* out) {
  return c_api::read_field(frame, out, "memhal_frame_pts",
                           [](const auto& x) { return x.frame.timing.pts.value_or(INT64_MIN); });
}

int memhal_frame_sequence(const memhal_frame_t* frame, uint64_t* out) {
  return c_api::read_field(frame, out, "memhal_frame_sequence", [](const auto& x) { return x.frame.sequence; });
}

void memhal_frame_free(memhal_frame_t* frame) {
  delete frame;
}

int memhal_tee_push(const memhal_frame_t* frame, size_t branches, memhal_frame_t** out) {
  // Only out[0] is cleared: `branches` may be the bad argument, and writing that many entries
  // of a shorter array would be the crash the status code is there to prevent.
  if (branches > 0) c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(frame != nullptr && out != nullptr, "memhal_tee_push: NULL argument");
    auto tee = Tee::create(branches);
    if (!tee) return fail(tee.error());
    auto copy = frame->frame.share();
    if (!copy) return fail(copy.error());
    auto pushed = tee->push(std::move(*copy));
    if (!pushed) return fail(pushed.error());
    for (size_t i = 0; i < branches; ++i) out[i] = new memhal_frame{std::move((*pushed)[i])};
    return MEMHAL_OK;
  });
}

memhal_convert_options_t memhal_convert_options_default(void) {
  const ConvertOptions defaults;
  memhal_convert_options_t options{};
  options.flip = code(defaults.flip);
  options.rotation = code(defaults.rotation);
  options.resize = code(defaults.resize);
  options.interpolation = code(defaults.interpolation);
  options.matrix = code(defaults.matrix);
  options.range = code(defaults.range);
  for (int i = 0; i < 4; ++i) {
    options.pad[i] = defaults.pad[i];
    options.mean[i] = defaults.mean[i];
    options.std[i] = defaults.std[i];
  }
  return options;
}

int memhal_image_processor_create(unsigned threads, memhal_image_processor_t** out) {
  return memhal_image_processor_create_on(threads, MEMHAL_IMAGE_BACKEND_AUTO, out);
}

int memhal_image_processor_create_on(unsigned threads, int backend, memhal_image_processor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr, "memhal_image_processor_create: out is NULL");
    std::optional<ImageBackend> pinned;
    if (backend != MEMHAL_IMAGE_BACKEND_AUTO) {
      pinned = backend >= 0 ? from_code<ImageBackend>(static_cast<uint32_t>(backend)) : std::nullopt;
      MEMHAL_C_REQUIRE(pinned.has_value(), "memhal_image_processor_create_on: backend " + std::to_string(backend) +
                                               " is neither MEMHAL_IMAGE_BACKEND_AUTO nor an ImageBackend code");
    }
    auto processor = ImageProcessor::create({.threads = threads, .backend = pinned});
    if (!processor) return fail(processor.error());
    *out = new memhal_image_processor{std::move(*processor)};
    return MEMHAL_OK;
  });
}

int memhal_image_processor_backend(const memhal_image_processor_t* processor, int* out) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(processor != nullptr && out != nullptr, "memhal_image_processor_backend: NULL argument");
    *out = static_cast<int>(code(processor->processor.backend()));
    return MEMHAL_OK;
  });
}

void memhal_image_processor_free(memhal_image_processor_t* processor) {
  delete processor;
}

int memhal_image_processor_convert(memhal_image_processor_t* processor, const memhal_tensor_t* src,
                                   memhal_tensor_t* dst, const memhal_convert_options_t* options) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(processor != nullptr && src != nullptr && dst != nullptr,
                     "memhal_image_processor_convert: NULL argument");
    ConvertOptions converted;
    if (options != nullptr && !convert_options(*options, converted)) return kInvalid;
    auto done = processor->processor.convert(src->tensor, dst->tensor, converted);
    return done ? MEMHAL_OK : fail(done.error());
  });
}

int memhal_image_processor_convert_batch(memhal_image_processor_t* processor, const memhal_tensor_t* const* srcs,
                                         size_t count, memhal_tensor_t* dst, const memhal_convert_options_t* options) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(processor != nullptr && dst != nullptr && (srcs != nullptr || count == 0),
                     "memhal_image_processor_convert_batch: NULL argument");
    std::vector<Tensor> frames;
    frames.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      MEMHAL_C_REQUIRE(srcs[i] != nullptr,
                       "memhal_image_processor_convert_batch: srcs[" + std::to_string(i) + "] is NULL");
      frames.push_back(srcs[i]->tensor);
    }
    ConvertOptions converted;
    if (options != nullptr && !convert_options(*options, converted)) return kInvalid;
    auto done = processor->processor.convert_batch(frames, dst->tensor, converted);
    return done ? MEMHAL_OK : fail(done.error());
  });
}

int memhal_channel_pair(memhal_channel_t** a, memhal_channel_t** b) {
  c_api::clear(a);
  c_api::clear(b);
  return guarded([&] {
    MEMHAL_C_REQUIRE(a != nullptr && b != nullptr, "memhal_channel_pair: NULL output");
    auto ends = ipc::Channel::pair();
    if (!ends) return fail(ends.error());
    *a = new memhal_channel{std::move(ends->first)};
    *b = new memhal_channel{std::move(ends->second)};
    return MEMHAL_OK;
  });
}

int memhal_channel_connect(const char* path, memhal_channel_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(path != nullptr && out != nullptr, "memhal_channel_connect: NULL argument");
    auto channel = ipc::Channel::connect(path);
    if (!channel) return fail(channel.error());
    *out = new memhal_channel{std::move(*channel)};
    return MEMHAL_OK;
  });
}

int memhal_channel_adopt(int socket, memhal_channel_t** out) {
  UniqueFd owned(socket);  // consumed, on every path
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(out != nullptr, "memhal_channel_adopt: out is NULL");
    auto channel = ipc::Channel::adopt(std::move(owned));
    if (!channel) return fail(channel.error());
    *out = new memhal_channel{std::move(*channel)};
    return MEMHAL_OK;
  });
}

int memhal_channel_fd(const memhal_channel_t* channel, int* out) {
  return c_api::read_field(channel, out, "memhal_channel_fd", [](const auto& x) { return x.channel.fd(); });
}

void memhal_channel_free(memhal_channel_t* channel) {
  delete channel;
}

int memhal_channel_send(memhal_channel_t* channel, const memhal_tensor_t* tensor) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(channel != nullptr && tensor != nullptr, "memhal_channel_send: NULL argument");
    auto sent = channel->channel.send(tensor->tensor);
    return sent ? MEMHAL_OK : fail(sent.error());
  });
}

int memhal_channel_receive(memhal_channel_t* channel, int timeout_ms, memhal_tensor_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(channel != nullptr && out != nullptr, "memhal_channel_receive: NULL argument");
    return give_tensor(channel->channel.receive(timeout_of(timeout_ms)), out);
  });
}

int memhal_channel_send_frame(memhal_channel_t* channel, const memhal_frame_t* frame) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(channel != nullptr && frame != nullptr, "memhal_channel_send_frame: NULL argument");
    auto sent = channel->channel.send(frame->frame);
    return sent ? MEMHAL_OK : fail(sent.error());
  });
}

int memhal_channel_receive_frame(memhal_channel_t* channel, int timeout_ms, memhal_frame_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(channel != nullptr && out != nullptr, "memhal_channel_receive_frame: NULL argument");
    auto frame = channel->channel.receive_frame(timeout_of(timeout_ms));
    if (!frame) return fail(frame.error());
    *out = new memhal_frame{std::move(*frame)};
    return MEMHAL_OK;
  });
}

int memhal_recorder_create(const char* path, memhal_recorder_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(path != nullptr && out != nullptr, "memhal_recorder_create: NULL argument");
    auto recorder = Recorder::create(path);
    if (!recorder) return fail(recorder.error());
    *out = new memhal_recorder{std::move(*recorder)};
    return MEMHAL_OK;
  });
}

int memhal_recorder_write(memhal_recorder_t* recorder, const memhal_tensor_t* tensor, int64_t timestamp_ns) {
  return guarded([&] {
    MEMHAL_C_REQUIRE(recorder != nullptr && tensor != nullptr, "memhal_recorder_write: NULL argument");
    auto written = recorder->recorder.write(tensor->tensor, timestamp_ns);
    return written ? MEMHAL_OK : fail(written.error());
  });
}

void memhal_recorder_free(memhal_recorder_t* recorder) {
  delete recorder;
}

int memhal_replayer_open(const char* path, memhal_replayer_t** out) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(path != nullptr && out != nullptr, "memhal_replayer_open: NULL argument");
    auto replayer = Replayer::open(path);
    if (!replayer) return fail(replayer.error());
    *out = new memhal_replayer{std::move(*replayer)};
    return MEMHAL_OK;
  });
}

int memhal_replayer_next(memhal_replayer_t* replayer, int32_t memory, memhal_tensor_t** out, int64_t* timestamp_ns) {
  c_api::clear(out);
  return guarded([&] {
    MEMHAL_C_REQUIRE(replayer != nullptr && out != nullptr, "memhal_replayer_next: NULL argument");
    bool ok = false;
    auto kind = c_api::memory_choice(memory, ok);
    if (!ok) return kInvalid;
    auto record = replayer->replayer.next();
    if (!record) return fail(record.error());
    if (!record->has_value()) return MEMHAL_OK;
    if (timestamp_ns != nullptr) *timestamp_ns = (*record)->timestamp_ns;
    return give_tensor((*record)->materialize(kind), out);
  });
}

void memhal_replayer_free(memhal_replayer_t* replayer) {
  delete replayer;
}

}  // extern "C"
