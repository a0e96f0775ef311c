/**
 * @file
 * The memhal C API: C99, usable from C and C++ (and anything with a C FFI).
 *
 * Conventions, for every function here:
 * - It returns an `int` status: `MEMHAL_OK` (0) or one of the `MEMHAL_ERROR_*` codes (the
 *   C++ `memhal::ErrorCode` values). On failure `memhal_last_error_message()` gives the
 *   message of this thread's last failure, and outputs are left untouched, except that a handle
 *   output (`memhal_*_t **`) is set to NULL on every failure, argument errors included, when
 *   its pointer is not NULL. No C++ exception ever crosses this boundary.
 * - Fields documented "must be 0" (reserved for later versions) are checked: a nonzero one is
 *   `MEMHAL_ERROR_INVALID_ARGUMENT`, naming the field.
 * - Outputs are written through pointers; a NULL output pointer is `MEMHAL_ERROR_INVALID_ARGUMENT`.
 * - Every integer that names a vocabulary value is checked; an unknown code (a newer
 *   producer's) is `MEMHAL_ERROR_INVALID_ARGUMENT`, never guessed.
 * - Handles (`memhal_*_t *`) are created by `memhal_<noun>_<verb>` functions and released by
 *   `memhal_<noun>_free` (NULL is accepted and ignored). A handle is independent of the
 *   handle it came from: a view keeps its parent's memory alive, so either may be freed first.
 * - File descriptors: a function that takes an fd *borrows* it (it duplicates what it keeps;
 *   the caller still owns and closes its fd), unless it says it *consumes* it. A function that
 *   returns an fd gives the caller a new one to close.
 * - Thread-safety: distinct handles may be used on distinct threads; one handle from one
 *   thread at a time (the C++ objects' rules).
 *
 * The symbols live in libmemhal (CMake target `memhal::c`, an alias for the same library as
 * `memhal::memhal`; pkg-config `memhal`).
 */
#ifndef MEMHAL_MEMHAL_H
#define MEMHAL_MEMHAL_H

#include <memhal/version.h> /* MEMHAL_VERSION_MAJOR, _MINOR, _PATCH, _STRING */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MEMHAL_C_API __attribute__((visibility("default")))
#else
#define MEMHAL_C_API
#endif

/* ---- status codes (memhal::ErrorCode) ---- */
#define MEMHAL_OK 0
#define MEMHAL_ERROR_INVALID_ARGUMENT 1
#define MEMHAL_ERROR_NOT_IMPLEMENTED 2
#define MEMHAL_ERROR_UNAVAILABLE 3
#define MEMHAL_ERROR_OUT_OF_MEMORY 4
#define MEMHAL_ERROR_IO 5
#define MEMHAL_ERROR_PERMISSION_DENIED 6
#define MEMHAL_ERROR_OUT_OF_RANGE 7
#define MEMHAL_ERROR_UNSUPPORTED_DOMAIN 8
#define MEMHAL_ERROR_NOT_HOST_ADDRESSABLE 9
#define MEMHAL_ERROR_BUSY 10
#define MEMHAL_ERROR_CORRUPT 11
#define MEMHAL_ERROR_PROTOCOL 12
#define MEMHAL_ERROR_INTERNAL 13

/* ---- vocabularies: MEMHAL_ + vocabulary + _ + wire string, upper case ---- */
#define MEMHAL_MEMORY_KIND_AUTO (-1) /**< ask for auto-selection (DmaBuf -> Mem) */
#define MEMHAL_MEMORY_KIND_MEM 0
#define MEMHAL_MEMORY_KIND_SHM 1
#define MEMHAL_MEMORY_KIND_DMABUF 2
#define MEMHAL_MEMORY_KIND_IOSURFACE 3
#define MEMHAL_MEMORY_KIND_PBO 4
#define MEMHAL_MEMORY_KIND_CUDA 5

#define MEMHAL_DTYPE_U8 0
#define MEMHAL_DTYPE_I8 1
#define MEMHAL_DTYPE_U16 2
#define MEMHAL_DTYPE_I16 3
#define MEMHAL_DTYPE_U32 4
#define MEMHAL_DTYPE_I32 5
#define MEMHAL_DTYPE_U64 6
#define MEMHAL_DTYPE_I64 7
#define MEMHAL_DTYPE_F16 8
#define MEMHAL_DTYPE_F32 9
#define MEMHAL_DTYPE_F64 10
#define MEMHAL_DTYPE_BF16 11

