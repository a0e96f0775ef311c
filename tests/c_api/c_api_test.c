/* The C API from C99: vocabulary against the golden file, ABI pins, and every noun in use.
 * Prints one line per check and a closing "N passed, N failed" line. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <memhal/memhal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "c_check.h"

/* ---- vocabulary: every golden row, through the C functions and the C constants ---- */

struct vocabulary_name {
  const char* name;
  memhal_vocabulary_t vocabulary;
};

static const struct vocabulary_name vocabularies[] = {
    {"MemoryKind", MEMHAL_VOCABULARY_MEMORY_KIND},      {"DType", MEMHAL_VOCABULARY_DTYPE},
    {"PixelFormat", MEMHAL_VOCABULARY_PIXEL_FORMAT},    {"Compression", MEMHAL_VOCABULARY_COMPRESSION},
    {"CpuAccess", MEMHAL_VOCABULARY_CPU_ACCESS},        {"MemoryDomainKind", MEMHAL_VOCABULARY_MEMORY_DOMAIN_KIND},
    {"ErrorCode", MEMHAL_VOCABULARY_ERROR_CODE},        {"Flip", MEMHAL_VOCABULARY_FLIP},
    {"Rotation", MEMHAL_VOCABULARY_ROTATION},           {"ResizeMode", MEMHAL_VOCABULARY_RESIZE_MODE},
    {"Interpolation", MEMHAL_VOCABULARY_INTERPOLATION}, {"ColorMatrix", MEMHAL_VOCABULARY_COLOR_MATRIX},
    {"ColorRange", MEMHAL_VOCABULARY_COLOR_RANGE},      {"ImageBackend", MEMHAL_VOCABULARY_IMAGE_BACKEND},
};

/* Each constant of memhal.h with the golden row it must equal. */
struct constant {
  const char* vocabulary;
  const char* wire;
  long value;
};

