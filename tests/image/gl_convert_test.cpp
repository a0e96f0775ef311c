// The GL converter (GLES 3 shaders) on this machine's real GL driver — Mesa llvmpipe in CI —
// against the reference oracle: every input and output format and dtype, crops, flips,
// rotations, letterbox, the three interpolations, both matrices and ranges, padded and
// scattered layouts, sources and destinations in GL buffers, and the pairs it declines.
#include <gtest/gtest.h>
#include <memhal/image_processor.hpp>
#include <memhal/tensor_map.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gl_test_env.hpp"
#include "image/gl/gl_context.hpp"
#include "image/gl/gl_converter.hpp"
#include "image_test_util.hpp"
#include "reference.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

using detail::ImageRef;
using detail::PlaneRef;
using detail::gl::GlContext;
using detail::gl::GlConverter;
using testing::fill_random;

// The GL backend may differ from the reference by this much per 8-bit step (issue 8).
constexpr double kTolerance = 2.0;

const std::vector<PixelFormat> kInputs{
    PixelFormat::Nv12, PixelFormat::Nv21, PixelFormat::Nv16, PixelFormat::Nv24,      PixelFormat::I420,
    PixelFormat::Yuyv, PixelFormat::Uyvy, PixelFormat::Vyuy, PixelFormat::Grey,      PixelFormat::Rgb,
    PixelFormat::Bgr,  PixelFormat::Rgba, PixelFormat::Bgra, PixelFormat::PlanarRgb, PixelFormat::PlanarRgba};
const std::vector<PixelFormat> kOutputs{
    PixelFormat::Rgb,       PixelFormat::Bgr,        PixelFormat::Rgba, PixelFormat::Bgra, PixelFormat::Grey,
    PixelFormat::PlanarRgb, PixelFormat::PlanarRgba, PixelFormat::Nv12, PixelFormat::I420, PixelFormat::Yuyv};
const std::vector<DType> kDtypes{DType::U8, DType::I8, DType::F16, DType::F32};

bool yuv_output(PixelFormat f) {
  return f == PixelFormat::Nv12 || f == PixelFormat::I420 || f == PixelFormat::Yuyv;
}

std::string report(const std::vector<reference::Mismatch>& bad) {
  std::string s;
  for (const auto& m : bad) s += m.where + ": " + std::to_string(m.actual) + " vs " + std::to_string(m.expected) + "\n";
  return s;
}

std::string describe_options(const ConvertOptions& o) {
  std::string s = "flip " + std::to_string(int(o.flip)) + " rotation " + std::to_string(int(o.rotation)) + " resize " +
                  std::to_string(int(o.resize)) + " interpolation " + std::to_string(int(o.interpolation)) +
                  " matrix " + std::to_string(int(o.matrix)) + " range " + std::to_string(int(o.range)) + " swap_rb " +
                  std::to_string(o.swap_rb);
  if (o.crop) {
    s += " crop " + std::to_string(o.crop->width) + "x" + std::to_string(o.crop->height) + "+" +
         std::to_string(o.crop->x) + "+" + std::to_string(o.crop->y);
  }
  return s;
}

// The planes of a mapped image, as ImageProcessor describes host tensors.
ImageRef describe(const TensorMap& map, PixelFormat format) {
  auto image = detail::describe(map.layout(), format, "test image");
  if (image) image = detail::resolve(*image, map, "test image");
  EXPECT_TRUE(image.has_value()) << image.error().message();
  return image ? *image : ImageRef{};
}

