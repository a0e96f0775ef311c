/* memhal_tensor_wrap and memhal_tensor_wrap_image from C99: the caller's memory used in place,
 * released exactly once after the last tensor, map and frame of it, and clear errors. Prints a
 * closing "N passed, N failed" line. */
#include <memhal/memhal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"

/* An NV12 image with padded rows and a gap before the chroma plane, as a decoder may give. */
enum {
  kWidth = 64,
  kHeight = 32,
  kPitch = 80,
  kChroma = kPitch * kHeight + 96,
  kSize = kChroma + kPitch * kHeight / 2
};

static void count_release(void* user_data) {
  ++*(int*)user_data;
}

static void free_release(void* user_data) {
  free(user_data);
}

static int wrap_nv12(unsigned char* bytes, uint32_t access, int* released, memhal_tensor_t** out) {
  memhal_plane_t planes[2];
  memset(planes, 0, sizeof planes);
  planes[0].pitch = kPitch;
  planes[1].offset = kChroma;
  planes[1].pitch = kPitch;
  return memhal_tensor_wrap_image(bytes, kWidth, kHeight, MEMHAL_PIXEL_FORMAT_NV12, planes, 2, access, count_release,
                                  released, out);
}

static void test_memory_is_used_in_place_both_ways(void) {
  unsigned char* bytes = calloc(kSize, 1);
  memhal_tensor_t* image = NULL;
  memhal_map_t* map = NULL;
  uint32_t format = 0, memory = 99;
  int released = 0;
  CHECK_OK(wrap_nv12(bytes, MEMHAL_CPU_ACCESS_READ_WRITE, &released, &image));
  CHECK_OK(memhal_tensor_pixel_format(image, &format));
  CHECK(format == MEMHAL_PIXEL_FORMAT_NV12);
  CHECK_OK(memhal_tensor_memory(image, &memory));
  CHECK(memory == MEMHAL_MEMORY_KIND_MEM);
  bytes[kChroma + kPitch + 5] = 42;
  CHECK_OK(memhal_tensor_map(image, MEMHAL_CPU_ACCESS_READ_WRITE, &map));
  CHECK(memhal_map_plane(map, 0) == (void*)bytes);
  CHECK(memhal_map_plane(map, 1) == (void*)(bytes + kChroma));
  CHECK(((unsigned char*)memhal_map_plane(map, 1))[kPitch + 5] == 42);
  ((unsigned char*)memhal_map_plane(map, 0))[3 * kPitch + 1] = 17;
  memhal_map_free(map);
  CHECK(bytes[3 * kPitch + 1] == 17);
  CHECK(released == 0);
  memhal_tensor_free(image);
  CHECK(released == 1);
  free(bytes);
}

static void test_release_waits_for_the_last_view_map_and_frame(void) {
  unsigned char* bytes = calloc(kSize, 1);
  memhal_tensor_t *image = NULL, *crop = NULL, *back = NULL;
  memhal_frame_t* frame = NULL;
  memhal_frame_t* branches[2] = {NULL, NULL};
  memhal_map_t* map = NULL;
  int released = 0;
  CHECK_OK(wrap_nv12(bytes, MEMHAL_CPU_ACCESS_READ, &released, &image));
  CHECK_OK(memhal_tensor_crop(image, 16, 8, 32, 16, &crop));
  CHECK_OK(memhal_frame_from_tensor(image, 0, 1, &frame));
  CHECK_OK(memhal_tee_push(frame, 2, branches));
  CHECK_OK(memhal_frame_to_tensor(branches[1], &back));
  CHECK_OK(memhal_tensor_map(back, MEMHAL_CPU_ACCESS_READ, &map));
  memhal_tensor_free(image);
  memhal_tensor_free(crop);
  memhal_frame_free(frame);
  memhal_frame_free(branches[0]);
  memhal_frame_free(branches[1]);
  memhal_tensor_free(back);
  CHECK(released == 0); /* the map still reads the memory */
  memhal_map_free(map);
  CHECK(released == 1);
  free(bytes);
}

