// memhal.Frame and memhal.Tee: pipeline frames over tensors, fan-out without byte copies, and
// frames over a Channel (the GIL is released while a frame is sent or awaited).
#include <pybind11/stl.h>

#include <memhal/channel.hpp>
#include <memhal/frame.hpp>
#include <memhal/memory_domain.hpp>
#include <memhal/tee.hpp>

#include <chrono>
#include <cmath>

#include "py_common.hpp"

namespace memhal::python {
namespace {

Frame frame_from_tensor(const Tensor& tensor, uint64_t sequence, std::optional<int64_t> pts,
                        std::optional<int64_t> duration) {
  return Frame{unwrap(MemoryDomain::from_tensor(tensor)), FrameTiming{pts, std::nullopt, duration}, sequence,
               Metadata{}};
}

}  // namespace

void bind_frame(py::module_& m) {
  py::class_<Frame>(m, "Frame", "A pipeline frame: payload (a memory domain), timing, sequence.")
      .def_static("from_tensor", &frame_from_tensor, py::arg("tensor"), py::arg("sequence") = 0,
                  py::arg("pts") = py::none(), py::arg("duration") = py::none(),
                  "A frame whose payload is the tensor's memory, without copying.")
      .def_property_readonly("domain", [](const Frame& f) { return f.payload.kind(); })
      .def_readwrite("sequence", &Frame::sequence)
      .def_property(
          "pts", [](const Frame& f) { return f.timing.pts; },
          [](Frame& f, std::optional<int64_t> v) { f.timing.pts = v; })
      .def_property(
          "duration", [](const Frame& f) { return f.timing.duration; },
          [](Frame& f, std::optional<int64_t> v) { f.timing.duration = v; })
      .def(
          "to_tensor", [](const Frame& f) { return unwrap(f.payload.to_tensor()); },
          "The payload as a tensor, without copying; UnimplementedError for domains no tensor can hold.")
      .def(
          "share", [](const Frame& f) { return unwrap(f.share()); },
          "The same frame for another consumer: a reference-count bump of the payload.")
      .def("make_shareable", &Frame::make_shareable);
  py::class_<Tee>(m, "Tee", "Fans a frame out to N branches with zero byte copies.")
      .def(py::init([](std::size_t branches) { return unwrap(Tee::create(branches)); }), py::arg("branches"))
      .def_property_readonly("branches", &Tee::branches)
      .def(
          "push",
          [](const Tee& tee, Frame& frame) {
            // The Python frame stays usable: the tee gets a share of it, not the object itself.
            frame.make_shareable();
            return unwrap(tee.push(unwrap(frame.share())));
          },
          py::arg("frame"));
  auto channel = py::reinterpret_borrow<py::class_<ipc::Channel>>(m.attr("Channel"));
  channel
      .def(
          "send_frame",
          [](ipc::Channel& self, const Frame& frame) {
            py::gil_scoped_release unlocked;
            unwrap(self.send(frame));
          },
          py::arg("frame"))
      .def(
          "receive_frame",
          [](ipc::Channel& self, py::object timeout) {
            const auto wait = to_timeout(timeout);
            py::gil_scoped_release unlocked;
            return unwrap(self.receive_frame(wait));
          },
          py::arg("timeout") = py::none());
}

}  // namespace memhal::python