static const struct constant constants[] = {
    {"MemoryKind", "mem", MEMHAL_MEMORY_KIND_MEM},
    {"MemoryKind", "shm", MEMHAL_MEMORY_KIND_SHM},
    {"MemoryKind", "dmabuf", MEMHAL_MEMORY_KIND_DMABUF},
    {"MemoryKind", "iosurface", MEMHAL_MEMORY_KIND_IOSURFACE},
    {"MemoryKind", "pbo", MEMHAL_MEMORY_KIND_PBO},
    {"MemoryKind", "cuda", MEMHAL_MEMORY_KIND_CUDA},
    {"DType", "u8", MEMHAL_DTYPE_U8},
    {"DType", "i8", MEMHAL_DTYPE_I8},
    {"DType", "u16", MEMHAL_DTYPE_U16},
    {"DType", "i16", MEMHAL_DTYPE_I16},
    {"DType", "u32", MEMHAL_DTYPE_U32},
    {"DType", "i32", MEMHAL_DTYPE_I32},
    {"DType", "u64", MEMHAL_DTYPE_U64},
    {"DType", "i64", MEMHAL_DTYPE_I64},
    {"DType", "f16", MEMHAL_DTYPE_F16},
    {"DType", "f32", MEMHAL_DTYPE_F32},
    {"DType", "f64", MEMHAL_DTYPE_F64},
    {"DType", "bf16", MEMHAL_DTYPE_BF16},
    {"PixelFormat", "rgb", MEMHAL_PIXEL_FORMAT_RGB},
    {"PixelFormat", "rgba", MEMHAL_PIXEL_FORMAT_RGBA},
    {"PixelFormat", "bgra", MEMHAL_PIXEL_FORMAT_BGRA},
    {"PixelFormat", "grey", MEMHAL_PIXEL_FORMAT_GREY},
    {"PixelFormat", "yuyv", MEMHAL_PIXEL_FORMAT_YUYV},
    {"PixelFormat", "vyuy", MEMHAL_PIXEL_FORMAT_VYUY},
    {"PixelFormat", "nv12", MEMHAL_PIXEL_FORMAT_NV12},
    {"PixelFormat", "nv16", MEMHAL_PIXEL_FORMAT_NV16},
    {"PixelFormat", "planar_rgb", MEMHAL_PIXEL_FORMAT_PLANAR_RGB},
    {"PixelFormat", "planar_rgba", MEMHAL_PIXEL_FORMAT_PLANAR_RGBA},
    {"PixelFormat", "nv24", MEMHAL_PIXEL_FORMAT_NV24},
    {"PixelFormat", "nv21", MEMHAL_PIXEL_FORMAT_NV21},
    {"PixelFormat", "i420", MEMHAL_PIXEL_FORMAT_I420},
    {"PixelFormat", "uyvy", MEMHAL_PIXEL_FORMAT_UYVY},
    {"PixelFormat", "bgr", MEMHAL_PIXEL_FORMAT_BGR},
    {"Compression", "none", MEMHAL_COMPRESSION_NONE},
    {"Compression", "any", MEMHAL_COMPRESSION_ANY},
    {"Compression", "ubwc", MEMHAL_COMPRESSION_UBWC},
    {"Compression", "afbc", MEMHAL_COMPRESSION_AFBC},
    {"Compression", "pvric", MEMHAL_COMPRESSION_PVRIC},
    {"Compression", "dcc", MEMHAL_COMPRESSION_DCC},
    {"CpuAccess", "none", MEMHAL_CPU_ACCESS_NONE},
    {"CpuAccess", "read", MEMHAL_CPU_ACCESS_READ},
    {"CpuAccess", "write", MEMHAL_CPU_ACCESS_WRITE},
    {"CpuAccess", "read_write", MEMHAL_CPU_ACCESS_READ_WRITE},
    {"MemoryDomainKind", "system", MEMHAL_MEMORY_DOMAIN_KIND_SYSTEM},
    {"MemoryDomainKind", "system_view", MEMHAL_MEMORY_DOMAIN_KIND_SYSTEM_VIEW},
    {"MemoryDomainKind", "dmabuf", MEMHAL_MEMORY_DOMAIN_KIND_DMABUF},
    {"MemoryDomainKind", "vulkan_texture", MEMHAL_MEMORY_DOMAIN_KIND_VULKAN_TEXTURE},
    {"MemoryDomainKind", "webgpu_buffer", MEMHAL_MEMORY_DOMAIN_KIND_WEBGPU_BUFFER},
    {"MemoryDomainKind", "cuda", MEMHAL_MEMORY_DOMAIN_KIND_CUDA},
    {"MemoryDomainKind", "d3d11_texture", MEMHAL_MEMORY_DOMAIN_KIND_D3D11_TEXTURE},
    {"MemoryDomainKind", "cv_pixel_buffer", MEMHAL_MEMORY_DOMAIN_KIND_CV_PIXEL_BUFFER},
    {"MemoryDomainKind", "webgpu_external_texture", MEMHAL_MEMORY_DOMAIN_KIND_WEBGPU_EXTERNAL_TEXTURE},
    {"MemoryDomainKind", "wgpu_texture", MEMHAL_MEMORY_DOMAIN_KIND_WGPU_TEXTURE},
    {"MemoryDomainKind", "wgpu_buffer", MEMHAL_MEMORY_DOMAIN_KIND_WGPU_BUFFER},
    {"ErrorCode", "invalid_argument", MEMHAL_ERROR_INVALID_ARGUMENT},
    {"ErrorCode", "not_implemented", MEMHAL_ERROR_NOT_IMPLEMENTED},
    {"ErrorCode", "unavailable", MEMHAL_ERROR_UNAVAILABLE},
    {"ErrorCode", "out_of_memory", MEMHAL_ERROR_OUT_OF_MEMORY},
    {"ErrorCode", "io", MEMHAL_ERROR_IO},
    {"ErrorCode", "permission_denied", MEMHAL_ERROR_PERMISSION_DENIED},
    {"ErrorCode", "out_of_range", MEMHAL_ERROR_OUT_OF_RANGE},
    {"ErrorCode", "unsupported_domain", MEMHAL_ERROR_UNSUPPORTED_DOMAIN},
    {"ErrorCode", "not_host_addressable", MEMHAL_ERROR_NOT_HOST_ADDRESSABLE},
    {"ErrorCode", "busy", MEMHAL_ERROR_BUSY},
    {"ErrorCode", "corrupt", MEMHAL_ERROR_CORRUPT},
    {"ErrorCode", "protocol", MEMHAL_ERROR_PROTOCOL},
    {"ErrorCode", "internal", MEMHAL_ERROR_INTERNAL},
    {"Flip", "none", MEMHAL_FLIP_NONE},
    {"Flip", "horizontal", MEMHAL_FLIP_HORIZONTAL},
    {"Flip", "vertical", MEMHAL_FLIP_VERTICAL},
    {"Flip", "both", MEMHAL_FLIP_BOTH},
    {"Rotation", "none", MEMHAL_ROTATION_NONE},
    {"Rotation", "cw90", MEMHAL_ROTATION_CW90},
    {"Rotation", "cw180", MEMHAL_ROTATION_CW180},
    {"Rotation", "cw270", MEMHAL_ROTATION_CW270},
    {"ResizeMode", "stretch", MEMHAL_RESIZE_MODE_STRETCH},
    {"ResizeMode", "letterbox", MEMHAL_RESIZE_MODE_LETTERBOX},
    {"Interpolation", "bilinear", MEMHAL_INTERPOLATION_BILINEAR},
    {"Interpolation", "nearest", MEMHAL_INTERPOLATION_NEAREST},
    {"Interpolation", "area", MEMHAL_INTERPOLATION_AREA},
    {"ColorMatrix", "bt601", MEMHAL_COLOR_MATRIX_BT601},
    {"ColorMatrix", "bt709", MEMHAL_COLOR_MATRIX_BT709},
    {"ColorRange", "limited", MEMHAL_COLOR_RANGE_LIMITED},
    {"ColorRange", "full", MEMHAL_COLOR_RANGE_FULL},
    {"ImageBackend", "cpu", MEMHAL_IMAGE_BACKEND_CPU},
    {"ImageBackend", "gl", MEMHAL_IMAGE_BACKEND_GL},
};