class GlConvert : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto made = GlContext::create();
    if (!made) {
      no_gl_ = made.error().message();
      return;
    }
    context_ = *made;
    auto converter = context_->run([] { return GlConverter::create(*context_); });
    if (!converter) {
      broken_ = converter.error().message();
      return;
    }
    converter_ = std::move(*converter);
  }

  static void TearDownTestSuite() {
    if (converter_) context_->run([] { converter_.reset(); });
    context_.reset();
  }

  void SetUp() override {
    if (auto why = testing::mesa25_missing()) GTEST_SKIP() << *why;
    if (!context_ && testing::mesa25_dir()) FAIL() << "no GL on Mesa 25: " << no_gl_;
    if (!context_) GTEST_SKIP() << "no GL here: " << no_gl_;
    ASSERT_EQ(testing::wrong_mesa(context_->info().version), "");
    ASSERT_TRUE(converter_) << broken_;
  }

  // What ImageProcessor does for host tensors: describe both, ask, convert on the GL thread.
  static Result<void> convert(const Tensor& src, const Tensor& dst, const ConvertOptions& o) {
    MEMHAL_ASSIGN_OR_RETURN(TensorMap in, src.map(CpuAccess::Read));
    MEMHAL_ASSIGN_OR_RETURN(TensorMap out, dst.map(CpuAccess::Write));
    const ImageRef s = describe(in, *src.pixel_format());
    const ImageRef d = describe(out, reference::output_format(dst, o));
    if (auto why = converter_->unsupported(s, d, o)) return unexpected(Error(ErrorCode::NotImplemented, *why));
    const Rect crop = o.crop.value_or(Rect{0, 0, s.width, s.height});
    return context_->run([&] { return converter_->run(s, d, crop, o); });
  }

  // The largest difference from the reference, in 8-bit steps (float outputs scaled back).
  static double max_error(const Tensor& src, const Tensor& dst, const ConvertOptions& o) {
    const bool is_float = dst.dtype() == DType::F16 || dst.dtype() == DType::F32;
    const double scale = is_float ? 255.0 * *std::max_element(o.std.begin(), o.std.end()) : 1.0;
    double worst = 0;
    for (const auto& m : reference::compare(src, dst, o, SIZE_MAX, 0.0)) {
      worst = std::max(worst, std::abs(m.actual - m.expected) * scale);
    }
    return worst;
  }

  static inline std::shared_ptr<GlContext> context_;
  static inline std::unique_ptr<GlConverter> converter_;
  static inline std::string no_gl_;
  static inline std::string broken_;
};

TEST_F(GlConvert, EveryInputConvertsToEveryOutputAndDtypeWithinTwoSteps) {
  std::mt19937 rng(8);
  auto pick = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
  double worst_8bit = 0, worst_float = 0;
  for (PixelFormat from : kInputs) {
    const auto info = *pixel_format_info(from);
    const int64_t ax = 1 << info.chroma_shift_x, ay = 1 << info.chroma_shift_y;
    for (PixelFormat to : kOutputs) {
      for (DType dtype : kDtypes) {
        if (yuv_output(to) && dtype != DType::U8) continue;
        const int64_t sw = (4 + pick(30)) * ax, sh = (4 + pick(24)) * ay;
        const int64_t dw = (3 + pick(30)) * (yuv_output(to) ? 2 : 1), dh = (3 + pick(30)) * (yuv_output(to) ? 2 : 1);
        ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(sw, sh, from, MemoryKind::Mem));
        ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(dw, dh, to, MemoryKind::Mem, dtype));
        fill_random(src, rng);
        ConvertOptions o;
        o.matrix = static_cast<ColorMatrix>(pick(2));
        o.range = static_cast<ColorRange>(pick(2));
        o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
        o.std = {0.229f, 0.224f, 0.225f, 0.25f};
        const auto done = convert(src, dst, o);
        ASSERT_TRUE(done) << to_string(from) << " -> " << to_string(to) << " " << to_string(dtype) << ": "
                          << done.error().to_string();
        EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "")
            << to_string(from) << " " << sw << "x" << sh << " -> " << to_string(to) << " " << to_string(dtype) << " "
            << dw << "x" << dh << " " << describe_options(o);
        const double e = max_error(src, dst, o);
        (dtype == DType::U8 || dtype == DType::I8 ? worst_8bit : worst_float) =
            std::max(e, dtype == DType::U8 || dtype == DType::I8 ? worst_8bit : worst_float);
      }
    }
  }
  std::cout << "largest difference from the reference: " << worst_8bit << " (8-bit outputs), " << worst_float
            << " steps of 1/255 (float outputs)\n";
  RecordProperty("max_error_8bit", std::to_string(worst_8bit));
  RecordProperty("max_error_float_steps", std::to_string(worst_float));
}

