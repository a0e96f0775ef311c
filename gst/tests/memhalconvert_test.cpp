// memhalconvert in one process: appsrc ! memhalconvert ! other/tensors or video ! appsink, its
// output compared with ImageProcessor::convert on the same frame, for fd memory (a memhal Shm
// tensor as GstFdMemory, imported by fd) and system memory (mapped and wrapped) alike.
// Needs the plugin on GST_PLUGIN_PATH (CTest sets it).
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memhal/gst.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/tensor_map.hpp>
#include <optional>
#include <string>
#include <vector>

#include "../gst_internal.hpp"
#include "test_support.hpp"

namespace memhal {
namespace {

constexpr int kWidth = 320;
constexpr int kHeight = 240;
constexpr const char* kInCaps = "video/x-raw,format=NV12,width=320,height=240,framerate=30/1";

class MemhalConvert : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gst_init(nullptr, nullptr); }
  void SetUp() override {
    GstElementFactory* factory = gst_element_factory_find("memhalconvert");
    ASSERT_NE(factory, nullptr) << "memhalconvert is not on GST_PLUGIN_PATH (CTest sets it to the build's plugin)";
    gst_object_unref(factory);
    // 320x240 NV12 in Shm whose layout is GStreamer's default (pitch 320, UV at 76800).
    ASSERT_OK_AND_ASSIGN(image_, Tensor::image(kWidth, kHeight, PixelFormat::Nv12, MemoryKind::Shm));
    ASSERT_OK_AND_ASSIGN(TensorMap map, image_->map(CpuAccess::Write));
    auto* base = const_cast<std::byte*>(gst_detail::buffer_base(map, image_->layout()));
    for (const auto& plane : gst_detail::planes_of(image_->layout())) {
      for (int64_t row = 0; row < plane.height; ++row) {
        for (int64_t x = 0; x < plane.row_bytes; ++x) {
          base[plane.offset + row * plane.pitch + x] = static_cast<std::byte>((x * 5 + row * 3 + (x / 7) * 40) & 0xff);
        }
      }
    }
    ASSERT_EQ(image_->layout().planes()[1].offset, kWidth * kHeight);
  }

  // A system-memory GstBuffer with the image's bytes in GStreamer's default layout.
  GstBuffer* system_buffer() const {
    const auto size = static_cast<gsize>(kWidth * kHeight * 3 / 2);
    GstBuffer* buffer = gst_buffer_new_allocate(nullptr, size, nullptr);
    auto map = image_->map(CpuAccess::Read);
    EXPECT_TRUE(map.has_value());
    if (map) gst_buffer_fill(buffer, 0, gst_detail::buffer_base(*map, image_->layout()), size);
    return buffer;
  }

  // Pushes `input` through `memhalconvert <props> ! <out_caps>` and returns the output bytes.
  std::vector<std::byte> run(GstBuffer* input, const std::string& props, const std::string& out_caps) {
    const std::string desc = std::string("appsrc name=src format=time caps=") + kInCaps + " ! memhalconvert name=c " +
                             props + " ! " + out_caps + " ! appsink name=sink sync=false";
    GError* error = nullptr;
    GstElement* pipeline = gst_parse_launch(desc.c_str(), &error);
    EXPECT_EQ(error, nullptr) << (error != nullptr ? error->message : "");
    if (error != nullptr) g_error_free(error);
    std::vector<std::byte> bytes;
    if (pipeline == nullptr) return bytes;
    GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GST_BUFFER_PTS(input) = 0;
    gst_app_src_push_buffer(GST_APP_SRC(src), input);
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 20 * GST_SECOND);
    EXPECT_NE(sample, nullptr) << "no output from " << desc;
    if (sample != nullptr) {
      GstBuffer* out = gst_sample_get_buffer(sample);
      EXPECT_NE(gst_detail::carried_tensor(out), nullptr) << "the output is not in memhal memory";
      GstMapInfo info;
      EXPECT_TRUE(gst_buffer_map(out, &info, GST_MAP_READ));
      const auto* data = reinterpret_cast<const std::byte*>(info.data);
      bytes.assign(data, data + info.size);
      gst_buffer_unmap(out, &info);
      gst_sample_unref(sample);
    }
    guint64 conversions = 0;
    GstElement* convert = gst_bin_get_by_name(GST_BIN(pipeline), "c");
    g_object_get(convert, "conversions", &conversions, nullptr);
    gst_object_unref(convert);
    EXPECT_EQ(conversions, 1U);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(src);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
    return bytes;
  }

  // ImageProcessor (CPU) on the same image into a dense `dst`.
  std::vector<std::byte> reference(Tensor dst, const ConvertOptions& options) const {
    auto processor = ImageProcessor::create({.backend = ImageBackend::Cpu});
    EXPECT_TRUE(processor.has_value());
    EXPECT_TRUE(processor->convert(*image_, dst, options).has_value());
    auto map = dst.map(CpuAccess::Read);
    EXPECT_TRUE(map.has_value());
    const std::byte* data = map->const_data();
    return {data, data + dst.layout().byte_extent().end};
  }

  std::optional<Tensor> image_;  // no default Tensor
};

