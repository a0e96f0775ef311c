// memhal.TensorPool: a ring of pre-faulted tensors, recycled. acquire() waits with the GIL
// released; slot() is a context manager whose tensor goes back to the pool when the block ends.
#include <pybind11/stl.h>

#include <memhal/tensor_pool.hpp>

#include <chrono>

#include "py_common.hpp"

namespace memhal::python {
namespace {

// A pool wait as the C++ call takes it: None (forever) and very long waits as the clock's
// maximum, which TensorPool::acquire waits out in full.
std::chrono::nanoseconds pool_wait(py::handle timeout) {
  const auto wait = to_timeout(timeout);
  if (!wait || *wait >= std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds::max()))
    return std::chrono::nanoseconds::max();
  return *wait;
}

Tensor acquire(TensorPool& pool, py::handle timeout) {
  const auto wait = pool_wait(timeout);
  py::gil_scoped_release unlocked;
  return unwrap(pool.acquire(wait));
}

// `with pool.slot() as t:` — acquires on entry; on exit the Python tensor `t` lets go of its
// slot (it becomes an empty tensor), so the slot comes back as soon as nothing made from it
// (views, maps, frames, numpy arrays) is left.
struct PoolSlot {
  py::object pool;
  py::object timeout;
  py::object tensor;
};

const Tensor& empty_tensor() {
  static const Tensor empty = unwrap(Tensor::create({0}, DType::U8, MemoryKind::Mem));
  return empty;
}

std::string pool_repr(const TensorPool& pool) {
  const Layout& layout = pool.layout();
  std::string out =
      "memhal.TensorPool(capacity=" + std::to_string(pool.capacity()) +
      ", available=" + std::to_string(pool.available()) + ", shape=" + std::string(py::repr(to_tuple(layout.shape()))) +
      ", dtype=" + std::string(to_string(layout.dtype())) + ", memory=" + std::string(to_string(pool.memory()));
  if (layout.pixel_format()) out += ", format=" + std::string(to_string(*layout.pixel_format()));
  return out + ")";
}

}  // namespace

void bind_pool(py::module_& m) {
  py::class_<PoolSlot>(m, "PoolSlot",
                       "A context manager over one tensor of a TensorPool (TensorPool.slot): entering acquires it, "
                       "leaving hands it back (the tensor object becomes empty; what was made from it keeps the slot "
                       "out until it is gone).")
      .def(
          "__enter__",
          [](PoolSlot& self) {
            if (!self.tensor.is_none()) raise(ErrorCode::InvalidArgument, "PoolSlot: this slot is already entered");
            self.tensor = py::cast(acquire(self.pool.cast<TensorPool&>(), self.timeout));
            return self.tensor;
          },
          "Acquires a tensor (waiting up to the slot's timeout) and returns it.")
      .def(
          "__exit__",
          [](PoolSlot& self, py::handle, py::handle, py::handle) {
            if (!self.tensor.is_none()) self.tensor.cast<Tensor&>() = empty_tensor();
            self.tensor = py::none();
          },
          py::arg("exc_type"), py::arg("exc_value"), py::arg("traceback"),
          "Lets go of the tensor: the pool gets the slot back once nothing else holds it.")
      .def("__repr__", [](const PoolSlot& self) {
        return std::string("memhal.PoolSlot(") + (self.tensor.is_none() ? "idle" : "entered") + ")";
      });

  py::class_<TensorPool>(m, "TensorPool",
                         "A ring of pre-faulted tensors of one layout and memory kind, recycled: a tensor comes back "
                         "when the last reference to it (copies, views, maps, frames, numpy arrays) is gone. "
                         "Thread-safe.")
      .def(py::init([](py::object shape, py::object dtype, std::size_t count, py::object memory) {
             const Layout layout =
                 unwrap(Layout::contiguous(to_shape(shape), to_vocabulary<DType>(dtype, "TensorPool")));
             const auto kind = to_optional_vocabulary<MemoryKind>(memory, "TensorPool");
             py::gil_scoped_release unlocked;
             return unwrap(TensorPool::create(layout, count, kind));
           }),
           py::arg("shape"), py::arg("dtype") = "f32", py::arg("count") = 4, py::arg("memory") = py::none(),
           "count row-major tensors of shape and dtype, allocated now (memory=None: dmabuf, then mem) and "
           "pre-faulted.")
      .def_static(
          "image",
          [](int64_t width, int64_t height, py::object format, std::size_t count, py::object dtype, py::object memory,
             int64_t row_align) {
            const Layout layout =
                unwrap(Layout::image(width, height, to_vocabulary<PixelFormat>(format, "TensorPool.image"),
                                     to_vocabulary<DType>(dtype, "TensorPool.image"), row_align));
            const auto kind = to_optional_vocabulary<MemoryKind>(memory, "TensorPool.image");
            py::gil_scoped_release unlocked;
            return unwrap(TensorPool::create(layout, count, kind));
          },
          py::arg("width"), py::arg("height"), py::arg("format"), py::arg("count") = 4, py::arg("dtype") = "u8",
          py::arg("memory") = py::none(), py::arg("row_align") = kDefaultRowAlign,
          "A pool of count images (as Tensor.image makes them).")
      .def("acquire", &acquire, py::arg("timeout") = py::none(),
           "A free tensor, waiting up to timeout seconds for one to come back (None: forever; 0: not at all); "
           "BusyError when none did. The GIL is released while waiting.")
      .def(
          "try_acquire",
          [](TensorPool& self) -> std::optional<Tensor> {
            auto tensor = self.try_acquire();
            if (!tensor && tensor.error().code() == ErrorCode::Busy) return std::nullopt;
            return unwrap(std::move(tensor));
          },
          "A free tensor now, or None when all are out.")
      .def(
          "slot",
          [](py::object self, py::object timeout) {
            to_timeout(timeout);  // a bad timeout fails here, not at the with statement
            return PoolSlot{std::move(self), std::move(timeout), py::none()};
          },
          py::arg("timeout") = py::none(),
          "A context manager: `with pool.slot() as t:` acquires t (as acquire(timeout)) and hands it back when "
          "the block ends.")
      .def_property_readonly("capacity", &TensorPool::capacity, "How many tensors the pool owns.")
      .def_property_readonly("available", &TensorPool::available, "How many are free now (a snapshot).")
      .def_property_readonly("memory", &TensorPool::memory, "The MemoryKind every tensor of the pool got.")
      .def_property_readonly(
          "shape", [](const TensorPool& self) { return to_tuple(self.layout().shape()); }, "The shape of every tensor.")
      .def_property_readonly(
          "dtype", [](const TensorPool& self) { return self.layout().dtype(); }, "The DType of every tensor.")
      .def_property_readonly(
          "pixel_format", [](const TensorPool& self) { return self.layout().pixel_format(); },
          "The PixelFormat of every tensor, or None for plain tensors.")
      .def("__len__", &TensorPool::capacity, "The capacity.")
      .def("__repr__", &pool_repr);
}

}  // namespace memhal::python