#define MEMHAL_PIXEL_FORMAT_RGB 1
#define MEMHAL_PIXEL_FORMAT_RGBA 2
#define MEMHAL_PIXEL_FORMAT_BGRA 3
#define MEMHAL_PIXEL_FORMAT_GREY 4
#define MEMHAL_PIXEL_FORMAT_YUYV 5
#define MEMHAL_PIXEL_FORMAT_VYUY 6
#define MEMHAL_PIXEL_FORMAT_NV12 7
#define MEMHAL_PIXEL_FORMAT_NV16 8
#define MEMHAL_PIXEL_FORMAT_PLANAR_RGB 9
#define MEMHAL_PIXEL_FORMAT_PLANAR_RGBA 10
#define MEMHAL_PIXEL_FORMAT_NV24 11
#define MEMHAL_PIXEL_FORMAT_NV21 12
#define MEMHAL_PIXEL_FORMAT_I420 13
#define MEMHAL_PIXEL_FORMAT_UYVY 14
#define MEMHAL_PIXEL_FORMAT_BGR 15

#define MEMHAL_COMPRESSION_NONE 0
#define MEMHAL_COMPRESSION_ANY 1
#define MEMHAL_COMPRESSION_UBWC 2
#define MEMHAL_COMPRESSION_AFBC 3
#define MEMHAL_COMPRESSION_PVRIC 4
#define MEMHAL_COMPRESSION_DCC 5

#define MEMHAL_CPU_ACCESS_NONE 0
#define MEMHAL_CPU_ACCESS_READ 1
#define MEMHAL_CPU_ACCESS_WRITE 2
#define MEMHAL_CPU_ACCESS_READ_WRITE 3

#define MEMHAL_MEMORY_DOMAIN_KIND_SYSTEM 0
#define MEMHAL_MEMORY_DOMAIN_KIND_SYSTEM_VIEW 1
#define MEMHAL_MEMORY_DOMAIN_KIND_DMABUF 2
#define MEMHAL_MEMORY_DOMAIN_KIND_VULKAN_TEXTURE 3
#define MEMHAL_MEMORY_DOMAIN_KIND_WEBGPU_BUFFER 4
#define MEMHAL_MEMORY_DOMAIN_KIND_CUDA 5
#define MEMHAL_MEMORY_DOMAIN_KIND_D3D11_TEXTURE 6
#define MEMHAL_MEMORY_DOMAIN_KIND_CV_PIXEL_BUFFER 7
#define MEMHAL_MEMORY_DOMAIN_KIND_WEBGPU_EXTERNAL_TEXTURE 8
#define MEMHAL_MEMORY_DOMAIN_KIND_WGPU_TEXTURE 9
#define MEMHAL_MEMORY_DOMAIN_KIND_WGPU_BUFFER 10

/* The options of memhal_convert_options_t and the image backends (DESIGN.md §5a). */
#define MEMHAL_FLIP_NONE 0
#define MEMHAL_FLIP_HORIZONTAL 1
#define MEMHAL_FLIP_VERTICAL 2
#define MEMHAL_FLIP_BOTH 3

#define MEMHAL_ROTATION_NONE 0
#define MEMHAL_ROTATION_CW90 1
#define MEMHAL_ROTATION_CW180 2
#define MEMHAL_ROTATION_CW270 3

#define MEMHAL_RESIZE_MODE_STRETCH 0
#define MEMHAL_RESIZE_MODE_LETTERBOX 1

#define MEMHAL_INTERPOLATION_BILINEAR 0
#define MEMHAL_INTERPOLATION_NEAREST 1
#define MEMHAL_INTERPOLATION_AREA 2

#define MEMHAL_COLOR_MATRIX_BT601 0
#define MEMHAL_COLOR_MATRIX_BT709 1

#define MEMHAL_COLOR_RANGE_LIMITED 0
#define MEMHAL_COLOR_RANGE_FULL 1

#define MEMHAL_IMAGE_BACKEND_AUTO (-1) /**< GL on a hardware GPU, else the CPU; MEMHAL_BACKEND=cpu|gl pins it */
#define MEMHAL_IMAGE_BACKEND_CPU 0
#define MEMHAL_IMAGE_BACKEND_GL 1

