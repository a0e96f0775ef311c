// Tensors over memory owned by Python objects (numpy arrays, DLPack producers).
#pragma once
#include <memhal/tensor.hpp>

#include <functional>
#include <span>

#include "py_common.hpp"

namespace memhal::python {

/// A Mem tensor over foreign bytes: `element0` is the logical element 0, `byte_strides` may be
/// negative. `release` runs once, with the GIL held, when the last tensor over the bytes is
/// gone (also when this call fails); it must hold no Python references of its own (it runs
/// from whichever thread drops the last tensor). `writable` false makes write maps fail with
/// PermissionDenied.
Tensor wrap_foreign(std::byte* element0, DType dtype, std::span<const int64_t> shape,
                    std::span<const int64_t> byte_strides, bool writable, std::string what,
                    std::function<void()> release);

}  // namespace memhal::python