TEST_F(GlConvert, RandomGeometryAndPaddedPitchesMatchTheReference) {
  std::mt19937 rng(88);
  auto pick = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
  for (int iteration = 0; iteration < 250; ++iteration) {
    const PixelFormat from = kInputs[pick(kInputs.size())];
    const PixelFormat to = kOutputs[pick(kOutputs.size())];
    const auto info = *pixel_format_info(from);
    const DType dtype = yuv_output(to) ? DType::U8 : kDtypes[pick(kDtypes.size())];
    const int64_t ax = 1 << info.chroma_shift_x, ay = 1 << info.chroma_shift_y;
    const int64_t sw = (1 + pick(70)) * ax, sh = (1 + pick(50)) * ay;
    const int64_t dw = (1 + pick(60)) * (yuv_output(to) ? 2 : 1), dh = (1 + pick(60)) * (yuv_output(to) ? 2 : 1);
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(sw, sh, from, MemoryKind::Mem, DType::U8, 1 << pick(7)));
    ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(dw, dh, to, MemoryKind::Mem, dtype, 1 << pick(7)));
    fill_random(src, rng);
    ConvertOptions o;
    if (pick(2)) {
      Rect c;
      c.x = pick(sw / ax) * ax;
      c.y = pick(sh / ay) * ay;
      c.width = 1 + pick(sw - c.x);
      c.height = 1 + pick(sh - c.y);
      o.crop = c;
    }
    o.flip = static_cast<Flip>(pick(4));
    o.rotation = static_cast<Rotation>(pick(4));
    o.resize = static_cast<ResizeMode>(pick(2));
    o.interpolation = static_cast<Interpolation>(pick(3));
    o.matrix = static_cast<ColorMatrix>(pick(2));
    o.range = static_cast<ColorRange>(pick(2));
    o.pad = {uint8_t(pick(256)), uint8_t(pick(256)), uint8_t(pick(256)), uint8_t(pick(256))};
    o.mean = {0.485f, 0.456f, 0.406f, 0.5f};
    o.std = {0.229f, 0.224f, 0.225f, 0.25f};
    o.swap_rb = pick(4) == 0;
    ASSERT_OK(convert(src, dst, o));
    EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "")
        << to_string(from) << " " << sw << "x" << sh << " -> " << to_string(to) << " " << to_string(dtype) << " " << dw
        << "x" << dh << " " << describe_options(o);
  }
}

TEST_F(GlConvert, LargeAreaDownscalesAndUpscalesMatchTheReference) {
  std::mt19937 rng(3);
  struct Case {
    int64_t sw, sh, dw, dh;
    Interpolation interpolation;
  };
  for (const Case& c : {Case{640, 480, 61, 47, Interpolation::Area}, Case{640, 480, 160, 120, Interpolation::Area},
                        Case{24, 18, 200, 150, Interpolation::Bilinear}, Case{24, 18, 97, 41, Interpolation::Area},
                        Case{300, 200, 77, 53, Interpolation::Nearest},
                        // Tap tables longer than a texture row of 4096 entries wrap onto more rows.
                        Case{64, 16, 4400, 6, Interpolation::Bilinear}, Case{9000, 4, 10, 2, Interpolation::Area},
                        Case{3840, 2160, 416, 234, Interpolation::Bilinear}}) {
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(c.sw, c.sh, PixelFormat::Nv12, MemoryKind::Mem));
    ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(c.dw, c.dh, PixelFormat::Rgb, MemoryKind::Mem));
    fill_random(src, rng);
    ConvertOptions o;
    o.interpolation = c.interpolation;
    ASSERT_OK(convert(src, dst, o));
    EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "")
        << c.sw << "x" << c.sh << " -> " << c.dw << "x" << c.dh << " interpolation " << int(c.interpolation);
  }
}

