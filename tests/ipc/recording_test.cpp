#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memhal/memory_domain.hpp>
#include <memhal/recording.hpp>
#include <numeric>
#include <vector>

#include "test_support.hpp"

namespace memhal {
namespace {

class RecordingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/memhal_recording_XXXXXX";
    const int fd = ::mkstemp(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = name;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::vector<char> file_bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  void write_file(const std::vector<char>& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::string path_;
};

Tensor counting_tensor(std::initializer_list<int64_t> shape, uint8_t start) {
  auto tensor = *Tensor::create(shape, DType::U8, MemoryKind::Mem, "counting");
  auto map = tensor.map(CpuAccess::Write);
  auto bytes = *map->span<uint8_t>();
  std::iota(bytes.begin(), bytes.end(), start);
  return tensor;
}

std::vector<uint8_t> contents(const Tensor& tensor) {
  auto dense = *tensor.materialize(MemoryKind::Mem);
  auto map = dense.map(CpuAccess::Read);
  auto bytes = *map->span<const uint8_t>();
  return {bytes.begin(), bytes.end()};
}

TEST_F(RecordingTest, TensorsComeBackWithTheirBytesAndNames) {
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    ASSERT_OK(recorder.write(counting_tensor({4, 6}, 0), 1000));
    Tensor base = counting_tensor({3, 5}, 100);
    ASSERT_OK(recorder.write(*base.flip(1), 2000));  // strided views are stored densely
    EXPECT_EQ(recorder.records_written(), 2u);
  }
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  ASSERT_OK_AND_ASSIGN(auto first, replayer.next());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->index, 0u);
  EXPECT_EQ(first->timestamp_ns, 1000);
  EXPECT_EQ(first->descriptor.memory_name, "mem");
  EXPECT_EQ(first->descriptor.name, "counting");
  ASSERT_OK_AND_ASSIGN(Tensor a, first->materialize());
  EXPECT_EQ(contents(a), contents(counting_tensor({4, 6}, 0)));
  ASSERT_OK_AND_ASSIGN(auto second, replayer.next());
  ASSERT_TRUE(second.has_value());
  ASSERT_OK_AND_ASSIGN(Tensor b, second->materialize());
  EXPECT_EQ(contents(b), contents(*counting_tensor({3, 5}, 100).flip(1)));
  ASSERT_OK_AND_ASSIGN(auto end, replayer.next());
  EXPECT_FALSE(end.has_value());
}

TEST_F(RecordingTest, MultiPlaneImagesRoundTrip) {
  ASSERT_OK_AND_ASSIGN(Tensor nv12, Tensor::image(16, 8, PixelFormat::Nv12, MemoryKind::Mem));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, nv12.map(CpuAccess::Write));
    for (int i = 0; i < 64 * 8; ++i) map.plane(0)[i] = std::byte(i);
    for (int i = 0; i < 64 * 4; ++i) map.plane(1)[i] = std::byte(255 - i);
  }
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    ASSERT_OK(recorder.write(nv12, 5));
  }
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  ASSERT_OK_AND_ASSIGN(auto record, replayer.next());
  ASSERT_OK_AND_ASSIGN(Tensor back, record->materialize());
  EXPECT_EQ(back.pixel_format(), PixelFormat::Nv12);
  EXPECT_TRUE(back.layout() == nv12.layout()) << "planes keep their offsets and pitches";
  ASSERT_OK_AND_ASSIGN(TensorMap a, nv12.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(TensorMap b, back.map(CpuAccess::Read));
  for (int row = 0; row < 8; ++row) EXPECT_EQ(std::memcmp(a.plane(0) + row * 64, b.plane(0) + row * 64, 16), 0);
  for (int row = 0; row < 4; ++row) EXPECT_EQ(std::memcmp(a.plane(1) + row * 64, b.plane(1) + row * 64, 16), 0);
}