static void test_read_only_memory_refuses_write_maps(void) {
  static const float values[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 2};
  const int64_t strides[2] = {12, 4}; /* every row skips its last value */
  memhal_tensor_t* tensor = NULL;
  memhal_map_t* map = NULL;
  CHECK_OK(
      memhal_tensor_wrap(values, shape, strides, 2, 4, MEMHAL_DTYPE_F32, MEMHAL_CPU_ACCESS_READ, NULL, NULL, &tensor));
  CHECK(memhal_tensor_map(tensor, MEMHAL_CPU_ACCESS_WRITE, &map) == MEMHAL_ERROR_PERMISSION_DENIED && map == NULL);
  CHECK(strstr(memhal_last_error_message(), "read-only") != NULL);
  CHECK_OK(memhal_tensor_map(tensor, MEMHAL_CPU_ACCESS_READ, &map));
  CHECK(memhal_map_data(map) == (const void*)&values[1]);
  memhal_map_free(map);
  memhal_tensor_free(tensor);
}

static void test_convert_reads_a_wrapped_image_like_an_allocated_copy(void) {
  unsigned char* bytes = malloc(kSize);
  memhal_tensor_t *wrapped = NULL, *allocated = NULL, *rgb_a = NULL, *rgb_b = NULL;
  memhal_image_processor_t* processor = NULL;
  memhal_map_t *map = NULL, *other = NULL;
  int released = 0, i, y, differing = 0;
  for (i = 0; i < kSize; ++i) bytes[i] = (unsigned char)(i * 13 + (i >> 7));
  CHECK_OK(wrap_nv12(bytes, MEMHAL_CPU_ACCESS_READ, &released, &wrapped));
  CHECK_OK(memhal_tensor_image(kWidth, kHeight, MEMHAL_PIXEL_FORMAT_NV12, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_U8,
                               &allocated));
  CHECK_OK(memhal_tensor_map(allocated, MEMHAL_CPU_ACCESS_WRITE, &map));
  for (y = 0; y < kHeight; ++y) memcpy((unsigned char*)memhal_map_plane(map, 0) + y * 64, bytes + y * kPitch, kWidth);
  for (y = 0; y < kHeight / 2; ++y)
    memcpy((unsigned char*)memhal_map_plane(map, 1) + y * 64, bytes + kChroma + y * kPitch, kWidth);
  memhal_map_free(map);
  CHECK_OK(
      memhal_tensor_image(kWidth, kHeight, MEMHAL_PIXEL_FORMAT_RGB, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_U8, &rgb_a));
  CHECK_OK(
      memhal_tensor_image(kWidth, kHeight, MEMHAL_PIXEL_FORMAT_RGB, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_U8, &rgb_b));
  CHECK_OK(memhal_image_processor_create(1, &processor));
  CHECK_OK(memhal_image_processor_convert(processor, wrapped, rgb_a, NULL));
  CHECK_OK(memhal_image_processor_convert(processor, allocated, rgb_b, NULL));
  CHECK_OK(memhal_tensor_map(rgb_a, MEMHAL_CPU_ACCESS_READ, &map));
  CHECK_OK(memhal_tensor_map(rgb_b, MEMHAL_CPU_ACCESS_READ, &other));
  for (y = 0; y < kHeight; ++y) {
    /* Tensor.image rows are 64-byte aligned: 192 bytes of an RGB row, pitch 192. */
    differing += memcmp((unsigned char*)memhal_map_data(map) + y * 192,
                        (unsigned char*)memhal_map_data(other) + y * 192, kWidth * 3) != 0;
  }
  CHECK(differing == 0);
  memhal_map_free(map);
  memhal_map_free(other);
  memhal_image_processor_free(processor);
  memhal_tensor_free(rgb_a);
  memhal_tensor_free(rgb_b);
  memhal_tensor_free(allocated);
  memhal_tensor_free(wrapped);
  CHECK(released == 1);
  free(bytes);
}