/** Which vocabulary a code belongs to, for the name lookups below. */
typedef enum memhal_vocabulary {
  MEMHAL_VOCABULARY_MEMORY_KIND = 0,
  MEMHAL_VOCABULARY_DTYPE = 1,
  MEMHAL_VOCABULARY_PIXEL_FORMAT = 2,
  MEMHAL_VOCABULARY_COMPRESSION = 3,
  MEMHAL_VOCABULARY_CPU_ACCESS = 4,
  MEMHAL_VOCABULARY_MEMORY_DOMAIN_KIND = 5,
  MEMHAL_VOCABULARY_ERROR_CODE = 6,
  MEMHAL_VOCABULARY_FLIP = 7,
  MEMHAL_VOCABULARY_ROTATION = 8,
  MEMHAL_VOCABULARY_RESIZE_MODE = 9,
  MEMHAL_VOCABULARY_INTERPOLATION = 10,
  MEMHAL_VOCABULARY_COLOR_MATRIX = 11,
  MEMHAL_VOCABULARY_COLOR_RANGE = 12,
  MEMHAL_VOCABULARY_IMAGE_BACKEND = 13,
  /* Keeps the enum 32 bits wide, so any int a caller passes is a value the library can
   * receive and reject (as Vulkan's *_MAX_ENUM). Not a vocabulary. */
  MEMHAL_VOCABULARY_MAX_ENUM = 0x7fffffff
} memhal_vocabulary_t;

/* ---- opaque handles ---- */
typedef struct memhal_tensor memhal_tensor_t;
typedef struct memhal_map memhal_map_t;
typedef struct memhal_frame memhal_frame_t;
typedef struct memhal_image_processor memhal_image_processor_t;
typedef struct memhal_channel memhal_channel_t;
typedef struct memhal_recorder memhal_recorder_t;
typedef struct memhal_replayer memhal_replayer_t;
typedef struct memhal_camera memhal_camera_t;

/** One plane of a multi-plane image, for imports. */
typedef struct memhal_plane {
  uint32_t buffer;   /**< which fd holds the plane (index into the fds given) */
  uint32_t reserved; /**< must be 0 (checked) */
  int64_t offset;    /**< byte offset of the plane in that buffer */
  int64_t pitch;     /**< bytes from one row to the next */
} memhal_plane_t;

/** Options of memhal_image_processor_convert; start from memhal_convert_options_default(). */
typedef struct memhal_convert_options {
  int32_t has_crop;  /**< nonzero: use crop_* as the source rectangle */
  int32_t reserved0; /**< must be 0 (checked) */
  int64_t crop_x, crop_y, crop_width, crop_height;
  uint32_t flip;          /**< a MEMHAL_FLIP_* */
  uint32_t rotation;      /**< a MEMHAL_ROTATION_* (clockwise, after the flip) */
  uint32_t resize;        /**< a MEMHAL_RESIZE_MODE_* */
  uint32_t interpolation; /**< a MEMHAL_INTERPOLATION_* */
  uint8_t pad[4];         /**< RGBA of the letterbox bars */
  uint32_t matrix;        /**< a MEMHAL_COLOR_MATRIX_* */
  uint32_t range;         /**< a MEMHAL_COLOR_RANGE_* */
  float mean[4];          /**< per output channel, float outputs */
  float std[4];           /**< per output channel, float outputs */
  int32_t swap_rb;        /**< nonzero: exchange R and B in the output */
  uint32_t reserved1[7];  /**< must be 0 (checked) */
} memhal_convert_options_t;

/* ---- version ---- */

/** The version of the libmemhal loaded at run time, "MAJOR.MINOR.PATCH" (static storage; do
 *  not free). Equal to MEMHAL_VERSION_STRING unless the program runs against another build of
 *  the library than the headers it was compiled with. Never fails. */
MEMHAL_C_API const char* memhal_version(void);

/* ---- errors and vocabulary ---- */

/** This thread's last failure message ("" when there was none). Valid until this thread's
 *  next memhal call. Never fails. */
MEMHAL_C_API const char* memhal_last_error_message(void);