static int find_vocabulary(const char* name, memhal_vocabulary_t* out) {
  size_t i;
  for (i = 0; i < sizeof vocabularies / sizeof vocabularies[0]; ++i) {
    if (strcmp(vocabularies[i].name, name) == 0) {
      *out = vocabularies[i].vocabulary;
      return 1;
    }
  }
  return 0;
}

static void test_vocabulary_matches_golden_file(const char* golden_path) {
  FILE* golden = fopen(golden_path, "r");
  char line[256];
  size_t rows = 0, matched_constants = 0, i;
  CHECK(golden != NULL);
  if (golden == NULL) return;
  while (fgets(line, sizeof line, golden)) {
    char vocabulary_name[64], wire[64];
    unsigned code;
    int consumed = 0;
    const char* rest;
    const char* text = NULL;
    uint32_t parsed = 99999;
    memhal_vocabulary_t vocabulary = MEMHAL_VOCABULARY_MEMORY_KIND;
    if (line[0] == '#' || line[0] == '\n') continue;
    if (sscanf(line, "%63s %u %63s%n", vocabulary_name, &code, wire, &consumed) != 3) continue;
    ++rows;
    CHECK(find_vocabulary(vocabulary_name, &vocabulary));
    CHECK_OK(memhal_code_to_string(vocabulary, code, &text));
    CHECK(text != NULL && strcmp(text, wire) == 0);
    CHECK_OK(memhal_string_to_code(vocabulary, wire, &parsed));
    CHECK(parsed == code);
    /* aliases parse to the same code */
    rest = line + consumed;
    for (;;) {
      char alias[64];
      int used = 0;
      if (sscanf(rest, "%63s%n", alias, &used) != 1) break;
      parsed = 99999;
      CHECK_OK(memhal_string_to_code(vocabulary, alias, &parsed));
      CHECK(parsed == code);
      rest += used;
    }
    for (i = 0; i < sizeof constants / sizeof constants[0]; ++i) {
      if (strcmp(constants[i].vocabulary, vocabulary_name) == 0 && strcmp(constants[i].wire, wire) == 0) {
        CHECK(constants[i].value == (long)code);
        ++matched_constants;
      }
    }
  }
  fclose(golden);
  CHECK(rows == sizeof constants / sizeof constants[0]);
  CHECK(matched_constants == rows);
  printf("vocabulary: %zu golden rows, %zu C constants checked\n", rows, matched_constants);
}

static void test_unknown_codes_are_rejected(void) {
  const char* text = NULL;
  uint32_t code = 0;
  CHECK(memhal_code_to_string(MEMHAL_VOCABULARY_MEMORY_KIND, 6, &text) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "6") != NULL);
  CHECK(memhal_code_to_string(MEMHAL_VOCABULARY_PIXEL_FORMAT, 0, &text) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_code_to_string(MEMHAL_VOCABULARY_DTYPE, 0xffffffffu, &text) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_code_to_string((memhal_vocabulary_t)42, 0, &text) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_string_to_code(MEMHAL_VOCABULARY_MEMORY_KIND, "dma", &code) == MEMHAL_OK && code == 2);
  CHECK(memhal_string_to_code(MEMHAL_VOCABULARY_MEMORY_KIND, "floppy", &code) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_string_to_code(MEMHAL_VOCABULARY_MEMORY_KIND, NULL, &code) == MEMHAL_ERROR_INVALID_ARGUMENT);
  /* The option vocabularies: aliases parse, unknown codes and strings are refused by name. */
  CHECK(memhal_string_to_code(MEMHAL_VOCABULARY_FLIP, "h", &code) == MEMHAL_OK && code == MEMHAL_FLIP_HORIZONTAL);
  CHECK(memhal_string_to_code(MEMHAL_VOCABULARY_ROTATION, "90", &code) == MEMHAL_OK && code == MEMHAL_ROTATION_CW90);
  CHECK(memhal_string_to_code(MEMHAL_VOCABULARY_ROTATION, "45", &code) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "Rotation '45'") != NULL);
  CHECK(memhal_code_to_string(MEMHAL_VOCABULARY_INTERPOLATION, 3, &text) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "Interpolation code 3") != NULL);
  CHECK(memhal_code_to_string(MEMHAL_VOCABULARY_ERROR_CODE, 0, &text) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_code_to_string(MEMHAL_VOCABULARY_IMAGE_BACKEND, MEMHAL_IMAGE_BACKEND_GL, &text) == MEMHAL_OK &&
        strcmp(text, "gl") == 0);
}

static void test_abi_is_pinned(void) {
  CHECK(sizeof(memhal_plane_t) == 24);
  CHECK(offsetof(memhal_plane_t, offset) == 8);
  CHECK(offsetof(memhal_plane_t, pitch) == 16);
  CHECK(sizeof(memhal_convert_options_t) == 136);
  CHECK(offsetof(memhal_convert_options_t, crop_x) == 8);
  CHECK(offsetof(memhal_convert_options_t, flip) == 40);
  CHECK(offsetof(memhal_convert_options_t, pad) == 56);
  CHECK(offsetof(memhal_convert_options_t, mean) == 68);
  CHECK(offsetof(memhal_convert_options_t, swap_rb) == 100);
  CHECK(MEMHAL_MEMORY_KIND_AUTO == -1);
  CHECK(MEMHAL_OK == 0);
}