TEST_F(RecordingTest, FramesComeBackWithTheirImageTimingSequenceAndMetadata) {
  // Rows padded to 64 bytes (a frame), then planes in buffers of their own (a bare tensor):
  // the records keep all of it.
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(20, 6, PixelFormat::I420, MemoryKind::Shm, DType::U8, 64));
  ASSERT_OK_AND_ASSIGN(Tensor split,
                       Tensor::image(20, 6, PixelFormat::I420, MemoryKind::Shm, DType::U8, 64, PlaneBuffers::PerPlane));
  for (const Tensor* t : {&image, &split}) {
    ASSERT_OK_AND_ASSIGN(TensorMap map, t->map(CpuAccess::Write));
    for (std::size_t p = 0; p < 3; ++p) map.plane(p)[t->layout().planes()[p].pitch + 1] = std::byte(10 + p);
  }
  ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(image));
  Frame frame{std::move(payload), {5000, 4000, 33}, 12, {}};
  frame.metadata.set("camera", std::string("rear"));
  frame.metadata.set("exposure_us", int64_t{8000});
  frame.metadata.set("gains", std::vector<uint8_t>{1, 2});
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    ASSERT_OK(recorder.write(frame, 77));
    ASSERT_OK(recorder.write(split, 78));
    struct Local {};
    frame.metadata.set("pointer", Local{});
    EXPECT_ERROR(ErrorCode::InvalidArgument, recorder.write(frame, 79));
  }
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  ASSERT_OK_AND_ASSIGN(auto record, replayer.next());
  ASSERT_TRUE(record.has_value() && record->descriptor.frame.has_value());
  EXPECT_EQ(record->descriptor.memory_name, "shm");
  ASSERT_OK_AND_ASSIGN(Frame back, record->materialize_frame(MemoryKind::Mem));
  EXPECT_EQ(back.sequence, 12u);
  EXPECT_TRUE(back.timing == frame.timing);
  EXPECT_EQ(*back.metadata.get<std::string>("camera"), "rear");
  EXPECT_EQ(*back.metadata.get<int64_t>("exposure_us"), 8000);
  EXPECT_EQ(*back.metadata.get<std::vector<uint8_t>>("gains"), (std::vector<uint8_t>{1, 2}));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, back.payload.to_tensor());
  EXPECT_TRUE(tensor.layout() == image.layout()) << "format, planes, offsets, pitches and buffers";
  ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(map.const_plane(p)[image.layout().planes()[p].pitch + 1], std::byte(10 + p)) << p;
  }
  ASSERT_OK_AND_ASSIGN(auto bare, replayer.next());
  ASSERT_TRUE(bare.has_value());
  EXPECT_FALSE(bare->descriptor.frame.has_value());
  EXPECT_ERROR(ErrorCode::InvalidArgument, bare->materialize_frame());
  ASSERT_OK_AND_ASSIGN(Tensor planes, bare->materialize(MemoryKind::Mem));
  EXPECT_TRUE(planes.layout() == split.layout());
  ASSERT_OK_AND_ASSIGN(TensorMap split_map, planes.map(CpuAccess::Read));
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(split_map.const_plane(p)[split.layout().planes()[p].pitch + 1], std::byte(10 + p)) << p;
  }
  ASSERT_OK_AND_ASSIGN(auto end, replayer.next());
  EXPECT_FALSE(end.has_value()) << "the refused frame wrote nothing";
}

TEST_F(RecordingTest, VersionOneRecordingsAreStillRead) {
  // Written by the version 1 recorder: a 64x32 NV12 image of mem, stored densely.
  std::ifstream in(std::string(MEMHAL_TEST_DATA_DIR) + "/fuzz/corpus/recording/seed1", std::ios::binary);
  write_file({std::istreambuf_iterator<char>(in), {}});
  ASSERT_EQ(file_bytes()[8], 1) << "the file is a version 1 recording";
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  ASSERT_OK_AND_ASSIGN(auto record, replayer.next());
  ASSERT_TRUE(record.has_value());
  ASSERT_OK_AND_ASSIGN(Tensor tensor, record->materialize(MemoryKind::Mem));
  EXPECT_EQ(tensor.pixel_format(), PixelFormat::Nv12);
  EXPECT_EQ(tensor.layout().planes()[1].offset, 64 * 32) << "planes packed, as version 1 stored them";
}

TEST_F(RecordingTest, DeviceMemoryWithoutBytesExplainsWhyItCannotMaterialise) {
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    ipc::Descriptor cuda;
    cuda.memory_code = code(MemoryKind::Cuda);
    cuda.memory_name = "cuda";
    cuda.dtype_code = code(DType::F32);
    cuda.shape = {1, 3, 4, 4};
    cuda.strides = {192, 64, 16, 4};
    ASSERT_OK(recorder.append(cuda, std::nullopt, 7));
  }
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  ASSERT_OK_AND_ASSIGN(auto record, replayer.next());
  ASSERT_TRUE(record.has_value());
  EXPECT_FALSE(record->has_payload);
  auto tensor = record->materialize();
  EXPECT_ERROR(ErrorCode::Unavailable, tensor);
  EXPECT_NE(tensor.error().message().find("recorded as cuda without bytes: cannot materialise here"), std::string::npos)
      << tensor.error().message();
}

TEST_F(RecordingTest, UnknownBackingFromANewerProducerIsNamedAndItsBytesStillLoad) {
  const std::vector<std::byte> payload(8, std::byte{9});
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    ipc::Descriptor future;
    future.memory_code = 40;
    future.memory_name = "metalbuffer";
    future.dtype_code = code(DType::U8);
    future.shape = {8};
    future.strides = {1};
    future.buffer_sizes = {8};
    ASSERT_OK(recorder.append(future, std::span<const std::byte>(payload), 1));
  }
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  ASSERT_OK_AND_ASSIGN(auto record, replayer.next());
  EXPECT_EQ(record->descriptor.memory_description(), "metalbuffer (code 40, unknown to this build)");
  ASSERT_OK_AND_ASSIGN(Tensor tensor, record->materialize(MemoryKind::Mem));
  EXPECT_NE(tensor.allocation_notes().find("recorded as metalbuffer (code 40"), std::string::npos)
      << tensor.allocation_notes();
}