/** The wire string of `code` in `vocabulary` (static storage; do not free). */
MEMHAL_C_API int memhal_code_to_string(memhal_vocabulary_t vocabulary, uint32_t code, const char** out);
/** The code of `text` (wire spelling or alias, ASCII case-insensitive) in `vocabulary`. */
MEMHAL_C_API int memhal_string_to_code(memhal_vocabulary_t vocabulary, const char* text, uint32_t* out);
/** Whether `memory_kind` can be allocated here, with the reason (static storage, valid for the
 *  life of the process). */
MEMHAL_C_API int memhal_memory_kind_availability(int32_t memory_kind, int* available, const char** reason);
/** The element size of `dtype` in bytes. */
MEMHAL_C_API int memhal_dtype_size(uint32_t dtype, size_t* out);

/* ---- tensors ---- */

/** A new zeroed tensor of `rank` dimensions `shape`. `memory` is a MEMHAL_MEMORY_KIND_* or
 *  MEMHAL_MEMORY_KIND_AUTO; a pinned kind never falls back. `name` may be NULL. The caller
 *  frees `*out` with memhal_tensor_free. */
MEMHAL_C_API int memhal_tensor_create(const int64_t* shape, size_t rank, uint32_t dtype, int32_t memory,
                                      const char* name, memhal_tensor_t** out);
/** A new image (rows aligned to 64 bytes; auto-selection DmaBuf -> Mem). */
MEMHAL_C_API int memhal_tensor_image(int64_t width, int64_t height, uint32_t pixel_format, int32_t memory,
                                     uint32_t dtype, memhal_tensor_t** out);
/** Imports `fd` (borrowed: duplicated) as a strided tensor of `rank` dims with byte `strides`
 *  and `offset`. `memory` is MEMHAL_MEMORY_KIND_AUTO to detect (DMA-BUF or memfd), or the
 *  kind expected. A buffer shorter than the layout is MEMHAL_ERROR_OUT_OF_RANGE. A memfd must
 *  be sealed with F_SEAL_SHRINK, or sealable here (made with MFD_ALLOW_SEALING and passed
 *  writable): else MEMHAL_ERROR_INVALID_ARGUMENT, as its owner could truncate it under the
 *  mapping. Only the bytes the layout reaches are mapped. */
MEMHAL_C_API int memhal_tensor_from_fd(int fd, const int64_t* shape, const int64_t* strides, size_t rank,
                                       int64_t offset, uint32_t dtype, int32_t memory, memhal_tensor_t** out);
/** Imports a multi-plane image: `fds[i]` (borrowed) backs buffer i of `planes`. */
MEMHAL_C_API int memhal_tensor_from_planes(const int* fds, size_t fd_count, int64_t width, int64_t height,
                                           uint32_t pixel_format, const memhal_plane_t* planes, size_t plane_count,
                                           int32_t memory, memhal_tensor_t** out);
/** Called once to let go of memory handed to memhal_tensor_wrap or memhal_tensor_wrap_image. */
typedef void (*memhal_release_fn)(void* user_data);
/** A MEMHAL_MEMORY_KIND_MEM tensor over the caller's host memory, used in place (no copy):
 *  `data` is byte 0 of the memory, and `offset` and the byte `strides` (signed) of a `rank`-D
 *  `dtype` tensor count from it. The caller promises the memory holds every byte the layout
 *  reaches and stays valid until `release(user_data)` is called: exactly once, on whichever
 *  thread drops the last tensor, view, map or frame over the memory. `release` may be NULL
 *  (memory the caller outlives). Ownership passes in every case: when this function fails
 *  (any error, NULL `out` included) it calls `release(user_data)` before it returns.
 *  `access` MEMHAL_CPU_ACCESS_READ makes the tensor read-only (write maps fail with
 *  MEMHAL_ERROR_PERMISSION_DENIED); WRITE or READ_WRITE lets memhal write through `data`.
 *  MEMHAL_ERROR_INVALID_ARGUMENT for a NULL `data` under a non-empty layout, a layout that
 *  reaches before `data` or past the end of the address space, or a bad code. */
MEMHAL_C_API int memhal_tensor_wrap(const void* data, const int64_t* shape, const int64_t* strides, size_t rank,
                                    int64_t offset, uint32_t dtype, uint32_t access, memhal_release_fn release,
                                    void* user_data, memhal_tensor_t** out);