TEST_F(GlConvert, StridedDestinationViewsAreWrittenElementByElement) {
  std::mt19937 rng(5);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(48, 30, PixelFormat::Nv12, MemoryKind::Mem));
  fill_random(src, rng);
  ConvertOptions o;
  o.rotation = Rotation::Cw90;
  // RGB into the first three channels of an RGBA buffer: pixels 4 bytes apart.
  ASSERT_OK_AND_ASSIGN(Tensor rgba, Tensor::create({21, 13, 4}, DType::U8, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor rgb_view, rgba.slice(2, 0, 3));
  // Planar f32 rows padded by a slice of wider rows; interleaved f32 through a permuted view.
  ASSERT_OK_AND_ASSIGN(Tensor wide, Tensor::create({3, 21, 19}, DType::F32, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor planar_view, wide.slice(2, 0, 13));
  ASSERT_OK_AND_ASSIGN(Tensor chw, Tensor::create({3, 21, 13}, DType::F32, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor hwc_view, chw.permute({1, 2, 0}));
  for (const Tensor* dst : {&rgb_view, &planar_view, &hwc_view}) {
    ASSERT_OK(convert(src, *dst, o));
    EXPECT_EQ(report(reference::compare(src, *dst, o, 5, kTolerance)), "") << dst->layout().name();
  }
}

TEST_F(GlConvert, SourcePixelsWithGapsAreReadThroughTheirStrides) {
  std::mt19937 rng(7);
  ASSERT_OK_AND_ASSIGN(Tensor dense, Tensor::image(40, 30, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor rgbx, Tensor::create({30, 40, 4}, DType::U8, MemoryKind::Mem));
  fill_random(dense, rng);
  fill_random(rgbx, rng);
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(24, 24, PixelFormat::Rgb, MemoryKind::Mem));
  ConvertOptions o;
  o.rotation = Rotation::Cw90;
  o.interpolation = Interpolation::Area;
  {
    ASSERT_OK_AND_ASSIGN(TensorMap from, dense.map(CpuAccess::Read));
    ASSERT_OK_AND_ASSIGN(TensorMap to, rgbx.map(CpuAccess::Write));
    for (int64_t y = 0; y < 30; ++y) {
      for (int64_t x = 0; x < 40; ++x) {
        std::memcpy(to.data() + y * to.strides()[0] + x * 4, from.data() + y * from.strides()[0] + x * 3, 3);
      }
    }
  }
  // The same pixels 4 bytes apart (the fourth byte random) describe the same image.
  ASSERT_OK(convert(dense, dst, o));
  EXPECT_EQ(report(reference::compare(dense, dst, o, 5, kTolerance)), "");
  ASSERT_OK_AND_ASSIGN(Tensor expected, dst.materialize(MemoryKind::Mem));
  {
    ASSERT_OK_AND_ASSIGN(TensorMap in, rgbx.map(CpuAccess::Read));
    ASSERT_OK_AND_ASSIGN(TensorMap out, dst.map(CpuAccess::Write));
    ImageRef s = describe(in, PixelFormat::Rgba);
    s.format = PixelFormat::Rgb;
    const ImageRef d = describe(out, PixelFormat::Rgb);
    EXPECT_EQ(converter_->unsupported(s, d, o), std::nullopt);
    ASSERT_OK(context_->run([&] { return converter_->run(s, d, Rect{0, 0, 40, 30}, o); }));
  }
  ASSERT_OK_AND_ASSIGN(TensorMap a, expected.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(TensorMap b, dst.map(CpuAccess::Read));
  for (int64_t y = 0; y < 24; ++y) {
    EXPECT_EQ(std::memcmp(a.data() + y * a.strides()[0], b.data() + y * b.strides()[0], 24 * 3), 0) << "row " << y;
  }
}

TEST_F(GlConvert, RepeatedCallsOfOneGeometryStayCorrectAsOtherOptionsChange) {
  std::mt19937 rng(11);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(64, 48, PixelFormat::I420, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(40, 40, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32));
  for (int i = 0; i < 6; ++i) {
    fill_random(src, rng);
    ConvertOptions o;
    o.resize = ResizeMode::Letterbox;
    o.matrix = static_cast<ColorMatrix>(i % 2);
    o.range = static_cast<ColorRange>((i / 2) % 2);
    o.mean = {0.1f * float(i), 0.2f, 0.3f, 0};
    o.std = {0.5f, 0.25f + 0.1f * float(i), 1, 1};
    o.pad = {uint8_t(10 * i), 0, 255, 255};
    o.swap_rb = i >= 3;
    ASSERT_OK(convert(src, dst, o));
    EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "") << "call " << i;
  }
}

// A GL buffer holding `lead` bytes of junk and then `size` bytes from `bytes`; on the GL thread.
GLuint make_buffer(const std::byte* bytes, int64_t size, int64_t lead) {
  GLuint buffer = 0;
  glGenBuffers(1, &buffer);
  glBindBuffer(GL_COPY_WRITE_BUFFER, buffer);
  std::vector<std::byte> data(static_cast<std::size_t>(lead + size), std::byte{0x5a});
  if (bytes != nullptr) std::memcpy(data.data() + lead, bytes, static_cast<std::size_t>(size));
  glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(data.size()), data.data(), GL_STREAM_COPY);
  glBindBuffer(GL_COPY_WRITE_BUFFER, 0);
  return buffer;
}

// The bytes a dense plane's rows span, from its first element.
int64_t plane_bytes(const ImageRef& g, int plane, int64_t row_bytes, int64_t rows) {
  return (rows - 1) * g.planes[plane].row + row_bytes;
}

TEST_F(GlConvert, SourcesAndDestinationsInGlBuffersMatchTheReference) {
  std::mt19937 rng(13);
  // Planar f32 rows of 256 bytes are read back in place; RGB rows of 111 bytes and NV12 rows of
  // 38 are copied row by row on the GL side; RGB pixels 4 bytes apart are placed by the CPU.
  struct Case {
    PixelFormat to;
    DType dtype;
    int64_t width;
    bool strided;
  };
  for (const Case& c :
       {Case{PixelFormat::PlanarRgb, DType::F32, 64, false}, Case{PixelFormat::Rgb, DType::U8, 37, false},
        Case{PixelFormat::Nv12, DType::U8, 38, false}, Case{PixelFormat::Rgb, DType::U8, 37, true}}) {
    ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(96, 64, PixelFormat::Nv12, MemoryKind::Mem));
    ASSERT_OK_AND_ASSIGN(Tensor rgbx, Tensor::create({40, c.width, 4}, DType::U8, MemoryKind::Mem));
    ASSERT_OK_AND_ASSIGN(Tensor dst,
                         c.strided ? rgbx.slice(2, 0, 3) : Tensor::image(c.width, 40, c.to, MemoryKind::Mem, c.dtype));
    fill_random(src, rng);
    ConvertOptions o;
    o.resize = ResizeMode::Letterbox;
    o.flip = Flip::Horizontal;
    o.crop = Rect{6, 4, 86, 58};  // only this window of each plane is uploaded
    ASSERT_OK_AND_ASSIGN(TensorMap in, src.map(CpuAccess::Read));
    ASSERT_OK_AND_ASSIGN(TensorMap out, dst.map(CpuAccess::ReadWrite));
    const ImageRef host_src = describe(in, PixelFormat::Nv12);
    const ImageRef host_dst = describe(out, c.to);
    ImageRef gl_src = host_src, gl_dst = host_dst;
    auto src_extent = [&](int i) { return plane_bytes(host_src, i, 96, i == 0 ? 64 : 32); };
    auto dst_extent = [&](int i) {
      const bool chroma = c.to == PixelFormat::Nv12 && i == 1;
      const int64_t rows = chroma ? 20 : 40, width = chroma ? c.width / 2 : c.width;
      const int64_t channels = chroma ? 2 : c.to == PixelFormat::Rgb ? 3 : 1;
      const PlaneRef& p = host_dst.planes[i];
      return (rows - 1) * p.row + (width - 1) * p.pixel + (channels - 1) * p.comp +
             static_cast<int64_t>(size_of(c.dtype));
    };
    const int64_t lead = 64;  // buffer offsets that are not 0
    Result<void> done = context_->run([&]() -> Result<void> {
      for (int i = 0; i < gl_src.plane_count; ++i) {
        gl_src.planes[i].base = nullptr;
        gl_src.planes[i].gl_buffer = make_buffer(host_src.planes[i].base, src_extent(i), lead);
        gl_src.planes[i].offset = lead;
      }
      for (int i = 0; i < gl_dst.plane_count; ++i) {
        gl_dst.planes[i].base = nullptr;
        gl_dst.planes[i].gl_buffer = make_buffer(nullptr, dst_extent(i), lead);
        gl_dst.planes[i].offset = lead;
      }
      EXPECT_EQ(converter_->unsupported(gl_src, gl_dst, o), std::nullopt);
      auto ran = converter_->run(gl_src, gl_dst, *o.crop, o);
      for (int i = 0; i < gl_dst.plane_count && ran; ++i) {
        glBindBuffer(GL_COPY_READ_BUFFER, gl_dst.planes[i].gl_buffer);
        const void* p = glMapBufferRange(GL_COPY_READ_BUFFER, lead, dst_extent(i), GL_MAP_READ_BIT);
        if (p != nullptr) std::memcpy(host_dst.planes[i].base, p, static_cast<std::size_t>(dst_extent(i)));
        glUnmapBuffer(GL_COPY_READ_BUFFER);
        glBindBuffer(GL_COPY_READ_BUFFER, 0);
      }
      for (int i = 0; i < gl_src.plane_count; ++i) glDeleteBuffers(1, &gl_src.planes[i].gl_buffer);
      for (int i = 0; i < gl_dst.plane_count; ++i) glDeleteBuffers(1, &gl_dst.planes[i].gl_buffer);
      return ran;
    });
    ASSERT_OK(done);
    EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "") << to_string(c.to);
  }
}

