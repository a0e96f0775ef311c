// memhal.V4l2Camera: V4L2 capture whose frames are the driver's buffers (no copy), iterable;
// the GIL is released while a frame is awaited. memhal.list_cameras() describes every device.
#include <pybind11/stl.h>

#include <memhal/pixel_format.hpp>
#include <memhal/v4l2_camera.hpp>

#include "py_common.hpp"

namespace memhal::python {
namespace {

CameraIo to_io(py::handle value) {
  const auto text = to_text(value, "io");
  if (auto io = camera_io_from_string(text)) return *io;
  raise(ErrorCode::InvalidArgument, "io: expected 'auto', 'mmap' or 'dmabuf-import', got '" + text + "'");
}

uint32_t to_fourcc(py::handle value) {
  if (value.is_none()) return 0;
  const auto text = to_text(value, "fourcc");
  if (text.size() != 4) raise(ErrorCode::InvalidArgument, "fourcc: expected four characters, got '" + text + "'");
  return fourcc(text[0], text[1], text[2], text[3]);
}

py::dict format_dict(const CameraFormat& format) {
  py::dict d;
  d["fourcc"] = fourcc_to_string(format.fourcc);
  d["format"] = format.format ? py::cast(*format.format) : py::none();
  d["multi_buffer"] = format.multi_buffer;
  d["description"] = format.description;
  d["stepwise"] = format.stepwise;
  py::list sizes;
  for (const auto& size : format.sizes) sizes.append(py::make_tuple(size.width, size.height, size.fps));
  d["sizes"] = sizes;
  return d;
}

py::dict info_dict(const CameraInfo& info) {
  py::dict d;
  d["path"] = info.path;
  d["driver"] = info.driver;
  d["card"] = info.card;
  d["bus"] = info.bus;
  d["multi_planar"] = info.multi_planar;
  py::list formats;
  for (const auto& format : info.formats) formats.append(format_dict(format));
  d["formats"] = formats;
  return d;
}

}  // namespace

void bind_camera(py::module_& m) {
  m.def(
      "list_cameras",
      [] {
        py::list cameras;
        for (const auto& info : V4l2Camera::list()) cameras.append(info_dict(info));
        return cameras;
      },
      "Every V4L2 video capture device: dicts with path, driver, card, bus, multi_planar and formats "
      "(fourcc, format or None, description, sizes as (width, height, [fps...])).");
  py::class_<V4l2Camera>(m, "V4l2Camera",
                         "A V4L2 capture device. Frames are the driver's buffers (no copy); a buffer goes back to "
                         "the driver when the last frame, tensor, view and numpy array over it is gone. Iterating "
                         "yields frames (waiting up to `timeout` seconds each) until the device goes away.")
      .def(py::init([](const std::string& path, uint32_t width, uint32_t height, py::object format,
                       py::object fourcc_text, double fps, uint32_t buffers, py::object io) {
             CameraOptions options;
             options.width = width;
             options.height = height;
             options.format = to_optional_vocabulary<PixelFormat>(format, "format");
             options.fourcc = to_fourcc(fourcc_text);
             options.fps = fps;
             options.buffers = buffers;
             options.io = to_io(io);
             py::gil_scoped_release unlocked;
             return unwrap(V4l2Camera::open(path, options));
           }),
           py::arg("path"), py::arg("width") = 0, py::arg("height") = 0, py::arg("format") = py::none(),
           py::arg("fourcc") = py::none(), py::arg("fps") = 0.0, py::arg("buffers") = 4, py::arg("io") = "auto")
      .def(
          "next_frame",
          [](V4l2Camera& self, py::object timeout) {
            const auto wait = to_timeout(timeout).value_or(std::chrono::milliseconds::max());
            py::gil_scoped_release unlocked;
            return unwrap(self.next_frame(wait));
          },
          py::arg("timeout") = 2.0,
          "The next frame; BusyError when consumers hold every buffer or none came in `timeout` seconds, "
          "UnavailableError when the device went away.")
      .def(
          "__iter__", [](py::object self) { return self; }, "The camera itself.")
      .def(
          "__next__",
          [](V4l2Camera& self) {
            Result<Frame> frame = [&] {
              py::gil_scoped_release unlocked;
              return self.next_frame(std::chrono::seconds(2));
            }();
            if (!frame && frame.error().code() == ErrorCode::Unavailable) throw py::stop_iteration();
            return unwrap(std::move(frame));
          },
          "The next frame (waiting up to 2 s); StopIteration when the device went away.")
      .def_property_readonly(
          "path", [](const V4l2Camera& c) { return c.config().path; }, "The device path.")
      .def_property_readonly(
          "width", [](const V4l2Camera& c) { return c.config().width; }, "Frame width the driver chose.")
      .def_property_readonly(
          "height", [](const V4l2Camera& c) { return c.config().height; }, "Frame height the driver chose.")
      .def_property_readonly(
          "format", [](const V4l2Camera& c) { return c.config().format; },
          "The PixelFormat of the frames (None for a fourcc memhal has no format for).")
      .def_property_readonly(
          "fourcc", [](const V4l2Camera& c) { return fourcc_to_string(c.config().fourcc); }, "The V4L2 fourcc.")
      .def_property_readonly(
          "fps", [](const V4l2Camera& c) { return c.config().fps; }, "Frames per second the driver chose.")
      .def_property_readonly(
          "buffers", [](const V4l2Camera& c) { return c.config().buffers; }, "Driver buffers in the ring.")
      .def_property_readonly(
          "io", [](const V4l2Camera& c) { return std::string(to_string(c.config().io)); },
          "How buffers are shared: 'mmap' or 'dmabuf-import'.")
      .def_property_readonly(
          "io_notes", [](const V4l2Camera& c) { return c.config().io_notes; }, "Why io is what it is.")
      .def_property_readonly(
          "multi_planar", [](const V4l2Camera& c) { return c.config().multi_planar; },
          "Whether the device uses the multi-planar V4L2 API.")
      .def(
          "stats",
          [](const V4l2Camera& c) {
            const auto s = c.stats();
            py::dict d;
            d["frames"] = s.frames;
            d["dropped"] = s.dropped;
            d["errors"] = s.errors;
            d["held"] = s.held;
            d["queued"] = s.queued;
            return d;
          },
          "Counters: frames, dropped (gaps in the driver's sequence), errors, held, queued.")
      .def("__repr__", [](const V4l2Camera& c) {
        return "memhal.V4l2Camera(path=" + std::string(py::repr(py::str(c.config().path))) +
               ", width=" + std::to_string(c.config().width) + ", height=" + std::to_string(c.config().height) +
               ", fourcc=" + fourcc_to_string(c.config().fourcc) + ", io=" + std::string(to_string(c.config().io)) +
               ")";
      });
}

}  // namespace memhal::python
