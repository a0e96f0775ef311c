/* A minimal DLPack 1.x consumer, loaded by test_arraylike.py through ctypes: it reads a
 * DLManagedTensorVersioned the way a framework does, sums its bytes (u8, any strides) and calls
 * its deleter. The structs are DLPack 1.0's (dlpack.h), written out here. */
#include <stdint.h>

typedef struct {
  int32_t device_type;
  int32_t device_id;
} DLDevice;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* out: [major, minor, flags, device_type, ndim, dtype code, dtype bits, data address, byte sum, shape...] */
int consume(void* capsule_pointer, int64_t* out, int64_t capacity) {
  DLManagedTensorVersioned* managed = (DLManagedTensorVersioned*)capsule_pointer;
  const DLTensor* t = &managed->dl_tensor;
  if (t->ndim < 0 || 9 + t->ndim > capacity || t->ndim > 8) return -1;
  const uint8_t* base = (const uint8_t*)t->data + t->byte_offset;
  int64_t index[8] = {0}, strides[8];
  int64_t count = 1;
  for (int32_t i = t->ndim - 1; i >= 0; --i) {
    strides[i] = t->strides ? t->strides[i] : count; /* no strides: row-major */
    count *= t->shape[i];
  }
  uint64_t sum = 0;
  for (int64_t n = 0; n < count && t->dtype.bits == 8; ++n) {
    int64_t offset = 0;
    for (int32_t i = 0; i < t->ndim; ++i) offset += index[i] * strides[i];
    sum += base[offset];
    for (int32_t i = t->ndim - 1; i >= 0; --i) {
      if (++index[i] < t->shape[i]) break;
      index[i] = 0;
    }
  }
  out[0] = managed->version.major;
  out[1] = managed->version.minor;
  out[2] = (int64_t)managed->flags;
  out[3] = t->device.device_type;
  out[4] = t->ndim;
  out[5] = t->dtype.code;
  out[6] = t->dtype.bits;
  out[7] = (int64_t)(intptr_t)base;
  out[8] = (int64_t)sum;
  for (int32_t i = 0; i < t->ndim; ++i) out[9 + i] = t->shape[i];
  if (managed->deleter) managed->deleter(managed);
  return 0;
}