TEST_F(GlConvert, PlanesAlreadyInR8TexturesAreSampledInPlace) {
  std::mt19937 rng(21);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(64, 48, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(50, 30, PixelFormat::Bgra, MemoryKind::Mem));
  fill_random(src, rng);
  ConvertOptions o;
  o.rotation = Rotation::Cw270;
  o.crop = Rect{2, 4, 60, 40};
  {
    ASSERT_OK_AND_ASSIGN(TensorMap in, src.map(CpuAccess::Read));
    ASSERT_OK_AND_ASSIGN(TensorMap out, dst.map(CpuAccess::Write));
    ImageRef s = describe(in, PixelFormat::Nv12);
    const ImageRef d = describe(out, PixelFormat::Bgra);
    // What an imported DMA-BUF looks like to the converter: one R8 (unorm) texture per plane.
    ASSERT_OK(context_->run([&]() -> Result<void> {
      GLuint textures[2] = {};
      glGenTextures(2, textures);
      for (int i = 0; i < 2; ++i) {
        glBindTexture(GL_TEXTURE_2D, textures[i]);
        glTexStorage2D(GL_TEXTURE_2D, 1, GL_R8, 64, i == 0 ? 48 : 24);
        glPixelStorei(GL_UNPACK_ROW_LENGTH, static_cast<GLint>(s.planes[i].row));
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, 64, i == 0 ? 48 : 24, GL_RED, GL_UNSIGNED_BYTE, s.planes[i].base);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        s.planes[i].base = nullptr;
        s.planes[i].gl_texture = textures[i];
      }
      glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
      auto ran = converter_->run(s, d, *o.crop, o);
      glDeleteTextures(2, textures);
      return ran;
    }));
  }
  EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "");
}