/** As memhal_tensor_wrap, for a u8 image of `pixel_format`: `planes` (plane_count of them, one
 *  per plane of the format, each with buffer 0) give each plane's offset from `data` and its
 *  pitch, as from GStreamer's GstVideoInfo, FFmpeg's AVFrame data/linesize or V4L2. `planes`
 *  NULL with `plane_count` 0 means packed planes: pitch = row bytes, each plane right after
 *  the last. A plane count that does not match the format, a pitch shorter than a row, or
 *  planar RGB planes not evenly spaced with one pitch are MEMHAL_ERROR_INVALID_ARGUMENT. */
MEMHAL_C_API int memhal_tensor_wrap_image(const void* data, int64_t width, int64_t height, uint32_t pixel_format,
                                          const memhal_plane_t* planes, size_t plane_count, uint32_t access,
                                          memhal_release_fn release, void* user_data, memhal_tensor_t** out);
/** Releases the handle (the memory lives on while views, maps or frames still use it). */
MEMHAL_C_API void memhal_tensor_free(memhal_tensor_t* tensor);

MEMHAL_C_API int memhal_tensor_rank(const memhal_tensor_t* tensor, size_t* out);
/** Copies min(rank, capacity) dimensions into `shape`; `*rank` receives the rank. */
MEMHAL_C_API int memhal_tensor_shape(const memhal_tensor_t* tensor, int64_t* shape, size_t capacity, size_t* rank);
/** Signed byte strides, as memhal_tensor_shape. */
MEMHAL_C_API int memhal_tensor_strides(const memhal_tensor_t* tensor, int64_t* strides, size_t capacity, size_t* rank);
MEMHAL_C_API int memhal_tensor_dtype(const memhal_tensor_t* tensor, uint32_t* out);
/** The memory kind the tensor actually got. */
MEMHAL_C_API int memhal_tensor_memory(const memhal_tensor_t* tensor, uint32_t* out);
/** The pixel format, or 0 when the tensor is not an image. */
MEMHAL_C_API int memhal_tensor_pixel_format(const memhal_tensor_t* tensor, uint32_t* out);
MEMHAL_C_API int memhal_tensor_nbytes(const memhal_tensor_t* tensor, int64_t* out);
/** The name (owned by the tensor; valid until it is freed). */
MEMHAL_C_API int memhal_tensor_name(const memhal_tensor_t* tensor, const char** out);
/** Why auto-selection skipped other kinds (owned by the tensor; "" when none). */
MEMHAL_C_API int memhal_tensor_allocation_notes(const memhal_tensor_t* tensor, const char** out);
/** A new fd for buffer `buffer` (Shm, DmaBuf); the caller closes it. */
MEMHAL_C_API int memhal_tensor_clone_fd(const memhal_tensor_t* tensor, size_t buffer, int* out);

/* Zero-copy views: each returns a new handle over the same memory; the caller frees it. */
MEMHAL_C_API int memhal_tensor_slice(const memhal_tensor_t* tensor, size_t axis, int64_t begin, int64_t end,
                                     memhal_tensor_t** out);
MEMHAL_C_API int memhal_tensor_flip(const memhal_tensor_t* tensor, size_t axis, memhal_tensor_t** out);
MEMHAL_C_API int memhal_tensor_transpose(const memhal_tensor_t* tensor, size_t a, size_t b, memhal_tensor_t** out);
MEMHAL_C_API int memhal_tensor_permute(const memhal_tensor_t* tensor, const size_t* axes, size_t count,
                                       memhal_tensor_t** out);
MEMHAL_C_API int memhal_tensor_reshape(const memhal_tensor_t* tensor, const int64_t* shape, size_t rank,
                                       memhal_tensor_t** out);
MEMHAL_C_API int memhal_tensor_crop(const memhal_tensor_t* tensor, int64_t x, int64_t y, int64_t width, int64_t height,
                                    memhal_tensor_t** out);
/** A new dense copy, in `memory` (or the source's kind / auto-selection with AUTO). */
MEMHAL_C_API int memhal_tensor_materialize(const memhal_tensor_t* tensor, int32_t memory, memhal_tensor_t** out);

/* ---- CPU mappings ---- */

