/* memhal_camera_* from C99. Everywhere: the errors of a missing device and of something that
 * is not a camera, and the options' defaults. Where a camera exists (the DMA-heap VM with vivid;
 * MEMHAL_TEST_REQUIRE_CAMERA makes its absence a failure): frames that are the driver's buffers,
 * held until the last frame and tensor of them is freed, and Busy when every buffer is held.
 * Prints a closing "N passed, N failed" line. */
#include <memhal/memhal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"

static void test_errors(void) {
  memhal_camera_t* camera = (memhal_camera_t*)&passed; /* must be cleared on failure */
  memhal_camera_options_t options = memhal_camera_options_default();
  CHECK(options.buffers == 4 && options.format == -1 && options.io == MEMHAL_CAMERA_IO_AUTO);
  CHECK(memhal_camera_open("/dev/video-memhal-none", NULL, &camera) == MEMHAL_ERROR_UNAVAILABLE);
  CHECK(camera == NULL);
  CHECK(strstr(memhal_last_error_message(), "/dev/video-memhal-none") != NULL);
  CHECK(memhal_camera_open("/dev/null", &options, &camera) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "not a V4L2 device") != NULL);
  {
    memhal_camera_format_t* formats = (memhal_camera_format_t*)&passed; /* must be cleared */
    size_t count = 99;
    CHECK(memhal_camera_formats("/dev/null", &formats, &count) == MEMHAL_ERROR_INVALID_ARGUMENT);
    CHECK(formats == NULL && count == 0);
    CHECK(strstr(memhal_last_error_message(), "not a V4L2 device") != NULL);
    CHECK(memhal_camera_formats(NULL, &formats, &count) == MEMHAL_ERROR_INVALID_ARGUMENT);
  }
  options.io = 7;
  CHECK(memhal_camera_open("/dev/null", &options, &camera) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "camera io code 7") != NULL);
  options.io = MEMHAL_CAMERA_IO_AUTO;
  options.format = 999;
  CHECK(memhal_camera_open("/dev/null", &options, &camera) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_camera_open(NULL, NULL, &camera) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_camera_next_frame(NULL, 0, NULL) == MEMHAL_ERROR_INVALID_ARGUMENT);
  memhal_camera_free(NULL);
}

static void test_camera(const char* path) {
  memhal_camera_options_t options = memhal_camera_options_default();
  memhal_camera_t* camera = NULL;
  memhal_camera_config_t config;
  memhal_camera_stats_t stats;
  memhal_frame_t* frames[4] = {NULL, NULL, NULL, NULL};
  memhal_frame_t* extra = NULL;
  memhal_tensor_t* tensor = NULL;
  uint32_t format = 0, kind = 0;
  int64_t pts = 0;
  int i;
  options.width = 640;
  options.height = 480;
  options.format = MEMHAL_PIXEL_FORMAT_NV12;
  options.fps = 30;
  options.io = MEMHAL_CAMERA_IO_MMAP;
  CHECK_OK(memhal_camera_open(path, &options, &camera));
  if (camera == NULL) return;
  CHECK_OK(memhal_camera_get_config(camera, &config));
  CHECK(config.width == 640 && config.height == 480 && config.format == MEMHAL_PIXEL_FORMAT_NV12);
  CHECK(config.io == MEMHAL_CAMERA_IO_MMAP && config.buffers == 4 && config.fps == 30.0);
  CHECK(strcmp(memhal_camera_io_notes(camera), "") == 0);
  for (i = 0; i < 4; ++i) CHECK_OK(memhal_camera_next_frame(camera, 2000, &frames[i]));
  CHECK_OK(memhal_frame_domain_kind(frames[0], &kind));
  CHECK(kind == MEMHAL_MEMORY_DOMAIN_KIND_DMABUF);
  CHECK_OK(memhal_frame_pts(frames[0], &pts));
  CHECK(pts > 0);
  CHECK_OK(memhal_frame_to_tensor(frames[0], &tensor));
  CHECK_OK(memhal_tensor_pixel_format(tensor, &format));
  CHECK(format == MEMHAL_PIXEL_FORMAT_NV12);
  CHECK(memhal_camera_next_frame(camera, 2000, &extra) == MEMHAL_ERROR_BUSY);
  CHECK(strstr(memhal_last_error_message(), "4 held") != NULL);
  CHECK(extra == NULL);
  memhal_frame_free(frames[0]); /* the tensor still holds buffer 0 */
  CHECK_OK(memhal_camera_get_stats(camera, &stats));
  CHECK(stats.held == 4 && stats.queued == 0 && stats.frames == 4);
  memhal_tensor_free(tensor);
  CHECK_OK(memhal_camera_get_stats(camera, &stats));
  CHECK(stats.held == 3 && stats.queued == 1);
  CHECK_OK(memhal_camera_next_frame(camera, 2000, &extra));
  memhal_frame_free(extra);
  for (i = 1; i < 4; ++i) memhal_frame_free(frames[i]);
  memhal_camera_free(camera);
}

/* vivid offers NV12 and YUYV at 1280x720 (among others), with frame rates. */
static void test_formats(const char* path) {
  memhal_camera_format_t* formats = NULL;
  size_t count = 0, i;
  int nv12 = 0, yuyv = 0;
  CHECK_OK(memhal_camera_formats(path, &formats, &count));
  CHECK(count > 0 && formats != NULL);
  for (i = 0; i < count; ++i) {
    CHECK(formats[i].fourcc != 0 && formats[i].width > 0 && formats[i].height > 0);
    CHECK(formats[i].fps_count <= 8);
    if (formats[i].format == MEMHAL_PIXEL_FORMAT_NV12 && !formats[i].multi_buffer) nv12 = 1;
    if (formats[i].format == MEMHAL_PIXEL_FORMAT_YUYV) yuyv = 1;
  }
  CHECK(nv12 && yuyv);
  memhal_camera_formats_free(formats);
}

int main(void) {
  memhal_camera_info_t* cameras = NULL;
  size_t count = 99, i;
  const char* path = NULL;
  test_errors();
  CHECK_OK(memhal_camera_list(&cameras, &count));
  for (i = 0; i < count; ++i) {
    CHECK(cameras[i].path[0] == '/' && cameras[i].format_count > 0);
    if (path == NULL && strcmp(cameras[i].driver, "vivid") == 0) path = cameras[i].path;
  }
  if (path != NULL) {
    test_formats(path);
    test_camera(path);
  } else if (getenv("MEMHAL_TEST_REQUIRE_CAMERA") != NULL) {
    ++failed;
    fprintf(stderr, "FAIL: no vivid camera found\n");
  } else {
    printf("camera part skipped: no vivid camera (it runs in the DMA-heap VM with --modules vivid)\n");
  }
  memhal_camera_list_free(cameras);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