TEST_F(MemhalConvert, FloatTensorEqualsImageProcessorFromFdAndSystemMemory) {
  ConvertOptions options;
  options.resize = ResizeMode::Letterbox;
  options.pad = {0, 0, 0, 255};
  options.mean = {0.485F, 0.456F, 0.406F, 0};
  options.std = {0.229F, 0.224F, 0.225F, 1};
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(256, 256, PixelFormat::PlanarRgb, MemoryKind::Mem, DType::F32, 1));
  const auto want = reference(dst, options);
  ASSERT_EQ(want.size(), 256U * 256U * 3U * 4U);
  const std::string props = "resize=letterbox pad=0,0,0 mean=0.485,0.456,0.406 std=0.229,0.224,0.225";
  const std::string caps = "other/tensors,types=float32,dimensions=256:256:3:1";
  ASSERT_OK_AND_ASSIGN(GstBuffer * fd_buffer, gst_buffer_from_tensor(*image_));
  EXPECT_EQ(run(fd_buffer, props, caps), want) << "fd memory input";
  EXPECT_EQ(run(system_buffer(), props, caps), want) << "system memory input";
}

TEST_F(MemhalConvert, Int8InterleavedTensorWithCropAndFlipEqualsImageProcessor) {
  ConvertOptions options;
  options.crop = Rect{16, 8, 200, 150};
  options.flip = Flip::Horizontal;
  options.matrix = ColorMatrix::Bt709;
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(100, 75, PixelFormat::Rgb, MemoryKind::Mem, DType::I8, 1));
  const auto want = reference(dst, options);
  const std::string props = "crop=16,8,200,150 flip=horizontal matrix=bt709";
  const std::string caps = "other/tensors,types=int8,dimensions=3:100:75:1";
  ASSERT_OK_AND_ASSIGN(GstBuffer * fd_buffer, gst_buffer_from_tensor(*image_));
  EXPECT_EQ(run(fd_buffer, props, caps), want) << "fd memory input";
  EXPECT_EQ(run(system_buffer(), props, caps), want) << "system memory input";
}

TEST_F(MemhalConvert, BgrVideoEqualsImageProcessor) {
  ConvertOptions options;
  options.rotation = Rotation::Cw270;
  ASSERT_OK_AND_ASSIGN(Tensor dst, Tensor::image(240, 320, PixelFormat::Bgr, MemoryKind::Mem, DType::U8, 1));
  const auto want = reference(dst, options);
  ASSERT_OK_AND_ASSIGN(GstBuffer * fd_buffer, gst_buffer_from_tensor(*image_));
  EXPECT_EQ(run(fd_buffer, "rotation=cw270", "video/x-raw,format=BGR"), want);
}

}  // namespace
}  // namespace memhal
