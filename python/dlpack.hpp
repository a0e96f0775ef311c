// The DLPack ABI, declared from the public specification, version 1.0 (dlpack.h of
// dmlc/dlpack v1.0; https://dmlc.github.io/dlpack/latest/c_api.html). Debian 12's
// libdlpack-dev ships 0.6, which lacks the versioned tensor. These layouts are a stable ABI:
// the fields and values below must never change.
#pragma once
#include <cstdint>

namespace memhal::python::dlpack {

inline constexpr uint32_t kMajorVersion = 1;
inline constexpr uint32_t kMinorVersion = 0;

inline constexpr int32_t kDLCPU = 1;
inline constexpr int32_t kDLCUDA = 2;
inline constexpr int32_t kDLCUDAHost = 3;

inline constexpr uint8_t kDLInt = 0;
inline constexpr uint8_t kDLUInt = 1;
inline constexpr uint8_t kDLFloat = 2;
inline constexpr uint8_t kDLBfloat = 4;

inline constexpr uint64_t kFlagReadOnly = 1ULL << 0;
inline constexpr uint64_t kFlagIsCopied = 1ULL << 1;

inline constexpr const char* kLegacyName = "dltensor";
inline constexpr const char* kLegacyUsedName = "used_dltensor";
inline constexpr const char* kVersionedName = "dltensor_versioned";
inline constexpr const char* kVersionedUsedName = "used_dltensor_versioned";

struct DLDevice {
  int32_t device_type;  // DLDeviceType, a C enum (int-sized)
  int32_t device_id;
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

static_assert(sizeof(DLDevice) == 8);
static_assert(sizeof(DLDataType) == 4);
static_assert(sizeof(DLTensor) == 48);
static_assert(sizeof(DLManagedTensor) == 64);
static_assert(sizeof(DLManagedTensorVersioned) == 80);

}  // namespace memhal::python::dlpack