TEST_F(RecordingTest, CompressedOrTiledRecordsAreListedButRefusedWhenMaterialised) {
  const std::vector<std::byte> payload(64, std::byte{5});
  ipc::Descriptor tiled;
  tiled.memory_code = code(MemoryKind::DmaBuf);
  tiled.memory_name = "dmabuf";
  tiled.dtype_code = code(DType::U8);
  tiled.shape = {64};
  tiled.strides = {1};
  tiled.buffer_sizes = {64};
  tiled.drm_modifier = (uint64_t{1} << 56) | 1;  // I915_FORMAT_MOD_X_TILED
  ipc::Descriptor compressed = tiled;
  compressed.drm_modifier = 0;
  compressed.compression_code = 999;
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    ASSERT_OK(recorder.write(counting_tensor({8}, 0), 0));
    ASSERT_OK(recorder.append(tiled, std::span<const std::byte>(payload), 1));
    ASSERT_OK(recorder.append(compressed, std::span<const std::byte>(payload), 2));
    ASSERT_OK(recorder.write(counting_tensor({8}, 50), 3));
  }
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  ASSERT_OK_AND_ASSIGN(auto first, replayer.next());
  ASSERT_TRUE(first.has_value());
  EXPECT_OK(first->materialize());
  for (const char* named : {"0x0100000000000001 (vendor intel, I915_FORMAT_MOD_X_TILED)", "compression code 999"}) {
    ASSERT_OK_AND_ASSIGN(auto record, replayer.next());
    ASSERT_TRUE(record.has_value()) << named;
    const auto tensor = record->materialize(MemoryKind::Mem);
    ASSERT_FALSE(tensor.has_value()) << named << ": read as linear bytes";
    EXPECT_EQ(tensor.error().code(), ErrorCode::NotImplemented) << tensor.error().to_string();
    EXPECT_NE(tensor.error().message().find(named), std::string::npos) << tensor.error().message();
  }
  ASSERT_OK_AND_ASSIGN(auto last, replayer.next());
  ASSERT_TRUE(last.has_value()) << "the records after an unreadable one still read";
  ASSERT_OK_AND_ASSIGN(Tensor tensor, last->materialize());
  EXPECT_EQ(contents(tensor)[0], 50);
}

TEST_F(RecordingTest, DamageIsDetectedAndEveryRecordBeforeItIsRead) {
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    for (int i = 0; i < 5; ++i) ASSERT_OK(recorder.write(counting_tensor({100}, static_cast<uint8_t>(i)), i));
  }
  const std::vector<char> intact = file_bytes();
  // Each record is 28 + descriptor + 100 + 4 bytes; flip one payload byte of record 3, then
  // truncate inside record 4 — both damaged, records 0..2 intact.
  const std::size_t record_size = (intact.size() - 16) / 5;
  for (int mode = 0; mode < 2; ++mode) {
    std::vector<char> damaged = intact;
    if (mode == 0) {
      damaged[16 + 3 * record_size + record_size - 10] ^= 0x40;
    } else {
      damaged.resize(16 + 3 * record_size + record_size / 2);
    }
    write_file(damaged);
    ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
    for (uint64_t i = 0; i < 3; ++i) {
      ASSERT_OK_AND_ASSIGN(auto record, replayer.next());
      ASSERT_TRUE(record.has_value());
      EXPECT_EQ(record->index, i);
    }
    auto broken = replayer.next();
    EXPECT_ERROR(ErrorCode::Corrupt, broken);
    EXPECT_NE(broken.error().message().find("record 3"), std::string::npos) << broken.error().message();
    ASSERT_OK_AND_ASSIGN(auto after, replayer.next());
    EXPECT_FALSE(after.has_value());
  }
}

TEST_F(RecordingTest, NotARecordingIsCorruptAndNewerVersionsAreNamed) {
  write_file({'h', 'e', 'l', 'l', 'o'});
  EXPECT_ERROR(ErrorCode::Corrupt, Replayer::open(path_));
  { ASSERT_OK(Recorder::create(path_)); }
  std::vector<char> bytes = file_bytes();
  bytes[8] = 3;
  write_file(bytes);
  auto newer = Replayer::open(path_);
  EXPECT_ERROR(ErrorCode::Protocol, newer);
  EXPECT_NE(newer.error().message().find("version 3"), std::string::npos);
  EXPECT_ERROR(ErrorCode::Unavailable, Replayer::open("/nonexistent/dir/x.mhrec"));
}

TEST_F(RecordingTest, AHugeClaimedLengthIsCorruptNotAnAllocation) {
  {
    ASSERT_OK_AND_ASSIGN(Recorder recorder, Recorder::create(path_));
    ASSERT_OK(recorder.write(counting_tensor({4}, 0), 0));
  }
  std::vector<char> bytes = file_bytes();
  for (int i = 0; i < 8; ++i) bytes[16 + 8 + i] = char(0x7f);  // payload_length
  write_file(bytes);
  ASSERT_OK_AND_ASSIGN(Replayer replayer, Replayer::open(path_));
  EXPECT_ERROR(ErrorCode::Corrupt, replayer.next());
}

}  // namespace
}  // namespace memhal