TEST_F(GlConvert, PairsItCannotConvertAreDeclinedWithAReason) {
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(32, 16, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(16, 16, PixelFormat::Rgb, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(TensorMap in, src.map(CpuAccess::Read));
  ASSERT_OK_AND_ASSIGN(TensorMap out, dst.map(CpuAccess::Write));
  const ConvertOptions o;
  const ImageRef s = describe(in, PixelFormat::Rgb);
  const ImageRef d = describe(out, PixelFormat::Rgb);
  EXPECT_EQ(converter_->unsupported(s, d, o), std::nullopt);

  ASSERT_OK_AND_ASSIGN(Tensor upside_down, src.flip(0));
  ASSERT_OK_AND_ASSIGN(TensorMap flipped, upside_down.map(CpuAccess::Read));
  EXPECT_EQ(converter_->unsupported(describe(flipped, PixelFormat::Rgb), d, o),
            "source rows run upward (negative pitch)");
  ASSERT_OK_AND_ASSIGN(Tensor mirrored, src.flip(1));
  ASSERT_OK_AND_ASSIGN(TensorMap mirrored_map, mirrored.map(CpuAccess::Read));
  EXPECT_EQ(converter_->unsupported(describe(mirrored_map, PixelFormat::Rgb), d, o),
            "source pixels run right to left (negative stride)");

  ImageRef i8 = s;
  i8.dtype = DType::I8;
  EXPECT_EQ(converter_->unsupported(i8, d, o), "i8 source");
  ImageRef nv12_f32 = d;
  nv12_f32.format = PixelFormat::Nv12;
  nv12_f32.dtype = DType::F32;
  EXPECT_EQ(converter_->unsupported(s, nv12_f32, o), "nv12 f32 output");

  // A plane wider than a texture can be: described, never touched.
  const int max = context_->info().max_texture_size;
  ASSERT_GT(max, 0);
  ImageRef wide = s;
  wide.format = PixelFormat::Grey;
  wide.width = max + 2;
  wide.planes[0] = PlaneRef{.base = in.data(), .row = max + 2, .pixel = 1};
  EXPECT_EQ(
      converter_->unsupported(wide, d, o),
      "a " + std::to_string(max + 2) + "-byte-wide source plane exceeds GL_MAX_TEXTURE_SIZE " + std::to_string(max));
  ImageRef overlapping = s;
  overlapping.planes[0].row = 50;
  EXPECT_EQ(converter_->unsupported(overlapping, d, o), "source rows overlap (pitch 50 < 96 bytes a row)");
}

TEST_F(GlConvert, CallsThatRepeatAGeometryMakeNoGlObjects) {
  std::mt19937 rng(17);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(320, 180, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::create({3, 96, 96}, DType::F32, MemoryKind::Mem));
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  ASSERT_OK(convert(src, dst, o));
  const uint64_t made = context_->run([] { return converter_->objects_made(); });
  for (int i = 0; i < 4; ++i) {
    fill_random(src, rng);
    o.matrix = static_cast<ColorMatrix>(i % 2);
    o.mean = {0.1f * float(i), 0, 0, 0};
    o.pad = {uint8_t(i), 0, 0, 255};
    ASSERT_OK(convert(src, dst, o));
    EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "") << "call " << i;
  }
  EXPECT_EQ(context_->run([] { return converter_->objects_made(); }), made);
}

TEST_F(GlConvert, AGlErrorComesBackAsUnavailableNamingTheCallAndLeavesTheConverterUsable) {
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(64, 48, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(32, 32, PixelFormat::Rgb, MemoryKind::Mem));
  Result<void> done;
  {
    ASSERT_OK_AND_ASSIGN(TensorMap out, dst.map(CpuAccess::Write));
    const ImageRef d = describe(out, PixelFormat::Rgb);
    ImageRef short_source = d;
    short_source.format = PixelFormat::Nv12;
    short_source.width = 64;
    short_source.height = 48;
    short_source.plane_count = 2;
    // A GL buffer of 16 bytes cannot hold a 64x48 image: GL refuses the upload.
    done = context_->run([&]() -> Result<void> {
      const std::byte bytes[16] = {};
      const GLuint buffer = make_buffer(bytes, sizeof bytes, 0);
      for (int i = 0; i < 2; ++i)
        short_source.planes[i] = {.row = 64, .pixel = i == 0 ? 1 : 2, .comp = 1, .gl_buffer = buffer};
      auto ran = converter_->run(short_source, d, Rect{0, 0, 64, 48}, ConvertOptions{});
      glDeleteBuffers(1, &buffer);
      return ran;
    });
  }
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code(), ErrorCode::Unavailable);
  EXPECT_NE(done.error().message().find("glTexSubImage2D"), std::string::npos) << done.error().message();
  EXPECT_NE(done.error().message().find("GL_INVALID_OPERATION"), std::string::npos) << done.error().message();
  ASSERT_OK(convert(src, dst, ConvertOptions{}));
  EXPECT_EQ(report(reference::compare(src, dst, ConvertOptions{}, 5, kTolerance)), "");
}

