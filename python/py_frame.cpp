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
      .def_property_readonly(
          "domain", [](const Frame& f) { return f.payload.kind(); }, "The MemoryDomainKind of the payload.")
      .def_readwrite("sequence", &Frame::sequence, "Position in its stream, assigned by the producer.")
      .def_property(
          "pts", [](const Frame& f) { return f.timing.pts; },
          [](Frame& f, std::optional<int64_t> v) { f.timing.pts = v; }, "Presentation time in ns, or None.")
      .def_property(
          "duration", [](const Frame& f) { return f.timing.duration; },
          [](Frame& f, std::optional<int64_t> v) { f.timing.duration = v; }, "Duration in ns, or None.")
      .def(
          "to_tensor", [](const Frame& f) { return unwrap(f.payload.to_tensor()); },
          "The payload as a tensor, without copying; UnimplementedError for domains no tensor can hold.")
      .def(
          "share", [](const Frame& f) { return unwrap(f.share()); },
          "The same frame for another consumer: a reference-count bump of the payload.")
      .def("make_shareable", &Frame::make_shareable,
           "Makes later shares reference-count bumps even for owned system bytes (no copy, ever).")
      .def("__repr__", [](const Frame& f) {
        auto optional = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("None"); };
        return "memhal.Frame(sequence=" + std::to_string(f.sequence) +
               ", domain=" + std::string(to_string(f.payload.kind())) + ", pts=" + optional(f.timing.pts) +
               ", duration=" + optional(f.timing.duration) + ")";
      });
  py::class_<Tee>(m, "Tee", "Fans a frame out to N branches with zero byte copies.")
      .def(py::init([](std::size_t branches) { return unwrap(Tee::create(branches)); }), py::arg("branches"),
           "A tee with `branches` outputs (InvalidArgumentError for 0).")
      .def_property_readonly("branches", &Tee::branches, "How many frames push returns.")
      .def("__repr__", [](const Tee& t) { return "memhal.Tee(branches=" + std::to_string(t.branches()) + ")"; })
      .def(
          "push",
          [](const Tee& tee, Frame& frame) {
            // The Python frame stays usable: the tee gets a share of it, not the object itself.
            frame.make_shareable();
            return unwrap(tee.push(unwrap(frame.share())));
          },
          py::arg("frame"),
          "One frame per branch sharing frame's payload (no byte copied; a branch that writes gets its own copy). "
          "The frame passed in stays usable.");
  auto channel_class = py::reinterpret_borrow<py::class_<PyChannel>>(m.attr("Channel"));
  channel_class
      .def(
          "send_frame",
          [](PyChannel& self, const Frame& frame) {
            auto channel = self.use("Channel.send_frame");
            py::gil_scoped_release unlocked;
            unwrap(channel->send(frame));
          },
          py::arg("frame"), "Sends a frame: its payload as send does, with its timing, sequence and metadata.")
      .def(
          "receive_frame",
          [](PyChannel& self, py::object timeout) {
            const auto wait = to_timeout(timeout);
            auto channel = self.use("Channel.receive_frame");
            py::gil_scoped_release unlocked;
            return unwrap(channel->receive_frame(wait));
          },
          py::arg("timeout") = py::none(), "The next frame; timeout as receive; ProtocolError for a bare tensor.");
}

}  // namespace memhal::python