static void test_packed_planes_need_no_description(void) {
  /* planes NULL: I420 packed, Y then U then V, as a raw .yuv file holds them. */
  unsigned char* bytes = calloc(kWidth * kHeight * 3 / 2, 1);
  memhal_tensor_t* image = NULL;
  memhal_map_t* map = NULL;
  CHECK_OK(memhal_tensor_wrap_image(bytes, kWidth, kHeight, MEMHAL_PIXEL_FORMAT_I420, NULL, 0,
                                    MEMHAL_CPU_ACCESS_READ_WRITE, free_release, bytes, &image));
  CHECK_OK(memhal_tensor_map(image, MEMHAL_CPU_ACCESS_READ, &map));
  CHECK(memhal_map_plane(map, 1) == (void*)(bytes + kWidth * kHeight));
  CHECK(memhal_map_plane(map, 2) == (void*)(bytes + kWidth * kHeight * 5 / 4));
  memhal_map_free(map);
  memhal_tensor_free(image); /* frees `bytes` (checked by ASan) */
}

static void test_errors_release_once_and_say_why(void) {
  unsigned char bytes[256];
  memhal_plane_t planes[2];
  memhal_tensor_t* out = (memhal_tensor_t*)bytes; /* garbage a failure must clear */
  const int64_t shape[1] = {16};
  const int64_t back[1] = {-1};
  int released = 0;
  memset(planes, 0, sizeof planes);
  planes[0].pitch = 8;
  planes[1].offset = 64;
  planes[1].pitch = 8;
  CHECK(memhal_tensor_wrap_image(NULL, 8, 4, MEMHAL_PIXEL_FORMAT_NV12, planes, 2, MEMHAL_CPU_ACCESS_READ, count_release,
                                 &released, &out) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(out == NULL && released == 1 && strstr(memhal_last_error_message(), "null") != NULL);
  CHECK(memhal_tensor_wrap_image(bytes, 8, 4, MEMHAL_PIXEL_FORMAT_NV12, planes, 1, MEMHAL_CPU_ACCESS_READ,
                                 count_release, &released, &out) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(released == 2 && strstr(memhal_last_error_message(), "2 planes, 1 were given") != NULL);
  planes[1].pitch = 7;
  CHECK(memhal_tensor_wrap_image(bytes, 8, 4, MEMHAL_PIXEL_FORMAT_NV12, planes, 2, MEMHAL_CPU_ACCESS_READ,
                                 count_release, &released, &out) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(released == 3 && strstr(memhal_last_error_message(), "pitch 7") != NULL);
  CHECK(memhal_tensor_wrap_image(bytes, 8, 4, 99, planes, 2, MEMHAL_CPU_ACCESS_READ, count_release, &released, &out) ==
        MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(released == 4 && strstr(memhal_last_error_message(), "99") != NULL);
  CHECK(memhal_tensor_wrap(bytes, shape, back, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_CPU_ACCESS_READ, count_release, &released,
                           &out) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(released == 5 && strstr(memhal_last_error_message(), "before the buffer") != NULL);
  CHECK(memhal_tensor_wrap(bytes, shape, shape, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_CPU_ACCESS_NONE, count_release, &released,
                           &out) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(released == 6);
  CHECK(memhal_tensor_wrap(bytes, shape, shape, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_CPU_ACCESS_READ, count_release, &released,
                           NULL) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(released == 7);
}

int main(void) {
  test_memory_is_used_in_place_both_ways();
  test_release_waits_for_the_last_view_map_and_frame();
  test_read_only_memory_refuses_write_maps();
  test_convert_reads_a_wrapped_image_like_an_allocated_copy();
  test_packed_planes_need_no_description();
  test_errors_release_once_and_say_why();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