// Milliseconds per call of a conversion already seen once (textures and tap tables made).
double time_per_call(const std::function<Result<void>()>& convert_once) {
  if (!convert_once()) return -1;
  constexpr int kRuns = 5;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) {
    if (!convert_once()) return -1;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kRuns;
}

TEST_F(GlConvert, FullHdNv12ToALetterboxedPlanarF32InputTakesMeasuredTime) {
  std::mt19937 rng(1080);
  ASSERT_OK_AND_ASSIGN(Tensor src, Tensor::image(1920, 1080, PixelFormat::Nv12, MemoryKind::Mem));
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::create({3, 640, 640}, DType::F32, MemoryKind::Mem));
  fill_random(src, rng);
  ConvertOptions o;
  o.resize = ResizeMode::Letterbox;
  o.mean = {0.485f, 0.456f, 0.406f, 0};
  o.std = {0.229f, 0.224f, 0.225f, 1};
  for (Interpolation interpolation : {Interpolation::Bilinear, Interpolation::Area}) {
    o.interpolation = interpolation;
    const double ms = time_per_call([&] { return convert(src, dst, o); });
    ASSERT_GT(ms, 0);
    std::cout << "1920x1080 nv12 -> 640x640 planar f32 letterbox, interpolation " << int(interpolation) << ": " << ms
              << " ms per call (upload, convert, read back) on " << context_->info().renderer << "\n";
    RecordProperty(interpolation == Interpolation::Area ? "ms_area" : "ms_bilinear", std::to_string(ms));
    // The reference's area taps scan the whole source axis per output: too slow at this size.
    if (interpolation == Interpolation::Bilinear) {
      EXPECT_EQ(report(reference::compare(src, dst, o, 5, kTolerance)), "");
    }
  }
  // A ratio that is not an integer: two taps per axis from the tables.
  ASSERT_OK_AND_ASSIGN(Tensor small, Tensor::create({3, 416, 416}, DType::F32, MemoryKind::Mem));
  o.interpolation = Interpolation::Bilinear;
  const double small_ms = time_per_call([&] { return convert(src, small, o); });
  ASSERT_GT(small_ms, 0);
  std::cout << "1920x1080 nv12 -> 416x416 planar f32 letterbox, bilinear: " << small_ms << " ms per call\n";
  for (PixelFormat to : {PixelFormat::Rgb, PixelFormat::Rgba}) {
    ASSERT_OK_AND_ASSIGN(Tensor full, Tensor::image(1920, 1080, to, MemoryKind::Mem));
    const double ms = time_per_call([&] { return convert(src, full, ConvertOptions{}); });
    ASSERT_GT(ms, 0);
    std::cout << "1920x1080 nv12 -> 1920x1080 " << to_string(to) << " u8: " << ms << " ms per call\n";
  }
}

}  // namespace
}  // namespace memhal
