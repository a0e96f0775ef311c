// The GL backend of ImageProcessor on the real driver of this machine (Mesa llvmpipe in CI):
// backend choice, Pbo images and their maps, the processor's lifetime, fallbacks, and what
// happens with no GL driver at all (run as a second CTest test with the EGL vendor hidden).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <memhal/channel.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/memory.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/tee.hpp>
#include <memhal/tensor_map.hpp>
#include <memhal/tensor_pool.hpp>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gl_test_env.hpp"
#include "image_test_util.hpp"
#include "reference.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

bool expect_no_gl() {
  const char* env = std::getenv("MEMHAL_TEST_EXPECT_NO_GL");
  return env != nullptr && std::string(env) == "1";
}

// A processor pinned to GL, or a skip that says why there is none; in the Mesa 25 run (see
// gl_test_env.hpp) on Mesa 25 or a failure.
#define GL_PROCESSOR_OR_SKIP(name)                                                                            \
  if (expect_no_gl()) GTEST_SKIP() << "this run hides the GL driver (MEMHAL_TEST_EXPECT_NO_GL)";              \
  if (auto why = testing::mesa25_missing()) GTEST_SKIP() << *why;                                             \
  auto name##_made = ImageProcessor::create({.threads = 1, .backend = ImageBackend::Gl});                     \
  if (!name##_made && testing::mesa25_dir()) FAIL() << "no GL on Mesa 25: " << name##_made.error().message(); \
  if (!name##_made) GTEST_SKIP() << "no GL here: " << name##_made.error().message();                          \
  ImageProcessor name = std::move(*name##_made);                                                              \
  ASSERT_EQ(testing::wrong_mesa(name.gl_driver()->version), "")

int open_fds() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

int threads_of_process() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(GlBackend, APinnedProcessorRunsOnGlAndNamesItsDriver) {
  GL_PROCESSOR_OR_SKIP(gl);
  EXPECT_EQ(gl.backend(), ImageBackend::Gl);
  EXPECT_TRUE(gl.backend_notes().empty());
  const GlDriverInfo* driver = gl.gl_driver();
  ASSERT_NE(driver, nullptr);
  EXPECT_FALSE(driver->renderer.empty());
  EXPECT_NE(driver->version.find("OpenGL ES 3"), std::string::npos) << driver->version;
  EXPECT_GE(driver->max_texture_size, 2048);
  EXPECT_FALSE(driver->platform.empty());
  EXPECT_EQ(gl.last_backend(), std::nullopt);
}

TEST(GlBackend, AutoSelectionSkipsASoftwareRasteriserAndSaysWhy) {
  GL_PROCESSOR_OR_SKIP(gl);
  ScopedEnv env("MEMHAL_BACKEND", "");
  ASSERT_OK_AND_ASSIGN(ImageProcessor chosen, ImageProcessor::create({.threads = 1}));
  if (gl.gl_driver()->software) {
    EXPECT_EQ(chosen.backend(), ImageBackend::Cpu);
    EXPECT_NE(chosen.backend_notes().find("software rasteriser"), std::string::npos) << chosen.backend_notes();
    EXPECT_NE(chosen.backend_notes().find(gl.gl_driver()->renderer), std::string::npos);
  } else {
    EXPECT_EQ(chosen.backend(), ImageBackend::Gl);
  }
}

TEST(GlBackend, MemhalBackendPinsTheBackendAndRejectsUnknownNames) {
  GL_PROCESSOR_OR_SKIP(gl);
  {
    ScopedEnv env("MEMHAL_BACKEND", "cpu");
    ASSERT_OK_AND_ASSIGN(ImageProcessor p, ImageProcessor::create({.threads = 1}));
    EXPECT_EQ(p.backend(), ImageBackend::Cpu);
    EXPECT_TRUE(p.backend_notes().empty());
  }
  {
    ScopedEnv env("MEMHAL_BACKEND", "gl");
    ASSERT_OK_AND_ASSIGN(ImageProcessor p, ImageProcessor::create({.threads = 1}));
    EXPECT_EQ(p.backend(), ImageBackend::Gl);
  }
  {
    ScopedEnv env("MEMHAL_BACKEND", "vulkan");
    auto p = ImageProcessor::create({.threads = 1});
    EXPECT_ERROR(ErrorCode::InvalidArgument, p);
    EXPECT_NE(p.error().message().find("vulkan"), std::string::npos);
  }
  {
    // The option wins over the environment.
    ScopedEnv env("MEMHAL_BACKEND", "gl");
    ASSERT_OK_AND_ASSIGN(ImageProcessor p, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
    EXPECT_EQ(p.backend(), ImageBackend::Cpu);
  }
}

TEST(GlBackend, CreateImageAutoSelectsPboWhenTheDriverCannotImportDmaBufs) {
  GL_PROCESSOR_OR_SKIP(gl);
  ASSERT_OK_AND_ASSIGN(Tensor image, gl.create_image(64, 48, PixelFormat::Nv12));
  if (gl.gl_driver()->dma_buf_import && is_available(MemoryKind::DmaBuf)) {
    EXPECT_EQ(image.memory(), MemoryKind::DmaBuf);
    return;
  }
  EXPECT_EQ(image.memory(), MemoryKind::Pbo);
  EXPECT_NE(image.allocation_notes().find("dmabuf skipped"), std::string::npos) << image.allocation_notes();
  EXPECT_EQ(image.pixel_format(), PixelFormat::Nv12);
  ASSERT_OK_AND_ASSIGN(Tensor pinned, gl.create_image(32, 32, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
  EXPECT_EQ(pinned.memory(), MemoryKind::Pbo);
  ASSERT_OK_AND_ASSIGN(Tensor mem, gl.create_image(32, 32, PixelFormat::Rgb, DType::U8, MemoryKind::Mem));
  EXPECT_EQ(mem.memory(), MemoryKind::Mem);
}

TEST(GlBackend, MemhalForceMemSendsCreateImageToMemButKeepsAPinnedKind) {
  GL_PROCESSOR_OR_SKIP(gl);
  ASSERT_OK_AND_ASSIGN(ImageProcessor cpu, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
  {
    ScopedEnv force("MEMHAL_FORCE_MEM", "1");
    for (const ImageProcessor* p : {&gl, &cpu}) {
      ASSERT_OK_AND_ASSIGN(Tensor image, p->create_image(64, 48, PixelFormat::Nv12));
      EXPECT_EQ(image.memory(), MemoryKind::Mem) << to_string(p->backend());
      EXPECT_NE(image.allocation_notes().find("MEMHAL_FORCE_MEM"), std::string::npos) << image.allocation_notes();
      EXPECT_EQ(image.pixel_format(), PixelFormat::Nv12);
    }
    ASSERT_OK_AND_ASSIGN(Tensor pinned, gl.create_image(32, 32, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
    EXPECT_EQ(pinned.memory(), MemoryKind::Pbo);
  }
  ScopedEnv off("MEMHAL_FORCE_MEM", "0");
  ASSERT_OK_AND_ASSIGN(Tensor image, gl.create_image(64, 48, PixelFormat::Nv12));
  EXPECT_NE(image.memory(), MemoryKind::Mem) << image.allocation_notes();
}

TEST(GlBackend, ACpuProcessorRefusesPboImagesAndTensorCreatePointsToCreateImage) {
  ASSERT_OK_AND_ASSIGN(ImageProcessor cpu, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
  auto pbo = cpu.create_image(16, 16, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo);
  EXPECT_ERROR(ErrorCode::Unavailable, pbo);
  EXPECT_NE(pbo.error().message().find("gl backend"), std::string::npos) << pbo.error().message();
  auto tensor = Tensor::create({16}, DType::U8, MemoryKind::Pbo);
  EXPECT_ERROR(ErrorCode::NotImplemented, tensor);
  EXPECT_NE(tensor.error().message().find("create_image"), std::string::npos);
}

TEST(GlBackend, PboImagesStartZeroedAndKeepWhatTheCpuWrote) {
  GL_PROCESSOR_OR_SKIP(gl);
  ASSERT_OK_AND_ASSIGN(Tensor image, gl.create_image(100, 30, PixelFormat::Rgba, DType::U8, MemoryKind::Pbo));
  const auto bytes = static_cast<std::size_t>(image.layout().byte_extent(0).end);
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Read));
    for (std::size_t i = 0; i < bytes; ++i) ASSERT_EQ(map.data()[i], std::byte{0}) << "byte " << i;
  }
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Write));
    for (std::size_t i = 0; i < bytes; ++i) map.data()[i] = static_cast<std::byte>(i * 7 + 3);
  }
  ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Read));
  for (std::size_t i = 0; i < bytes; ++i) ASSERT_EQ(map.data()[i], static_cast<std::byte>(i * 7 + 3)) << "byte " << i;
}

TEST(GlBackend, NestedReadMapsShareOneMappingAndAWriteMustWait) {
  GL_PROCESSOR_OR_SKIP(gl);
  ASSERT_OK_AND_ASSIGN(Tensor image, gl.create_image(16, 16, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
  ASSERT_OK_AND_ASSIGN(TensorMap a, image.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(TensorMap b, image.map(CpuAccess::Read));
  EXPECT_EQ(a.data(), b.data());
  auto write = image.map(CpuAccess::Write);
  EXPECT_ERROR(ErrorCode::Busy, write);
  EXPECT_NE(write.error().message().find("mapped for read"), std::string::npos) << write.error().message();
}

TEST(GlBackend, PboImagesMapFromAnyThread) {
  GL_PROCESSOR_OR_SKIP(gl);
  std::vector<Tensor> images;
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor t, gl.create_image(64, 64, PixelFormat::Grey, DType::U8, MemoryKind::Pbo));
    images.push_back(std::move(t));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 20; ++round) {
        {
          auto map = images[i].map(CpuAccess::Write);
          if (!map) {
            ++failures;
            return;
          }
          std::memset(map->data(), i + round, 64 * 64);
        }
        auto map = images[i].map(CpuAccess::Read);
        if (!map || map->data()[4095] != static_cast<std::byte>(i + round)) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(GlBackend, APboImageOutlivingItsProcessorFailsCleanly) {
  std::optional<Tensor> kept;
  {
    GL_PROCESSOR_OR_SKIP(gl);
    ASSERT_OK_AND_ASSIGN(Tensor image, gl.create_image(32, 32, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
    kept.emplace(std::move(image));
  }
  const Tensor& orphan = *kept;
  auto map = orphan.map(CpuAccess::Read);
  EXPECT_ERROR(ErrorCode::Unavailable, map);
  EXPECT_NE(map.error().message().find("GL context gone"), std::string::npos) << map.error().message();
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(16, 16, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(ImageProcessor cpu, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Cpu}));
  EXPECT_ERROR(ErrorCode::Unavailable, cpu.convert(orphan, dst));
}

void fill_rgb(const Tensor& image, uint8_t r, uint8_t g, uint8_t b) {
  auto map = image.map(CpuAccess::Write);
  ASSERT_OK(map);
  const int64_t pitch = image.strides()[0];
  for (int64_t y = 0; y < image.shape()[0]; ++y) {
    std::byte* row = map->data() + y * pitch;
    for (int64_t x = 0; x < image.shape()[1]; ++x) {
      row[3 * x] = std::byte{r};
      row[3 * x + 1] = std::byte{g};
      row[3 * x + 2] = std::byte{b};
    }
  }
}

// The scenario: p1's Pbo outlives p1, p2 has a Pbo of its own (in a fresh context its
// GL buffer name is likely the dead one's), and p2 is asked to convert the orphan. The orphan is
// refused by the identity of its context, whatever address the allocator gave p2's context, so
// p2's pixels are never read in its place. Rounds make an address reuse likely, which is when a
// pointer comparison would have accepted the orphan.
TEST(GlBackend, AnOrphanedPboIsRefusedByALaterProcessorAndNeverReadAsItsOwnBuffer) {
  if (expect_no_gl()) GTEST_SKIP() << "this run hides the GL driver (MEMHAL_TEST_EXPECT_NO_GL)";
  for (int round = 0; round < 4; ++round) {
    std::optional<Tensor> old;
    {
      auto p1 = ImageProcessor::create({.threads = 1, .backend = ImageBackend::Gl});
      if (!p1) GTEST_SKIP() << "no GL here: " << p1.error().message();
      ASSERT_OK_AND_ASSIGN(Tensor made, p1->create_image(8, 8, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
      fill_rgb(made, 10, 200, 30);
      old.emplace(std::move(made));
    }
    ASSERT_OK_AND_ASSIGN(ImageProcessor p2, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Gl}));
    ASSERT_OK_AND_ASSIGN(Tensor own, p2.create_image(8, 8, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
    fill_rgb(own, 250, 5, 5);
    ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(8, 8, PixelFormat::Rgb, MemoryKind::Mem));
    auto done = p2.convert(*old, dst);
    EXPECT_ERROR(ErrorCode::Unavailable, done);
    if (!done) {
      EXPECT_NE(done.error().message().find("GL context gone"), std::string::npos) << done.error().message();
    }
    EXPECT_EQ(p2.stats().gl_calls, 0u) << "round " << round;
    {
      ASSERT_OK_AND_ASSIGN(TensorMap out, dst.map(CpuAccess::Read));
      EXPECT_EQ(out.data()[0], std::byte{0}) << "round " << round << ": the destination was written";
    }
    // p2's own Pbo still converts on GL.
    ASSERT_OK(p2.convert(own, dst));
    EXPECT_EQ(p2.last_backend(), ImageBackend::Gl);
    ASSERT_OK_AND_ASSIGN(TensorMap out, dst.map(CpuAccess::Read));
    EXPECT_NEAR(static_cast<int>(out.data()[0]), 250, 1);
  }
}

TEST(GlBackend, AMapOpenWhenTheProcessorDiesStaysValidUntilItEnds) {
  std::optional<TensorMap> open;
  std::optional<Tensor> image;
  {
    GL_PROCESSOR_OR_SKIP(gl);
    ASSERT_OK_AND_ASSIGN(Tensor made, gl.create_image(32, 32, PixelFormat::Grey, DType::U8, MemoryKind::Pbo));
    image.emplace(std::move(made));
    ASSERT_OK_AND_ASSIGN(TensorMap map, image->map(CpuAccess::ReadWrite));
    open.emplace(std::move(map));
  }
  std::memset(open->data(), 0x5a, 32 * 32);
  EXPECT_EQ(open->data()[1023], std::byte{0x5a});
  open.reset();
  EXPECT_ERROR(ErrorCode::Unavailable, image->map(CpuAccess::Read));
}

TEST(GlBackend, ProcessorsComeAndGoWithoutLeakingFdsOrThreads) {
  GL_PROCESSOR_OR_SKIP(warm);  // the driver's one-time set-up is not a leak
  const int fds = open_fds();
  const int threads = threads_of_process();
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK_AND_ASSIGN(ImageProcessor p, ImageProcessor::create({.threads = 1, .backend = ImageBackend::Gl}));
    ASSERT_OK_AND_ASSIGN(Tensor t, p.create_image(64, 64, PixelFormat::Nv12, DType::U8, MemoryKind::Pbo));
    ASSERT_OK(t.map(CpuAccess::Read));
  }
  EXPECT_EQ(open_fds(), fds);
  EXPECT_EQ(threads_of_process(), threads);
}

std::string report(const std::vector<reference::Mismatch>& mismatches) {
  std::string out;
  for (const auto& m : mismatches)
    out += m.where + ": " + std::to_string(m.actual) + " vs " + std::to_string(m.expected) + "\n";
  return out;
}

TEST(GlBackend, PboImagesConvertOnGlInPlaceAndMatchTheReference) {
  GL_PROCESSOR_OR_SKIP(gl);
  std::mt19937 rng(5);
  ASSERT_OK_AND_ASSIGN(Tensor src, gl.create_image(320, 240, PixelFormat::Nv12, DType::U8, MemoryKind::Pbo));
  testing::fill_random(src, rng);
  ASSERT_OK_AND_ASSIGN(Tensor dst, gl.create_image(224, 224, PixelFormat::PlanarRgb, DType::F32, MemoryKind::Pbo));
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  o.mean = {0.485f, 0.456f, 0.406f, 0};
  o.std = {0.229f, 0.224f, 0.225f, 1};
  ASSERT_OK(gl.convert(src, dst, o));
  const ImageProcessorStats stats = gl.stats();
  EXPECT_EQ(stats.gl_calls, 1u);
  EXPECT_EQ(stats.cpu_calls, 0u);
  EXPECT_EQ(stats.fallbacks, 0u) << stats.last_fallback;
  EXPECT_EQ(gl.last_backend(), ImageBackend::Gl);
  EXPECT_EQ(report(reference::compare(src, dst, o, 5, 2.0)), "");
}

TEST(GlBackend, HostImagesRoundTripThroughGl) {
  GL_PROCESSOR_OR_SKIP(gl);
  std::mt19937 rng(6);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(97, 61, PixelFormat::Bgra, MemoryKind::Mem));
  testing::fill_random(src, rng);
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(50, 40, PixelFormat::Rgb, MemoryKind::Shm));
  ConvertOptions o;
  o.rotation = Rotation::Cw90;
  o.flip = Flip::Horizontal;
  ASSERT_OK(gl.convert(src, dst, o));
  EXPECT_EQ(gl.last_backend(), ImageBackend::Gl);
  EXPECT_EQ(report(reference::compare(src, dst, o, 5, 2.0)), "");
}

TEST(GlBackend, AConversionGlCannotDoRunsOnTheCpuCountedAndVisible) {
  GL_PROCESSOR_OR_SKIP(gl);
  std::mt19937 rng(7);
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(64, 48, PixelFormat::Rgb, MemoryKind::Mem));
  testing::fill_random(image, rng);
  ASSERT_OK_AND_ASSIGN(Tensor upside_down, image.flip(0));  // rows run upward: GL uploads cannot
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(32, 24, PixelFormat::Grey, MemoryKind::Mem));
  ASSERT_OK(gl.convert(upside_down, dst));
  ImageProcessorStats stats = gl.stats();
  EXPECT_EQ(stats.fallbacks, 1u);
  EXPECT_EQ(stats.cpu_calls, 1u);
  EXPECT_EQ(stats.gl_calls, 0u);
  EXPECT_NE(stats.last_fallback.find("negative pitch"), std::string::npos) << stats.last_fallback;
  EXPECT_EQ(gl.last_backend(), ImageBackend::Cpu);
  EXPECT_EQ(report(reference::compare(upside_down, dst, {})), "");

  // A Pbo the CPU holds mapped cannot be used by GL either; the CPU converts it (a nested read).
  ASSERT_OK_AND_ASSIGN(Tensor pbo, gl.create_image(64, 48, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
  ASSERT_OK(image.copy_to(pbo));
  ASSERT_OK_AND_ASSIGN(TensorMap held, pbo.map(CpuAccess::Read));
  ASSERT_OK(gl.convert(pbo, dst));
  stats = gl.stats();
  EXPECT_EQ(stats.fallbacks, 2u);
  EXPECT_NE(stats.last_fallback.find("holds mapped"), std::string::npos) << stats.last_fallback;
  EXPECT_EQ(report(reference::compare(pbo, dst, {})), "");
}

TEST(GlBackend, APboImageOfAnotherProcessorIsConvertedThroughTheCpu) {
  GL_PROCESSOR_OR_SKIP(a);
  GL_PROCESSOR_OR_SKIP(b);
  ASSERT_OK_AND_ASSIGN(Tensor src, a.create_image(32, 32, PixelFormat::Rgba, DType::U8, MemoryKind::Pbo));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(16, 16, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK(b.convert(src, dst));
  EXPECT_EQ(b.stats().fallbacks, 1u);
  EXPECT_NE(b.stats().last_fallback.find("another processor"), std::string::npos) << b.stats().last_fallback;
}

TEST(GlBackend, WithoutDmaBufImportTheProcessorSaysDmaBufSourcesAreUploaded) {
  GL_PROCESSOR_OR_SKIP(gl);
  if (gl.gl_driver()->dma_buf_import) GTEST_SKIP() << "this driver imports DMA-BUFs";
  EXPECT_NE(gl.stats().dma_buf_import_note.find("EGL_EXT_image_dma_buf_import"), std::string::npos)
      << gl.stats().dma_buf_import_note;
  EXPECT_EQ(gl.stats().dma_buf_imports, 0u);
}

// The memory a camera or a peer hands over as an fd: DmaBuf where this kernel allocates
// DMA-BUFs (the VM), else Shm (a memfd, which Mesa's llvmpipe imports the same way).
MemoryKind fd_memory() {
  return is_available(MemoryKind::DmaBuf) ? MemoryKind::DmaBuf : MemoryKind::Shm;
}

// What a driver without EGL_EXT_image_dma_buf_import (Debian 12's Mesa 22) must say.
void expect_uploaded(const ImageProcessor& gl) {
  EXPECT_EQ(gl.stats().dma_buf_imports, 0u);
  EXPECT_NE(gl.stats().dma_buf_import_note.find("EGL_EXT_image_dma_buf_import"), std::string::npos)
      << gl.stats().dma_buf_import_note;
}

// Whether the driver took NV12 as one image (else the note says its planes went one by one).
bool whole_nv12(const ImageProcessor& gl) {
  return gl.stats().dma_buf_import_note.find("imported one by one") == std::string::npos;
}

// Each frame is new content in the same buffer: an import that went stale, or a copy taken at
// import time, shows as a mismatch. On a driver without the import the upload is what runs.
TEST(GlBackend, ADmaBufFrameIsImportedOncePerBufferAndSampledInPlace) {
  GL_PROCESSOR_OR_SKIP(gl);
  const MemoryKind memory = fd_memory();
  std::mt19937 rng(8);
  ASSERT_OK_AND_ASSIGN(Tensor frame, Tensor::image(320, 240, PixelFormat::Nv12, memory));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(160, 120, PixelFormat::Rgb, MemoryKind::Mem));
  for (int round = 0; round < 3; ++round) {
    testing::fill_random(frame, rng);
    ASSERT_OK(gl.convert(frame, dst));
    EXPECT_EQ(gl.last_backend(), ImageBackend::Gl);
    EXPECT_EQ(report(reference::compare(frame, dst, {}, 5, 2.0)), "") << to_string(memory) << " round " << round;
  }
  if (!gl.gl_driver()->dma_buf_import) return expect_uploaded(gl);
  // NV12 whole (one image) where the driver takes it, else Y and UV (llvmpipe): once each.
  const uint64_t per_frame = whole_nv12(gl) ? 1 : 2;
  EXPECT_EQ(gl.stats().dma_buf_imports, per_frame) << gl.stats().dma_buf_import_note;
  {
    ASSERT_OK_AND_ASSIGN(Tensor other, Tensor::image(640, 480, PixelFormat::Nv12, memory));
    testing::fill_random(other, rng);
    ASSERT_OK(gl.convert(other, dst));
    EXPECT_EQ(report(reference::compare(other, dst, {}, 5, 2.0)), "");
    EXPECT_EQ(gl.stats().dma_buf_imports, 2 * per_frame);
  }
  ASSERT_OK(gl.convert(frame, dst));
  EXPECT_EQ(gl.stats().dma_buf_imports, 2 * per_frame);
  // A single-plane format, letterboxed to f32: the imported bytes feed every path.
  ASSERT_OK_AND_ASSIGN(Tensor rgba, Tensor::image(97, 61, PixelFormat::Bgra, memory));
  testing::fill_random(rgba, rng);
  ASSERT_OK_AND_ASSIGN(Tensor planar, Tensor::image(64, 64, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32));
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  ASSERT_OK(gl.convert(rgba, planar, o));
  EXPECT_EQ(report(reference::compare(rgba, planar, o, 5, 2.0)), "");
  EXPECT_EQ(gl.stats().dma_buf_imports, 2 * per_frame + 1) << gl.stats().dma_buf_import_note;
}

// A YUV frame is offered to the driver whole first (one EGLImage on GL_TEXTURE_EXTERNAL_OES,
// which GPU drivers prefer); llvmpipe refuses a 2-plane NV12 image (EGL_BAD_ALLOC), so the
// planes are imported one by one, the note says so, and the refusal is not tried again, by this
// processor or another on the same driver. Pixels match either way.
TEST(GlBackend, AYuvFrameIsOfferedWholeFirstAndImportedPlaneByPlaneWhenRefused) {
  GL_PROCESSOR_OR_SKIP(gl);
  std::mt19937 rng(11);
  ASSERT_OK_AND_ASSIGN(Tensor frame, Tensor::image(128, 96, PixelFormat::Nv12, fd_memory()));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(64, 48, PixelFormat::Rgb, MemoryKind::Mem));
  ConvertOptions o;
  o.matrix = ColorMatrix::Bt709;
  for (int round = 0; round < 2; ++round) {
    testing::fill_random(frame, rng);
    ASSERT_OK(gl.convert(frame, dst, o));
    EXPECT_EQ(gl.last_backend(), ImageBackend::Gl);
    EXPECT_EQ(report(reference::compare(frame, dst, o, 5, 2.0)), "") << "round " << round;
  }
  if (!gl.gl_driver()->dma_buf_import) return expect_uploaded(gl);
  const std::string note = gl.stats().dma_buf_import_note;
  if (whole_nv12(gl)) {
    EXPECT_EQ(gl.stats().dma_buf_imports, 1u) << note;
    return;
  }
  EXPECT_NE(note.find("as one image, 2 planes) failed: EGL_BAD_"), std::string::npos) << note;
  EXPECT_EQ(gl.stats().dma_buf_imports, 2u) << note;
  // A second processor on the same driver does not try again, and says why.
  GL_PROCESSOR_OR_SKIP(again);
  ASSERT_OK_AND_ASSIGN(Tensor other, Tensor::image(128, 96, PixelFormat::Nv12, fd_memory()));
  testing::fill_random(other, rng);
  ASSERT_OK(again.convert(other, dst, o));
  EXPECT_EQ(report(reference::compare(other, dst, o, 5, 2.0)), "");
  EXPECT_EQ(again.stats().dma_buf_imports, 2u);
  EXPECT_EQ(again.stats().dma_buf_import_note, note);
  // Packed YUV is imported as bytes (one plane), never whole: llvmpipe would take YUYV whole
  // and then sample it wrongly or crash compiling the shader.
  ASSERT_OK_AND_ASSIGN(Tensor yuyv, Tensor::image(128, 96, PixelFormat::Yuyv, fd_memory()));
  testing::fill_random(yuyv, rng);
  ASSERT_OK(again.convert(yuyv, dst, o));
  EXPECT_EQ(report(reference::compare(yuyv, dst, o, 5, 2.0)), "");
  EXPECT_EQ(again.stats().dma_buf_imports, 3u) << again.stats().dma_buf_import_note;
}

// A camera's ring through GL: a pool of 4 fd-backed slots, each frame going through a frame
// (MemoryDomain, Tee) and back to a tensor, is imported once per slot and plane over 100
// frames, not once per frame (the keying itself is tested without EGL in tensor_pool_test,
// APerBufferCacheHitsFromTheSecondHandOutOfEachSlot).
TEST(GlBackend, APoolOfFourThroughGlIsImportedOncePerSlot) {
  GL_PROCESSOR_OR_SKIP(gl);
  std::mt19937 rng(9);
  ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::image(320, 240, PixelFormat::Nv12));
  ASSERT_OK_AND_ASSIGN(TensorPool pool, TensorPool::create(layout, 4, fd_memory()));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(160, 120, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(const Tee tee, Tee::create(2));
  std::deque<std::vector<Frame>> in_flight;  // three frames downstream: the ring cycles
  constexpr int kFrames = 100;
  for (int n = 0; n < kFrames; ++n) {
    ASSERT_OK_AND_ASSIGN(const Tensor image, pool.try_acquire());
    testing::fill_random(image, rng);
    ASSERT_OK_AND_ASSIGN(MemoryDomain payload, MemoryDomain::from_tensor(image));
    ASSERT_OK_AND_ASSIGN(std::vector<Frame> branches, tee.push(Frame{std::move(payload), {}, uint64_t(n), {}}));
    ASSERT_OK_AND_ASSIGN(const Tensor back, branches[1].payload.to_tensor());
    ASSERT_OK(gl.convert(back, dst));
    EXPECT_EQ(gl.last_backend(), ImageBackend::Gl);
    if (n % 10 == 0 || n == kFrames - 1) {
      ASSERT_EQ(report(reference::compare(back, dst, {}, 5, 2.0)), "") << "frame " << n;
    }
    in_flight.push_back(std::move(branches));
    if (in_flight.size() > 3) in_flight.pop_front();
  }
  if (!gl.gl_driver()->dma_buf_import) return expect_uploaded(gl);
  const uint64_t planes = whole_nv12(gl) ? 1 : 2;
  EXPECT_EQ(gl.stats().dma_buf_imports, 4u * planes)
      << "4 slots x " << planes << " images, not " << kFrames << " frames; " << gl.stats().dma_buf_import_note;
}

// A memfd sealed against writes (a peer's immutable frame, as a Channel delivers it): the
// driver cannot map it writable (llvmpipe then maps it read-only), yet it is imported and
// sampled in place like any other.
TEST(GlBackend, AWriteSealedMemfdIsImportedAndSampledInPlace) {
  GL_PROCESSOR_OR_SKIP(gl);
  std::mt19937 rng(10);
  ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::image(64, 48, PixelFormat::Nv12));
  UniqueFd sealed(::memfd_create("gl-sealed-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_TRUE(sealed) << std::strerror(errno);
  ASSERT_EQ(::ftruncate(sealed.get(), 64 * 48 * 3 / 2), 0) << std::strerror(errno);
  {
    ASSERT_OK_AND_ASSIGN(const Tensor writer, Tensor::from_fd(sealed.get(), layout));
    testing::fill_random(writer, rng);
  }
  ASSERT_EQ(::fcntl(sealed.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW), 0) << std::strerror(errno);
  ASSERT_OK_AND_ASSIGN(const Tensor shared, Tensor::from_fd(sealed.get(), layout));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(32, 24, PixelFormat::Rgb, MemoryKind::Mem));
  for (int round = 0; round < 2; ++round) {
    ASSERT_OK(gl.convert(shared, dst));
    EXPECT_EQ(gl.last_backend(), ImageBackend::Gl);
    EXPECT_EQ(report(reference::compare(shared, dst, {}, 5, 2.0)), "");
  }
  if (!gl.gl_driver()->dma_buf_import) return expect_uploaded(gl);
  EXPECT_EQ(gl.stats().dma_buf_imports, whole_nv12(gl) ? 1u : 2u) << gl.stats().dma_buf_import_note;
}

// The elements of two images of one format, size and dtype (their layouts may differ), byte
// for byte: "" when equal, else where they first differ.
std::string byte_difference(const Tensor& a, const Tensor& b) {
  auto ma = *a.map(CpuAccess::Read);
  auto mb = *b.map(CpuAccess::Read);
  const Layout& la = ma.layout();
  const Layout& lb = mb.layout();
  if (la.is_multi_plane()) {
    for (std::size_t i = 0; i < la.planes().size(); ++i) {
      const PlaneLayout& pa = la.planes()[i];
      const PlaneLayout& pb = lb.planes()[i];
      for (int64_t y = 0; y < pa.height; ++y) {
        for (int64_t x = 0; x < pa.row_bytes; ++x) {
          const auto va = static_cast<int>(ma.plane(i)[y * pa.pitch + x]);
          const auto vb = static_cast<int>(mb.plane(i)[y * pb.pitch + x]);
          if (va != vb) {
            return "plane " + std::to_string(i) + " row " + std::to_string(y) + " byte " + std::to_string(x) + ": " +
                   std::to_string(va) + " vs " + std::to_string(vb);
          }
        }
      }
    }
    return "";
  }
  const auto shape = la.shape();
  const int64_t esize = static_cast<int64_t>(la.element_size());
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < la.element_count(); ++n) {
    int64_t oa = 0, ob = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) oa += index[d] * la.strides()[d], ob += index[d] * lb.strides()[d];
    if (std::memcmp(ma.data() + oa, mb.data() + ob, static_cast<std::size_t>(esize)) != 0) {
      return "element " + std::to_string(n) + ": " + std::to_string(static_cast<int>(ma.data()[oa])) + " vs " +
             std::to_string(static_cast<int>(mb.data()[ob]));
    }
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return "";
}

// A DmaBuf destination (a memfd-backed Shm one on the host) is imported as a render target and
// written in place, 4 bytes a fragment (ABGR8888) where its rows are whole 4-byte texels, else
// 1 (R8, 8-bit elements): the bytes equal those the readback path writes into host memory. On a
// driver without the import (Mesa 22) the output is read back, and the note says why.
TEST(GlBackend, AnFdDestinationIsRenderedIntoInPlaceAndEqualsTheReadbackByteForByte) {
  GL_PROCESSOR_OR_SKIP(gl);
  const MemoryKind memory = fd_memory();
  std::mt19937 rng(11);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(98, 62, PixelFormat::Nv12, MemoryKind::Mem));
  struct Case {
    int64_t width, height;
    PixelFormat format;
    DType dtype;
    ResizeMode resize;
  };
  const Case cases[] = {
      {64, 48, PixelFormat::Rgba, DType::U8, ResizeMode::Stretch},          // ABGR8888
      {45, 33, PixelFormat::Bgra, DType::U8, ResizeMode::Letterbox},        // ABGR8888, odd size
      {64, 40, PixelFormat::Grey, DType::U8, ResizeMode::Stretch},          // ABGR8888 of 16 texels a row
      {45, 33, PixelFormat::Grey, DType::U8, ResizeMode::Stretch},          // R8
      {64, 36, PixelFormat::Rgb, DType::U8, ResizeMode::Stretch},           // ABGR8888 of 48 texels a row
      {50, 30, PixelFormat::Rgb, DType::U8, ResizeMode::Letterbox},         // R8 (150 bytes a row)
      {48, 32, PixelFormat::Nv12, DType::U8, ResizeMode::Stretch},          // two planes
      {40, 40, PixelFormat::PlanarRgb, DType::F32, ResizeMode::Letterbox},  // f32 elements as bytes
  };
  uint64_t fd_outputs = 0;
  for (const Case& c : cases) {
    const std::string what = std::string(to_string(c.format)) + " " + std::string(to_string(c.dtype)) + " " +
                             std::to_string(c.width) + "x" + std::to_string(c.height);
    ASSERT_OK_AND_ASSIGN(Tensor direct, Tensor::image(c.width, c.height, c.format, memory, c.dtype));
    ASSERT_OK_AND_ASSIGN(Tensor read_back, Tensor::image(c.width, c.height, c.format, MemoryKind::Mem, c.dtype));
    ConvertOptions o;
    o.resize = c.resize;
    o.pad = {10, 20, 30, 255};
    if (c.dtype == DType::F32) o.mean = {0.485f, 0.456f, 0.406f, 0}, o.std = {0.229f, 0.224f, 0.225f, 1};
    for (int round = 0; round < 2; ++round) {
      testing::fill_random(src, rng);
      SCOPED_TRACE(what);
      ASSERT_OK(gl.convert(src, direct, o));
      ++fd_outputs;
      ASSERT_OK(gl.convert(src, read_back, o));
      EXPECT_EQ(gl.last_backend(), ImageBackend::Gl) << what;
      EXPECT_EQ(byte_difference(direct, read_back), "") << what << " round " << round;
    }
  }
  const ImageProcessorStats stats = gl.stats();
  EXPECT_EQ(stats.fallbacks, 0u) << stats.last_fallback;
  if (!gl.gl_driver()->dma_buf_import) {
    EXPECT_EQ(stats.dma_buf_renders, 0u);
    EXPECT_NE(stats.dma_buf_render_note.find("EGL_EXT_image_dma_buf_import"), std::string::npos)
        << stats.dma_buf_render_note;
    return;
  }
  EXPECT_EQ(stats.dma_buf_renders, fd_outputs) << stats.dma_buf_render_note;
  EXPECT_EQ(stats.dma_buf_render_note, "");
}

// GL renders the converted image into a DmaBuf (a memfd on the host); the buffer goes through a
// Channel to another process, which reads the bytes there: they are the converted image, equal
// to what the readback path writes. In the VM this runs on real DMA-BUFs (gl.dmabuf_vm.*).
TEST(GlBackend, AnImageRenderedIntoAnFdIsWhatAnotherProcessReadsThroughAChannel) {
  if (expect_no_gl()) GTEST_SKIP() << "this run hides the GL driver (MEMHAL_TEST_EXPECT_NO_GL)";
  if (auto why = testing::mesa25_missing()) GTEST_SKIP() << *why;
  constexpr int64_t kW = 64, kH = 48, kRowBytes = kW * 4;
  // The reader forks before this process starts a GL thread.
  ASSERT_OK_AND_ASSIGN(auto ends, ipc::Channel::pair());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    { auto sender_end = std::move(ends.first); }
    auto received = ends.second.receive(std::chrono::seconds(60));
    if (!received) ::_exit(2);
    auto map = received->map(CpuAccess::Read);
    if (!map || received->pixel_format() != PixelFormat::Rgba) ::_exit(3);
    for (int64_t y = 0; y < kH; ++y) {
      const std::byte* row = map->const_data() + y * map->strides()[0];
      if (::write(pipe_fds[1], row, kRowBytes) != kRowBytes) ::_exit(4);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  { auto receiver_end = std::move(ends.second); }
  auto reap = [&] {
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(pipe_fds[0]);
    return status;
  };
  auto made = ImageProcessor::create({.threads = 1, .backend = ImageBackend::Gl});
  if (!made && testing::mesa25_dir()) {
    ::kill(child, SIGKILL);
    reap();
    FAIL() << "no GL on Mesa 25: " << made.error().message();
  }
  if (!made) {
    ::kill(child, SIGKILL);
    reap();
    GTEST_SKIP() << "no GL here: " << made.error().message();
  }
  ImageProcessor gl = std::move(*made);
  ASSERT_EQ(testing::wrong_mesa(gl.gl_driver()->version), "");
  std::mt19937 rng(12);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(320, 240, PixelFormat::Nv12, MemoryKind::Mem));
  testing::fill_random(src, rng);
  ASSERT_OK_AND_ASSIGN(Tensor shared, Tensor::image(kW, kH, PixelFormat::Rgba, fd_memory()));
  ASSERT_OK_AND_ASSIGN(Tensor local, Tensor::image(kW, kH, PixelFormat::Rgba, MemoryKind::Mem));
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  ASSERT_OK(gl.convert(src, shared, o));
  ASSERT_OK(gl.convert(src, local, o));
  EXPECT_EQ(gl.stats().dma_buf_renders, gl.gl_driver()->dma_buf_import ? 1u : 0u) << gl.stats().dma_buf_render_note;
  ASSERT_OK(ends.first.send(shared));
  std::vector<std::byte> theirs(static_cast<std::size_t>(kRowBytes * kH));
  std::size_t got = 0;
  while (got < theirs.size()) {
    const ssize_t n = ::read(pipe_fds[0], theirs.data() + got, theirs.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  const int status = reap();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the reader failed (status " << status << ")";
  ASSERT_EQ(got, theirs.size());
  ASSERT_OK_AND_ASSIGN(TensorMap mine, local.map(CpuAccess::Read));
  for (int64_t y = 0; y < kH; ++y) {
    ASSERT_EQ(std::memcmp(theirs.data() + y * kRowBytes, mine.const_data() + y * mine.strides()[0], kRowBytes), 0)
        << "row " << y << " differs from the readback's";
  }
  EXPECT_EQ(report(reference::compare(src, local, o, 5, 2.0)), "");
}

// What `memhal info` shows: import and render-to-DMA-BUF tried for real, the reason when not.
// Mesa 25's llvmpipe does both (on a memfd on the host, a DMA-BUF in the VM); Mesa 22 neither.
TEST(GlBackend, ProbeGlTriesDmaBufImportAndRenderingForReal) {
  if (expect_no_gl()) GTEST_SKIP() << "this run hides the GL driver (MEMHAL_TEST_EXPECT_NO_GL)";
  if (auto why = testing::mesa25_missing()) GTEST_SKIP() << *why;
  auto info = ImageProcessor::probe_gl();
  if (!info) GTEST_SKIP() << "no GL here: " << info.error().message();
  ASSERT_EQ(testing::wrong_mesa(info->version), "");
  if (!info->dma_buf_import) {
    EXPECT_FALSE(info->dma_buf_import_works);
    EXPECT_FALSE(info->dma_buf_render_works);
    EXPECT_EQ(info->dma_buf_import_why, "no EGL_EXT_image_dma_buf_import");
    EXPECT_EQ(info->dma_buf_render_why, "no EGL_EXT_image_dma_buf_import");
    return;
  }
  EXPECT_TRUE(info->dma_buf_import_works) << info->dma_buf_import_why;
  EXPECT_EQ(info->dma_buf_import_why, "");
  EXPECT_EQ(info->dma_buf_render_works, info->dma_buf_render_why.empty()) << info->dma_buf_render_why;
  if (info->renderer.find("llvmpipe") != std::string::npos) {
    EXPECT_TRUE(info->dma_buf_render_works) << info->dma_buf_render_why;
  }
}

TEST(GlUnavailable, WithNoGlDriverAutoSelectionSaysWhyAndAPinnedGlRequestFails) {
  if (!expect_no_gl()) GTEST_SKIP() << "runs as gl_backend_test.no_driver, with the EGL vendor hidden";
  auto pinned = ImageProcessor::create({.threads = 1, .backend = ImageBackend::Gl});
  ASSERT_FALSE(pinned.has_value());
  EXPECT_TRUE(pinned.error().code() == ErrorCode::Unavailable || pinned.error().code() == ErrorCode::NotImplemented);
  EXPECT_NE(pinned.error().message().find("gl backend"), std::string::npos) << pinned.error().message();
  ASSERT_OK_AND_ASSIGN(ImageProcessor chosen, ImageProcessor::create({.threads = 1}));
  EXPECT_EQ(chosen.backend(), ImageBackend::Cpu);
  EXPECT_NE(chosen.backend_notes().find("gl skipped"), std::string::npos) << chosen.backend_notes();
  EXPECT_ERROR(ErrorCode::Unavailable, chosen.create_image(8, 8, PixelFormat::Rgb, DType::U8, MemoryKind::Pbo));
  ASSERT_OK_AND_ASSIGN(Tensor image, chosen.create_image(8, 8, PixelFormat::Rgb));
  EXPECT_NE(image.memory(), MemoryKind::Pbo);
  EXPECT_FALSE(ImageProcessor::probe_gl().has_value());
}

}  // namespace
}  // namespace memhal