static void test_version(void) {
  char expected[64];
  const char* version = memhal_version();
  snprintf(expected, sizeof expected, "%d.%d.%d", MEMHAL_VERSION_MAJOR, MEMHAL_VERSION_MINOR, MEMHAL_VERSION_PATCH);
  CHECK(version != NULL && strcmp(version, MEMHAL_VERSION_STRING) == 0);
  CHECK(version != NULL && strcmp(version, expected) == 0);
}

static void test_availability(void) {
  int available = -1;
  const char* reason = NULL;
  CHECK_OK(memhal_memory_kind_availability(MEMHAL_MEMORY_KIND_MEM, &available, &reason));
  CHECK(available == 1 && reason != NULL && reason[0] != '\0');
  CHECK_OK(memhal_memory_kind_availability(MEMHAL_MEMORY_KIND_PBO, &available, &reason));
  CHECK(available == 0 && strstr(reason, "create_image") != NULL);
  CHECK(memhal_memory_kind_availability(17, &available, &reason) == MEMHAL_ERROR_INVALID_ARGUMENT);
}

static void test_tensors_views_and_maps(void) {
  const int64_t shape[] = {2, 3};
  int64_t got[8], strides[8];
  size_t rank = 0;
  uint32_t value = 0;
  memhal_tensor_t *tensor = NULL, *flipped = NULL, *dense = NULL, *bad = NULL;
  memhal_map_t* map = NULL;
  int32_t* data;
  int i;
  CHECK_OK(memhal_tensor_create(shape, 2, MEMHAL_DTYPE_I32, MEMHAL_MEMORY_KIND_MEM, "c-tensor", &tensor));
  CHECK_OK(memhal_tensor_shape(tensor, got, 8, &rank));
  CHECK(rank == 2 && got[0] == 2 && got[1] == 3);
  CHECK_OK(memhal_tensor_strides(tensor, strides, 8, &rank));
  CHECK(strides[0] == 12 && strides[1] == 4);
  CHECK_OK(memhal_tensor_memory(tensor, &value));
  CHECK(value == MEMHAL_MEMORY_KIND_MEM);
  CHECK_OK(memhal_tensor_map(tensor, MEMHAL_CPU_ACCESS_WRITE, &map));
  CHECK(memhal_map_size(map) == 24);
  data = (int32_t*)memhal_map_data(map);
  for (i = 0; i < 6; ++i) data[i] = i;
  memhal_map_free(map);
  CHECK_OK(memhal_tensor_flip(tensor, 1, &flipped));
  CHECK_OK(memhal_tensor_materialize(flipped, MEMHAL_MEMORY_KIND_AUTO, &dense));
  memhal_tensor_free(tensor); /* the views keep the memory alive */
  CHECK_OK(memhal_tensor_map(dense, MEMHAL_CPU_ACCESS_READ, &map));
  data = (int32_t*)memhal_map_data(map);
  CHECK(data[0] == 2 && data[1] == 1 && data[2] == 0 && data[3] == 5);
  memhal_map_free(map);
  CHECK(memhal_tensor_map(dense, MEMHAL_CPU_ACCESS_NONE, &map) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(map == NULL);
  CHECK(memhal_tensor_transpose(dense, 0, 5, &bad) == MEMHAL_ERROR_OUT_OF_RANGE && bad == NULL);
  memhal_tensor_free(flipped);
  memhal_tensor_free(dense);

  CHECK(memhal_tensor_create(shape, 2, 12, MEMHAL_MEMORY_KIND_AUTO, NULL, &bad) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_tensor_create(shape, 2, MEMHAL_DTYPE_U8, 99, NULL, &bad) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(memhal_tensor_create(shape, 2, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_PBO, NULL, &bad) ==
        MEMHAL_ERROR_NOT_IMPLEMENTED);
  CHECK(strstr(memhal_last_error_message(), "ImageProcessor::create_image") != NULL);
  CHECK(memhal_tensor_create(NULL, 2, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, NULL, &bad) ==
        MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(bad == NULL);
  memhal_tensor_free(NULL);
}

static void test_fd_import_and_export(void) {
  const int64_t shape[] = {4096}, strides[] = {1};
  int memfd = memfd_create("c-test", MFD_CLOEXEC | MFD_ALLOW_SEALING), clone = -1;
  memhal_tensor_t *imported = NULL, *too_big = NULL;
  memhal_map_t* map = NULL;
  const int64_t big[] = {8192};
  CHECK(memfd >= 0 && ftruncate(memfd, 4096) == 0);
  CHECK_OK(memhal_tensor_from_fd(memfd, shape, strides, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, &imported));
  CHECK_OK(memhal_tensor_map(imported, MEMHAL_CPU_ACCESS_WRITE, &map));
  ((unsigned char*)memhal_map_data(map))[7] = 42;
  memhal_map_free(map);
  CHECK(memhal_tensor_from_fd(memfd, big, strides, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, &too_big) ==
        MEMHAL_ERROR_OUT_OF_RANGE);
  CHECK_OK(memhal_tensor_clone_fd(imported, 0, &clone));
  CHECK(clone >= 0 && clone != memfd);
  {
    unsigned char byte = 0;
    CHECK(pread(clone, &byte, 1, 7) == 1 && byte == 42);
  }
  close(clone);
  close(memfd); /* ours; the tensor keeps its own duplicate */
  memhal_tensor_free(imported);
}

/* An import of a memfd that is not sealed against shrinking, and cannot be sealed here, is
 * refused: its owner could truncate it under the mapping (a SIGBUS on the next read). */
static void test_fd_import_refuses_unsealable_memfds(void) {
  const int64_t shape[] = {4096}, strides[] = {1};
  int unsealable = memfd_create("c-test-unsealable", MFD_CLOEXEC);
  int sealable = memfd_create("c-test-sealable", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  int read_only = -1;
  char path[64];
  memhal_tensor_t* tensor = NULL;
  CHECK(unsealable >= 0 && ftruncate(unsealable, 4096) == 0);
  CHECK(sealable >= 0 && ftruncate(sealable, 4096) == 0);
  snprintf(path, sizeof path, "/proc/self/fd/%d", sealable);
  read_only = open(path, O_RDONLY | O_CLOEXEC);
  CHECK(read_only >= 0);
  CHECK(memhal_tensor_from_fd(unsealable, shape, strides, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, &tensor) ==
        MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(tensor == NULL);
  CHECK(strstr(memhal_last_error_message(), "F_SEAL_SHRINK") != NULL);
  CHECK(memhal_tensor_from_fd(read_only, shape, strides, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, &tensor) ==
        MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(tensor == NULL);
  CHECK(fcntl(sealable, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
  CHECK_OK(memhal_tensor_from_fd(read_only, shape, strides, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, &tensor));
  memhal_tensor_free(tensor);
  close(read_only);
  close(sealable);
  close(unsealable);
}

static void test_frames_and_tee(void) {
  memhal_tensor_t *image = NULL, *branch_tensor = NULL;
  memhal_frame_t* frame = NULL;
  memhal_frame_t* branches[3] = {NULL, NULL, NULL};
  memhal_map_t *a = NULL, *b = NULL;
  uint32_t kind = 99;
  uint64_t sequence = 0;
  int i;
  CHECK_OK(memhal_tensor_image(64, 32, MEMHAL_PIXEL_FORMAT_RGBA, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_U8, &image));
  CHECK_OK(memhal_frame_from_tensor(image, 1000, 7, &frame));
  CHECK_OK(memhal_frame_domain_kind(frame, &kind));
  CHECK(kind == MEMHAL_MEMORY_DOMAIN_KIND_SYSTEM);
  CHECK_OK(memhal_tee_push(frame, 3, branches));
  CHECK_OK(memhal_frame_sequence(branches[2], &sequence));
  CHECK(sequence == 7);
  CHECK_OK(memhal_frame_to_tensor(branches[1], &branch_tensor));
  CHECK_OK(memhal_tensor_map(image, MEMHAL_CPU_ACCESS_READ, &a));
  CHECK_OK(memhal_tensor_map(branch_tensor, MEMHAL_CPU_ACCESS_READ, &b));
  CHECK(memhal_map_data(a) == memhal_map_data(b)); /* the same bytes: nothing was copied */
  memhal_map_free(a);
  memhal_map_free(b);
  for (i = 0; i < 3; ++i) memhal_frame_free(branches[i]);
  CHECK(memhal_tee_push(frame, 0, branches) == MEMHAL_ERROR_INVALID_ARGUMENT);
  /* A count no machine can hold is refused as out of memory (not an "unexpected exception"),
   * before anything is written to `branches`. */
  branches[0] = NULL;
  CHECK(memhal_tee_push(frame, (size_t)1 << 62, branches) == MEMHAL_ERROR_OUT_OF_MEMORY);
  CHECK(branches[0] == NULL);
  memhal_frame_free(frame);
  memhal_tensor_free(branch_tensor);
  memhal_tensor_free(image);
}

static void test_image_processor(void) {
  memhal_image_processor_t* processor = NULL;
  memhal_tensor_t *src = NULL, *dst = NULL;
  memhal_map_t* map = NULL;
  memhal_convert_options_t options = memhal_convert_options_default();
  int x, y;
  CHECK(options.pad[0] == 114 && options.std[0] == 1.0f && options.resize == 0);
  CHECK(memhal_image_processor_create_on(1, 7, &processor) == MEMHAL_ERROR_INVALID_ARGUMENT && processor == NULL);
  CHECK(strstr(memhal_last_error_message(), "backend 7") != NULL);
  CHECK(memhal_image_processor_create_on(1, -2, &processor) == MEMHAL_ERROR_INVALID_ARGUMENT && processor == NULL);
  CHECK(strstr(memhal_last_error_message(), "backend -2") != NULL);
  CHECK_OK(memhal_image_processor_create_on(1, MEMHAL_IMAGE_BACKEND_CPU, &processor));
  CHECK_OK(memhal_image_processor_backend(processor, &x));
  CHECK(x == MEMHAL_IMAGE_BACKEND_CPU);
  memhal_image_processor_free(processor);
  processor = NULL;
  if (memhal_image_processor_create_on(1, MEMHAL_IMAGE_BACKEND_GL, &processor) == MEMHAL_OK) {
    CHECK_OK(memhal_image_processor_backend(processor, &x));
    CHECK(x == MEMHAL_IMAGE_BACKEND_GL);
    memhal_image_processor_free(processor);
    processor = NULL;
  } else {
    CHECK(strstr(memhal_last_error_message(), "gl backend") != NULL); /* no GL here: says why */
  }
  CHECK_OK(memhal_image_processor_create(1, &processor));
  CHECK_OK(memhal_tensor_image(8, 4, MEMHAL_PIXEL_FORMAT_RGB, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_U8, &src));
  CHECK_OK(memhal_tensor_map(src, MEMHAL_CPU_ACCESS_WRITE, &map));
  for (y = 0; y < 4; ++y)
    for (x = 0; x < 24; ++x) ((unsigned char*)memhal_map_data(map))[y * 64 + x] = 255;
  memhal_map_free(map);
  CHECK_OK(memhal_tensor_image(8, 4, MEMHAL_PIXEL_FORMAT_PLANAR_RGB, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_F32, &dst));
  options.mean[0] = options.mean[1] = options.mean[2] = 0.5f;
  CHECK_OK(memhal_image_processor_convert(processor, src, dst, &options));
  CHECK_OK(memhal_tensor_map(dst, MEMHAL_CPU_ACCESS_READ, &map));
  CHECK(((float*)memhal_map_data(map))[0] > 0.49f && ((float*)memhal_map_data(map))[0] < 0.51f);
  memhal_map_free(map);
  options.flip = 9;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  memhal_tensor_free(dst);
  dst = NULL;
  {
    /* A batch of two from the same frame: both images written, and a count that is not the
     * batch size refused. */
    const int64_t shape[4] = {2, 3, 4, 8};
    const memhal_tensor_t* frames[2];
    const float* out = NULL;
    frames[0] = src;
    frames[1] = src;
    options = memhal_convert_options_default();
    CHECK_OK(memhal_tensor_create(shape, 4, MEMHAL_DTYPE_F32, MEMHAL_MEMORY_KIND_MEM, "batch", &dst));
    CHECK_OK(memhal_image_processor_convert_batch(processor, frames, 2, dst, &options));
    CHECK_OK(memhal_tensor_map(dst, MEMHAL_CPU_ACCESS_READ, &map));
    out = (const float*)memhal_map_data(map);
    CHECK(out[0] > 0.99f && out[3 * 4 * 8] > 0.99f && out[2 * 3 * 4 * 8 - 1] > 0.99f);
    memhal_map_free(map);
    CHECK(memhal_image_processor_convert_batch(processor, frames, 1, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(memhal_last_error_message(), "convert_batch") != NULL);
    CHECK(memhal_image_processor_convert_batch(processor, NULL, 2, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  }
  memhal_tensor_free(src);
  memhal_tensor_free(dst);
  memhal_image_processor_free(processor);
}

static void test_channel(void) {
  memhal_channel_t *a = NULL, *b = NULL, *adopted = NULL;
  memhal_tensor_t *sent = NULL, *received = NULL, *mem = NULL, *nothing = NULL;
  memhal_map_t* map = NULL;
  const int64_t shape[] = {256};
  CHECK_OK(memhal_channel_pair(&a, &b));
  CHECK_OK(memhal_tensor_create(shape, 1, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_SHM, "shared", &sent));
  CHECK_OK(memhal_channel_send(a, sent));
  CHECK_OK(memhal_channel_receive(b, 1000, &received));
  CHECK_OK(memhal_tensor_map(received, MEMHAL_CPU_ACCESS_WRITE, &map));
  ((unsigned char*)memhal_map_data(map))[3] = 9;
  memhal_map_free(map);
  CHECK_OK(memhal_tensor_map(sent, MEMHAL_CPU_ACCESS_READ, &map));
  CHECK(((unsigned char*)memhal_map_data(map))[3] == 9);
  memhal_map_free(map);
  CHECK_OK(memhal_tensor_create(shape, 1, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_MEM, NULL, &mem));
  CHECK(memhal_channel_send(a, mem) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "shm") != NULL);
  CHECK(memhal_channel_receive(b, 10, &nothing) == MEMHAL_ERROR_BUSY);
  CHECK(nothing == NULL);
  CHECK(memhal_channel_adopt(-1, &adopted) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(adopted == NULL);
  memhal_tensor_free(mem);
  memhal_tensor_free(sent);
  memhal_tensor_free(received);
  memhal_channel_free(a);
  memhal_channel_free(b);
}

static void test_recording(void) {
  char path[] = "/tmp/memhal_c_test_XXXXXX";
  int fd = mkstemp(path);
  memhal_recorder_t* recorder = NULL;
  memhal_replayer_t* replayer = NULL;
  memhal_tensor_t *tensor = NULL, *back = NULL;
  const int64_t shape[] = {3, 5};
  int64_t timestamp = 0, nbytes = 0;
  close(fd);
  CHECK_OK(memhal_tensor_create(shape, 2, MEMHAL_DTYPE_F32, MEMHAL_MEMORY_KIND_MEM, NULL, &tensor));
  CHECK_OK(memhal_recorder_create(path, &recorder));
  CHECK_OK(memhal_recorder_write(recorder, tensor, 1234));
  memhal_recorder_free(recorder);
  CHECK_OK(memhal_replayer_open(path, &replayer));
  CHECK_OK(memhal_replayer_next(replayer, MEMHAL_MEMORY_KIND_AUTO, &back, &timestamp));
  CHECK(back != NULL && timestamp == 1234);
  CHECK_OK(memhal_tensor_nbytes(back, &nbytes));
  CHECK(nbytes == 60);
  memhal_tensor_free(back);
  back = NULL;
  CHECK_OK(memhal_replayer_next(replayer, MEMHAL_MEMORY_KIND_AUTO, &back, NULL));
  CHECK(back == NULL); /* the clean end */
  memhal_replayer_free(replayer);
  CHECK(memhal_replayer_open("/nonexistent/x.mhrec", &replayer) == MEMHAL_ERROR_UNAVAILABLE);
  memhal_tensor_free(tensor);
  unlink(path);
}

/* ---- argument errors: every handle output is NULL afterwards, whatever it held before ---- */

static int sentinel_storage;
#define SENTINEL ((void*)&sentinel_storage)

/* `call` must fail with `code` and leave `handle` (preset to a non-NULL sentinel) NULL. */
#define CHECK_CLEARS(handle, code, call)         \
  do {                                           \
    (handle) = SENTINEL;                         \
    CHECK((call) == (code) && (handle) == NULL); \
  } while (0)

static void test_argument_errors_clear_handle_outputs(void) {
  const int64_t shape[] = {2, 3};
  const size_t axes[] = {1, 0};
  memhal_tensor_t* tensor = NULL;
  memhal_tensor_t* t = NULL;
  memhal_map_t* map = NULL;
  memhal_frame_t* frame = NULL;
  memhal_frame_t* branches[2] = {NULL, NULL};
  memhal_image_processor_t* processor = NULL;
  memhal_channel_t *a = NULL, *b = NULL;
  memhal_recorder_t* recorder = NULL;
  memhal_replayer_t* replayer = NULL;
  const int I = MEMHAL_ERROR_INVALID_ARGUMENT;
  CHECK_OK(memhal_tensor_create(shape, 2, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_MEM, NULL, &tensor));

  CHECK_CLEARS(t, I, memhal_tensor_create(NULL, 2, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, NULL, &t));
  CHECK_CLEARS(t, I, memhal_tensor_create(shape, 2, 99, MEMHAL_MEMORY_KIND_AUTO, NULL, &t));
  CHECK_CLEARS(t, I, memhal_tensor_image(8, 8, 0, MEMHAL_MEMORY_KIND_AUTO, MEMHAL_DTYPE_U8, &t));
  CHECK_CLEARS(t, I, memhal_tensor_from_fd(0, NULL, NULL, 1, 0, MEMHAL_DTYPE_U8, MEMHAL_MEMORY_KIND_AUTO, &t));
  CHECK_CLEARS(t, I, memhal_tensor_from_planes(NULL, 1, 8, 8, MEMHAL_PIXEL_FORMAT_RGB, NULL, 1, -1, &t));
  CHECK_CLEARS(t, I, memhal_tensor_slice(NULL, 0, 0, 1, &t));
  CHECK_CLEARS(t, I, memhal_tensor_flip(NULL, 0, &t));
  CHECK_CLEARS(t, I, memhal_tensor_transpose(NULL, 0, 1, &t));
  CHECK_CLEARS(t, I, memhal_tensor_permute(tensor, NULL, 2, &t));
  CHECK_CLEARS(t, I, memhal_tensor_permute(NULL, axes, 2, &t));
  CHECK_CLEARS(t, I, memhal_tensor_reshape(tensor, NULL, 2, &t));
  CHECK_CLEARS(t, I, memhal_tensor_crop(NULL, 0, 0, 1, 1, &t));
  CHECK_CLEARS(t, I, memhal_tensor_materialize(tensor, 99, &t));
  CHECK_CLEARS(t, I, memhal_tensor_materialize(NULL, MEMHAL_MEMORY_KIND_AUTO, &t));
  CHECK_CLEARS(map, I, memhal_tensor_map(NULL, MEMHAL_CPU_ACCESS_READ, &map));
  CHECK_CLEARS(map, I, memhal_tensor_map(tensor, 7, &map));
  CHECK_CLEARS(frame, I, memhal_frame_from_tensor(NULL, 0, 0, &frame));
  CHECK_CLEARS(t, I, memhal_frame_to_tensor(NULL, &t));
  CHECK_CLEARS(branches[0], I, memhal_tee_push(NULL, 2, branches));
  CHECK_CLEARS(processor, I, memhal_image_processor_create_on(1, 7, &processor));
  CHECK_CLEARS(a, I, memhal_channel_pair(&a, NULL));
  CHECK_CLEARS(b, I, memhal_channel_pair(NULL, &b));
  CHECK_CLEARS(a, I, memhal_channel_connect(NULL, &a));
  CHECK_CLEARS(t, I, memhal_channel_receive(NULL, 0, &t));
  CHECK_CLEARS(frame, I, memhal_channel_receive_frame(NULL, 0, &frame));
  CHECK_CLEARS(recorder, I, memhal_recorder_create(NULL, &recorder));
  CHECK_CLEARS(replayer, I, memhal_replayer_open(NULL, &replayer));
  CHECK_CLEARS(t, I, memhal_replayer_next(NULL, MEMHAL_MEMORY_KIND_AUTO, &t, NULL));
  /* A failure that is not an argument error clears too. */
  a = SENTINEL;
  CHECK(memhal_channel_adopt(-1, &a) != MEMHAL_OK && a == NULL);
  memhal_tensor_free(tensor);
}

static void test_reserved_fields_must_be_zero(void) {
  memhal_image_processor_t* processor = NULL;
  memhal_tensor_t *src = NULL, *dst = NULL, *t = NULL;
  memhal_convert_options_t options = memhal_convert_options_default();
  memhal_plane_t planes[2] = {{0, 0, 0, 8}, {0, 0, 64, 8}};
  int memfd = memfd_create("reserved", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  CHECK(memfd >= 0 && ftruncate(memfd, 4096) == 0);
  CHECK_OK(memhal_image_processor_create_on(1, MEMHAL_IMAGE_BACKEND_CPU, &processor));
  CHECK_OK(memhal_tensor_image(8, 8, MEMHAL_PIXEL_FORMAT_RGB, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_U8, &src));
  CHECK_OK(memhal_tensor_image(4, 4, MEMHAL_PIXEL_FORMAT_RGB, MEMHAL_MEMORY_KIND_MEM, MEMHAL_DTYPE_U8, &dst));
  CHECK_OK(memhal_image_processor_convert(processor, src, dst, &options)); /* the defaults are valid */
  options.reserved0 = 1;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "reserved0") != NULL);
  options = memhal_convert_options_default();
  options.reserved1[6] = 3;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "reserved1[6]") != NULL);
  /* Every option field is checked against its vocabulary, and the error names the field. */
  options = memhal_convert_options_default();
  options.flip = MEMHAL_FLIP_BOTH;
  options.rotation = MEMHAL_ROTATION_CW270;
  options.resize = MEMHAL_RESIZE_MODE_LETTERBOX;
  options.interpolation = MEMHAL_INTERPOLATION_AREA;
  options.matrix = MEMHAL_COLOR_MATRIX_BT709;
  options.range = MEMHAL_COLOR_RANGE_FULL;
  CHECK_OK(memhal_image_processor_convert(processor, src, dst, &options)); /* the highest codes are valid */
  options.rotation = 4;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "rotation: Rotation code 4 is unknown") != NULL);
  options = memhal_convert_options_default();
  options.range = 2;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "range: ColorRange code 2") != NULL);
  options = memhal_convert_options_default();
  options.flip = 0xffffffffu;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "flip: Flip code 4294967295") != NULL);
  options = memhal_convert_options_default();
  options.interpolation = 3;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  options = memhal_convert_options_default();
  options.matrix = 2;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  options = memhal_convert_options_default();
  options.resize = 2;
  CHECK(memhal_image_processor_convert(processor, src, dst, &options) == MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(memhal_last_error_message(), "resize: ResizeMode") != NULL);
  /* NV12 with a plane whose reserved field is set. */
  CHECK_OK(
      memhal_tensor_from_planes(&memfd, 1, 8, 8, MEMHAL_PIXEL_FORMAT_NV12, planes, 2, MEMHAL_MEMORY_KIND_AUTO, &t));
  memhal_tensor_free(t);
  planes[1].reserved = 5;
  t = SENTINEL;
  CHECK(memhal_tensor_from_planes(&memfd, 1, 8, 8, MEMHAL_PIXEL_FORMAT_NV12, planes, 2, MEMHAL_MEMORY_KIND_AUTO, &t) ==
        MEMHAL_ERROR_INVALID_ARGUMENT);
  CHECK(t == NULL && strstr(memhal_last_error_message(), "planes[1].reserved") != NULL);
  if (memfd >= 0) close(memfd);
  memhal_tensor_free(src);
  memhal_tensor_free(dst);
  memhal_image_processor_free(processor);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test GOLDEN_FILE\n");
    return 2;
  }
  test_vocabulary_matches_golden_file(argv[1]);
  test_unknown_codes_are_rejected();
  test_abi_is_pinned();
  test_version();
  test_availability();
  test_tensors_views_and_maps();
  test_fd_import_and_export();
  test_fd_import_refuses_unsealable_memfds();
  test_frames_and_tee();
  test_image_processor();
  test_channel();
  test_recording();
  test_argument_errors_clear_handle_outputs();
  test_reserved_fields_must_be_zero();
  printf("c_api: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
