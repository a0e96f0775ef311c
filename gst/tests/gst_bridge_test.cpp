// memhal/gst.hpp: GstBuffer <-> Tensor without copying, with keep-alives.
#include <gst/allocators/allocators.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memhal/gst.hpp>
#include <memhal/tensor_map.hpp>

#include "test_support.hpp"

namespace memhal {
namespace {

class GstBridge : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gst_init(nullptr, nullptr); }
};

GstVideoInfo nv12_info(guint width, guint height) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, width, height);
  return info;
}

int refcount(GstBuffer* buffer) {
  return GST_MINI_OBJECT_REFCOUNT_VALUE(buffer);
}

TEST_F(GstBridge, ShmTensorBecomesFdMemoryWithVideoMetaAndComesBack) {
  // 100x50 NV12 with rows padded to 256 bytes: the meta must carry the pitch and UV offset.
  ASSERT_OK_AND_ASSIGN(const Layout layout, Layout::image(100, 50, PixelFormat::Nv12, DType::U8, 256));
  ASSERT_OK_AND_ASSIGN(Tensor tensor, Tensor::create({layout.byte_extent().end}, DType::U8, MemoryKind::Shm));
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::from_fd(tensor.fd(), layout));
  ASSERT_OK_AND_ASSIGN(GstBuffer * buffer, gst_buffer_from_tensor(image));
  ASSERT_EQ(gst_buffer_n_memory(buffer), 1U);
  GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
  EXPECT_TRUE(gst_is_fd_memory(memory));
  EXPECT_TRUE(GST_MEMORY_IS_READONLY(memory));
  const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->format, GST_VIDEO_FORMAT_NV12);
  EXPECT_EQ(meta->width, 100U);
  EXPECT_EQ(meta->height, 50U);
  ASSERT_EQ(meta->n_planes, 2U);
  EXPECT_EQ(meta->stride[0], 256);
  EXPECT_EQ(meta->stride[1], 256);
  EXPECT_EQ(meta->offset[1], static_cast<gsize>(layout.planes()[1].offset));

  ASSERT_OK_AND_ASSIGN(Tensor back, tensor_from_gst_buffer(buffer, nv12_info(100, 50)));
  EXPECT_EQ(back.buffer_id(), image.buffer_id());
  gst_buffer_unref(buffer);

  // What GStreamer sees through its own mapping is the tensor's bytes.
  {
    ASSERT_OK_AND_ASSIGN(TensorMap map, image.map(CpuAccess::Write));
    std::memset(map.mutable_plane(1).value(), 0x5a, 256);
  }
  ASSERT_OK_AND_ASSIGN(buffer, gst_buffer_from_tensor(image));
  GstVideoFrame frame;
  GstVideoInfo info = nv12_info(100, 50);
  ASSERT_TRUE(gst_video_frame_map(&frame, &info, buffer, GST_MAP_READ));
  EXPECT_EQ(static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 1))[0], 0x5a);
  EXPECT_EQ(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 1), 256);
  gst_video_frame_unmap(&frame);
  gst_buffer_unref(buffer);
}

TEST_F(GstBridge, SystemMemoryIsWrappedAndHoldsTheBuffer) {
  GstVideoInfo info = nv12_info(64, 48);
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buffer, 0, 7, gst_buffer_get_size(buffer));
  gst_buffer_memset(buffer, GST_VIDEO_INFO_PLANE_OFFSET(&info, 1), 9, 64 * 24);
  {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, tensor_from_gst_buffer(buffer, info));
    EXPECT_EQ(tensor.memory(), MemoryKind::Mem);
    EXPECT_EQ(tensor.pixel_format(), PixelFormat::Nv12);
    EXPECT_EQ(refcount(buffer), 2);  // the tensor holds the buffer
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
    EXPECT_EQ(static_cast<uint8_t>(map.const_plane(0)[0]), 7);
    EXPECT_EQ(static_cast<uint8_t>(map.const_plane(1)[0]), 9);
  }
  EXPECT_EQ(refcount(buffer), 1);
  gst_buffer_unref(buffer);
}