/** Maps the tensor for the CPU with `access` (MEMHAL_CPU_ACCESS_READ/WRITE/READ_WRITE). The
 *  mapping is valid until memhal_map_free; the caller frees it. The bytes of a READ map must
 *  not be written: for shm and dmabuf memory they lie in a read-only mapping and a write
 *  faults (SIGSEGV); for mem only this rule guards them. */
MEMHAL_C_API int memhal_tensor_map(const memhal_tensor_t* tensor, uint32_t access, memhal_map_t** out);
/** The tensor's logical element 0 (plane 0 of a multi-plane image). */
MEMHAL_C_API void* memhal_map_data(const memhal_map_t* map);
/** Bytes of a contiguous tensor; 0 for a strided or multi-plane one. */
MEMHAL_C_API size_t memhal_map_size(const memhal_map_t* map);
/** First byte of plane `index`, or NULL beyond the planes. */
MEMHAL_C_API void* memhal_map_plane(const memhal_map_t* map, size_t index);
/** Ends the CPU access. */
MEMHAL_C_API void memhal_map_free(memhal_map_t* map);

/* ---- frames ---- */

/** A frame whose payload is `tensor`'s memory (no copy), with `pts` (ns; INT64_MIN: unknown)
 *  and `sequence`. The tensor handle stays the caller's. */
MEMHAL_C_API int memhal_frame_from_tensor(const memhal_tensor_t* tensor, int64_t pts, uint64_t sequence,
                                          memhal_frame_t** out);
/** The frame's payload as a tensor (no copy). */
MEMHAL_C_API int memhal_frame_to_tensor(const memhal_frame_t* frame, memhal_tensor_t** out);
/** The MEMHAL_MEMORY_DOMAIN_KIND_* of the payload. */
MEMHAL_C_API int memhal_frame_domain_kind(const memhal_frame_t* frame, uint32_t* out);
MEMHAL_C_API int memhal_frame_pts(const memhal_frame_t* frame, int64_t* out);
MEMHAL_C_API int memhal_frame_sequence(const memhal_frame_t* frame, uint64_t* out);
MEMHAL_C_API void memhal_frame_free(memhal_frame_t* frame);
/** Fans `frame` out to `branches` frames sharing its payload (no byte copied) into `out`
 *  (an array of `branches` handles the caller frees). `frame` stays the caller's.
 *  MEMHAL_ERROR_INVALID_ARGUMENT for 0 branches; MEMHAL_ERROR_OUT_OF_MEMORY for more
 *  branches than memory can hold. On any failure only `out[0]` is written (NULL): `branches`
 *  itself may be the bad argument. */
MEMHAL_C_API int memhal_tee_push(const memhal_frame_t* frame, size_t branches, memhal_frame_t** out);

/* ---- image processing ---- */

/** The defaults of DESIGN.md §5a (bilinear, stretch, BT.601 limited, pad 114/114/114/255,
 *  mean 0, std 1). */
MEMHAL_C_API memhal_convert_options_t memhal_convert_options_default(void);
/** A processor with `threads` workers (0: one per hardware thread), backend chosen as AUTO. */
MEMHAL_C_API int memhal_image_processor_create(unsigned threads, memhal_image_processor_t** out);
/** A processor on `backend` (MEMHAL_IMAGE_BACKEND_*). A pinned backend that cannot start fails
 *  (MEMHAL_ERROR_UNAVAILABLE, with the reason); it is never swapped for another. */
MEMHAL_C_API int memhal_image_processor_create_on(unsigned threads, int backend, memhal_image_processor_t** out);
/** The backend conversions run on (MEMHAL_IMAGE_BACKEND_CPU or _GL). */
MEMHAL_C_API int memhal_image_processor_backend(const memhal_image_processor_t* processor, int* out);
MEMHAL_C_API void memhal_image_processor_free(memhal_image_processor_t* processor);
/** Converts `src` into `dst` per `options` (NULL: defaults). Nothing is written on failure; an
 *  option field holding no code of its vocabulary is MEMHAL_ERROR_INVALID_ARGUMENT, naming it. */
MEMHAL_C_API int memhal_image_processor_convert(memhal_image_processor_t* processor, const memhal_tensor_t* src,
                                                memhal_tensor_t* dst, const memhal_convert_options_t* options);