TEST_F(GstBridge, FdMemoryFromElsewhereIsImportedByFd) {
  GstVideoInfo info = nv12_info(64, 48);
  const int fd = memfd_create("gst-bridge-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(GST_VIDEO_INFO_SIZE(&info))), 0);
  GstAllocator* allocator = gst_fd_allocator_new();
  GstBuffer* buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, gst_fd_allocator_alloc(allocator, fd, GST_VIDEO_INFO_SIZE(&info),
                                                          GST_FD_MEMORY_FLAG_NONE));  // GStreamer closes fd
  gst_buffer_memset(buffer, GST_VIDEO_INFO_PLANE_OFFSET(&info, 1), 3, 64);
  {
    ASSERT_OK_AND_ASSIGN(Tensor tensor, tensor_from_gst_buffer(buffer, info));
    EXPECT_EQ(tensor.memory(), MemoryKind::Shm);
    EXPECT_GT(refcount(buffer), 1);
    ASSERT_OK_AND_ASSIGN(TensorMap map, tensor.map(CpuAccess::Read));
    EXPECT_EQ(static_cast<uint8_t>(map.const_plane(1)[0]), 3);
  }
  EXPECT_EQ(refcount(buffer), 1);
  gst_buffer_unref(buffer);
  gst_object_unref(allocator);
}

TEST_F(GstBridge, UnsupportedFormatsAreNamed) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_Y444, 16, 16);
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  const auto tensor = tensor_from_gst_buffer(buffer, info);
  EXPECT_ERROR(ErrorCode::NotImplemented, tensor);
  EXPECT_NE(tensor.error().message().find("Y444"), std::string::npos) << tensor.error().message();
  gst_buffer_unref(buffer);
  ASSERT_OK_AND_ASSIGN(Tensor plain, Tensor::create({16}, DType::U8, MemoryKind::Shm));
  EXPECT_ERROR(ErrorCode::InvalidArgument, gst_buffer_from_tensor(plain));
}

TEST_F(GstBridge, CacheMakesOneMemoryPerBufferAndEachBufferHoldsItsTensor) {
  ASSERT_OK_AND_ASSIGN(Tensor image, Tensor::image(64, 48, PixelFormat::Rgba, MemoryKind::Shm));
  GstMemoryCache cache;
  ASSERT_OK_AND_ASSIGN(GstBuffer * first, cache.buffer_from_tensor(image));
  ASSERT_OK_AND_ASSIGN(GstBuffer * second, cache.buffer_from_tensor(image));
  EXPECT_EQ(cache.memories_made(), 1U);
  EXPECT_EQ(gst_buffer_peek_memory(first, 0), gst_buffer_peek_memory(second, 0));
  ASSERT_OK_AND_ASSIGN(GstCaps * caps, gst_caps_from_tensor(image, 40'000'000));
  const GstStructure* structure = gst_caps_get_structure(caps, 0);
  EXPECT_STREQ(gst_structure_get_name(structure), "video/x-raw");
  EXPECT_STREQ(gst_structure_get_string(structure, "format"), "RGBA");
  int width = 0, height = 0, fps_n = 0, fps_d = 0;
  EXPECT_TRUE(gst_structure_get_int(structure, "width", &width) && gst_structure_get_int(structure, "height", &height));
  EXPECT_EQ(width, 64);
  EXPECT_EQ(height, 48);
  EXPECT_TRUE(gst_structure_get_fraction(structure, "framerate", &fps_n, &fps_d));
  EXPECT_EQ(fps_n, 25);
  EXPECT_EQ(fps_d, 1);
  gst_caps_unref(caps);
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGBA, 64, 48);
  ASSERT_OK_AND_ASSIGN(Tensor back, tensor_from_gst_buffer(second, info));
  EXPECT_EQ(back.buffer_id(), image.buffer_id());
  gst_buffer_unref(first);
  gst_buffer_unref(second);
}

}  // namespace
}  // namespace memhal