/** Fills the batch `dst` (a plain {N, C, H, W} or {N, H, W, C} tensor, N = `count`) from the
 *  `count` frames `srcs` (any sizes and formats), one call; ImageProcessor::convert_batch.
 *  Nothing is written when any frame is refused (the message names it). */
MEMHAL_C_API int memhal_image_processor_convert_batch(memhal_image_processor_t* processor,
                                                      const memhal_tensor_t* const* srcs, size_t count,
                                                      memhal_tensor_t* dst, const memhal_convert_options_t* options);

/* ---- channels (tensors and frames between processes) ---- */

/** Two connected channel ends; the caller frees both. */
MEMHAL_C_API int memhal_channel_pair(memhal_channel_t** a, memhal_channel_t** b);
/** Connects to a named socket. */
MEMHAL_C_API int memhal_channel_connect(const char* path, memhal_channel_t** out);
/** Adopts a connected SOCK_SEQPACKET socket: `socket` is *consumed* (closed by the channel,
 *  also on failure). */
MEMHAL_C_API int memhal_channel_adopt(int socket, memhal_channel_t** out);
/** The channel's socket (borrowed; owned by the channel). */
MEMHAL_C_API int memhal_channel_fd(const memhal_channel_t* channel, int* out);
MEMHAL_C_API void memhal_channel_free(memhal_channel_t* channel);
/** Sends a Shm or DmaBuf tensor (its fds, not its bytes). */
MEMHAL_C_API int memhal_channel_send(memhal_channel_t* channel, const memhal_tensor_t* tensor);
/** Waits up to `timeout_ms` (negative: forever) for a tensor. */
MEMHAL_C_API int memhal_channel_receive(memhal_channel_t* channel, int timeout_ms, memhal_tensor_t** out);
MEMHAL_C_API int memhal_channel_send_frame(memhal_channel_t* channel, const memhal_frame_t* frame);
MEMHAL_C_API int memhal_channel_receive_frame(memhal_channel_t* channel, int timeout_ms, memhal_frame_t** out);

/* ---- recordings ---- */

MEMHAL_C_API int memhal_recorder_create(const char* path, memhal_recorder_t** out);
MEMHAL_C_API int memhal_recorder_write(memhal_recorder_t* recorder, const memhal_tensor_t* tensor,
                                       int64_t timestamp_ns);
MEMHAL_C_API void memhal_recorder_free(memhal_recorder_t* recorder);
MEMHAL_C_API int memhal_replayer_open(const char* path, memhal_replayer_t** out);
/** The next record materialised as a tensor in `memory` (AUTO: the recorded kind when it can
 *  be allocated here). `*out` is NULL at the clean end of the file. `*timestamp_ns` may be
 *  NULL. MEMHAL_ERROR_CORRUPT for a damaged record; MEMHAL_ERROR_UNAVAILABLE for a record
 *  without bytes (the message says what it was). */
MEMHAL_C_API int memhal_replayer_next(memhal_replayer_t* replayer, int32_t memory, memhal_tensor_t** out,
                                      int64_t* timestamp_ns);
MEMHAL_C_API void memhal_replayer_free(memhal_replayer_t* replayer);

/* ---- cameras (V4L2 capture; frames are the driver's buffers) ---- */

/** Where capture buffers come from (memhal::CameraIo). */
#define MEMHAL_CAMERA_IO_AUTO 0
#define MEMHAL_CAMERA_IO_MMAP 1
#define MEMHAL_CAMERA_IO_DMABUF_IMPORT 2

/** What memhal_camera_open asks for; 0 (format: -1) keeps what the device has. */
typedef struct memhal_camera_options {
  uint32_t width;
  uint32_t height;
  int32_t format;  /**< MEMHAL_PIXEL_FORMAT_*, or -1 */
  uint32_t fourcc; /**< a V4L2 FourCC instead of `format` (wins when not 0) */
  double fps;
  uint32_t buffers; /**< default 4 */
  int32_t io;       /**< MEMHAL_CAMERA_IO_* */
} memhal_camera_options_t;

/** What was negotiated (the driver may adjust what was asked for). */
typedef struct memhal_camera_config {
  uint32_t width;
  uint32_t height;
  int32_t format; /**< MEMHAL_PIXEL_FORMAT_* */
  uint32_t fourcc;
  double fps; /**< 0 when the driver does not say */
  uint32_t buffers;
  int32_t io; /**< MEMHAL_CAMERA_IO_MMAP or _DMABUF_IMPORT */
  int multi_planar;
} memhal_camera_config_t;

typedef struct memhal_camera_stats {
  uint64_t frames;
  uint64_t dropped; /**< gaps in the driver's sequence numbers */
  uint64_t errors;
  uint32_t held;   /**< buffers consumers hold now */
  uint32_t queued; /**< buffers with the driver now */
} memhal_camera_stats_t;

/** One capture device as memhal_camera_list finds it (strings NUL-terminated, cut to fit). */
typedef struct memhal_camera_info {
  char path[64];
  char driver[32];
  char card[64];
  char bus[64];
  int multi_planar;
  size_t format_count;
} memhal_camera_info_t;

/** One size of one format a device offers, as memhal_camera_formats lists them. */
typedef struct memhal_camera_format {
  uint32_t fourcc;      /**< the V4L2 FourCC */
  int32_t format;       /**< MEMHAL_PIXEL_FORMAT_*, or -1 when memhal has no name for it */
  int multi_buffer;     /**< planes in separate buffers (NV12M, YUV420M) */
  int stepwise;         /**< any size between this format's first and last entry works */
  char description[32]; /**< the driver's ("Y/UV 4:2:0"), cut to fit */
  uint32_t width;
  uint32_t height;
  size_t fps_count; /**< frame rates in `fps` (at most 8; more are cut) */
  double fps[8];
} memhal_camera_format_t;

/** The defaults: device's size, format and rate, 4 buffers, MEMHAL_CAMERA_IO_AUTO. */
MEMHAL_C_API memhal_camera_options_t memhal_camera_options_default(void);
/** Every video capture device: `*out` is an array of `*count` entries (NULL when none) that the
 *  caller frees with memhal_camera_list_free. */
MEMHAL_C_API int memhal_camera_list(memhal_camera_info_t** out, size_t* count);
MEMHAL_C_API void memhal_camera_list_free(memhal_camera_info_t* list);
/** Every format and frame size of the capture device at `path` (one entry per format and
 *  size, in the driver's order); *out is NULL when there are none. The caller frees with
 *  memhal_camera_formats_free. Errors as memhal_camera_open for a path that is no camera. */
MEMHAL_C_API int memhal_camera_formats(const char* path, memhal_camera_format_t** out, size_t* count);
MEMHAL_C_API void memhal_camera_formats_free(memhal_camera_format_t* formats);
/** Opens `path` and starts streaming (`options` NULL: defaults). Errors as V4l2Camera::open:
 *  MEMHAL_ERROR_UNAVAILABLE (no such device, gone), MEMHAL_ERROR_INVALID_ARGUMENT (not a
 *  capture device, a format or size it does not offer: the message lists what it does),
 *  MEMHAL_ERROR_BUSY (another handle streams from it). */
MEMHAL_C_API int memhal_camera_open(const char* path, const memhal_camera_options_t* options, memhal_camera_t** out);
/** The next frame: its payload is the capture buffer, which goes back to the driver when the
 *  last frame, tensor and map of it is freed. Waits up to `timeout_ms` (negative: forever).
 *  MEMHAL_ERROR_BUSY when consumers hold every buffer or no frame came in time;
 *  MEMHAL_ERROR_UNAVAILABLE when the device went away. */
MEMHAL_C_API int memhal_camera_next_frame(memhal_camera_t* camera, int timeout_ms, memhal_frame_t** out);
MEMHAL_C_API int memhal_camera_get_config(const memhal_camera_t* camera, memhal_camera_config_t* out);
/** Why MEMHAL_CAMERA_IO_AUTO did not get DMABUF_IMPORT ("" otherwise); owned by the camera. */
MEMHAL_C_API const char* memhal_camera_io_notes(const memhal_camera_t* camera);
MEMHAL_C_API int memhal_camera_get_stats(const memhal_camera_t* camera, memhal_camera_stats_t* out);
/** Stops streaming; frames still out stay valid until freed. */
MEMHAL_C_API void memhal_camera_free(memhal_camera_t* camera);

#ifdef __cplusplus
}
#endif

#endif /* MEMHAL_MEMHAL_H */
