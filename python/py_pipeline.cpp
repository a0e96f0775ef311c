// ImageProcessor, ipc Channel/Listener, Recorder/Replayer. Every call that converts pixels,
// waits on a socket or touches a file releases the GIL, so other Python threads run meanwhile.
#include <pybind11/stl.h>

#include <memhal/channel.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/recording.hpp>

#include <sys/socket.h>

#include <chrono>
#include <cmath>

#include "py_common.hpp"

namespace memhal::python {
namespace {

// The items of a sequence (not a str); InvalidArgumentError naming `what` otherwise.
std::vector<py::handle> items_of(py::handle value, const std::string& what) {
  if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value))
    raise(ErrorCode::InvalidArgument, what + ": expected a sequence, got " + type_name(value));
  std::vector<py::handle> items;
  for (auto item : value) items.push_back(item);
  return items;
}

// A number for a float option: an int or a float (numpy scalars too), never a bool or a str.
float to_float(py::handle value, const std::string& what) {
  const bool numeric =
      PyFloat_Check(value.ptr()) != 0 || PyIndex_Check(value.ptr()) != 0 || py::hasattr(value, "__float__");
  if (py::isinstance<py::bool_>(value) || !numeric)
    raise(ErrorCode::InvalidArgument, what + ": expected a number, got " + type_name(value));
  const double number = PyFloat_AsDouble(value.ptr());
  if (number == -1.0 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  return static_cast<float>(number);
}

// 1 to N values, the last repeated ("pad=(114,)" pads every channel with 114).
template <std::size_t N, class T, class Convert>
std::array<T, N> to_array(py::handle value, const char* what, std::array<T, N> fallback, Convert&& convert) {
  if (value.is_none()) return fallback;
  const auto items = items_of(value, what);
  if (items.empty() || items.size() > N)
    raise(ErrorCode::InvalidArgument,
          std::string(what) + ": expected 1 to " + std::to_string(N) + " values, got " + std::to_string(items.size()));
  std::array<T, N> out = fallback;
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t from = std::min(i, items.size() - 1);
    out[i] = convert(items[from], std::string(what) + "[" + std::to_string(from) + "]");
  }
  return out;
}

ConvertOptions convert_options(const py::kwargs& kw) {
  ConvertOptions o;
  static constexpr std::array<const char*, 12> kKnown{"crop",          "flip", "rotation", "resize",
                                                      "interpolation", "pad",  "matrix",   "range",
                                                      "mean",          "std",  "swap_rb",  "dst_format"};
  for (auto item : kw) {
    const auto key = item.first.cast<std::string>();
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end())
      raise(ErrorCode::InvalidArgument, "convert: unknown option '" + key + "'");
  }
  auto get = [&](const char* key) { return kw.contains(key) ? py::handle(kw[key]) : py::handle(Py_None); };
  if (!get("crop").is_none()) {
    const auto c = items_of(get("crop"), "crop");
    if (c.size() != 4)
      raise(ErrorCode::InvalidArgument,
            "crop: expected 4 values (x, y, width, height), got " + std::to_string(c.size()));
    o.crop = Rect{to_int64(c[0], "crop x"), to_int64(c[1], "crop y"), to_int64(c[2], "crop width"),
                  to_int64(c[3], "crop height")};
  }
  if (!get("flip").is_none()) o.flip = to_vocabulary<Flip>(get("flip"), "flip");
  if (!get("rotation").is_none()) {
    // An int is clockwise degrees (any multiple of 90), as it always was; a Rotation member
    // or its wire string or alias ('cw90', '90') goes through the table.
    const py::handle rotation = get("rotation");
    if (enum_value<Rotation>(rotation) || py::isinstance<py::str>(rotation)) {
      o.rotation = to_vocabulary<Rotation>(rotation, "rotation");
    } else {
      const int64_t degrees = to_int64(rotation, "rotation");
      if (degrees % 90 != 0)
        raise(ErrorCode::InvalidArgument,
              "rotation: " + std::to_string(degrees) + " is not a multiple of 90 degrees clockwise");
      o.rotation = all<Rotation>()[static_cast<std::size_t>(((degrees % 360) + 360) % 360 / 90)];
    }
  }
  if (!get("resize").is_none()) o.resize = to_vocabulary<ResizeMode>(get("resize"), "resize");
  if (!get("interpolation").is_none())
    o.interpolation = to_vocabulary<Interpolation>(get("interpolation"), "interpolation");
  o.pad = to_array<4, uint8_t>(get("pad"), "pad", o.pad, [](py::handle v, const std::string& what) {
    return static_cast<uint8_t>(to_int_in(v, what, 0, 255));
  });
  if (!get("matrix").is_none()) o.matrix = to_vocabulary<ColorMatrix>(get("matrix"), "matrix");
  if (!get("range").is_none()) o.range = to_vocabulary<ColorRange>(get("range"), "range");
  o.mean = to_array<4, float>(get("mean"), "mean", o.mean, to_float);
  o.std = to_array<4, float>(get("std"), "std", o.std, to_float);
  if (!get("swap_rb").is_none()) o.swap_rb = get("swap_rb").cast<bool>();
  o.dst_format = to_optional_vocabulary<PixelFormat>(get("dst_format"), "dst_format");
  return o;
}

void bind_image_processor(py::module_& m) {
  py::class_<ImageProcessor>(m, "ImageProcessor",
                             "Format conversion, resize, crop, flip, rotate, letterbox, normalise.")
      .def(py::init([](unsigned threads, py::object backend) {
             const auto pinned = to_optional_vocabulary<ImageBackend>(backend, "backend");
             return unwrap(ImageProcessor::create({.threads = threads, .backend = pinned}));
           }),
           py::arg("threads") = 0, py::arg("backend") = py::none(),
           "backend: None (GL on a hardware GPU, else the CPU; MEMHAL_BACKEND pins it), or an ImageBackend: "
           "ImageBackend.GL, 'gl', 'cpu'.")
      .def_property_readonly("threads", &ImageProcessor::threads, "Worker threads of the CPU backend.")
      .def_property_readonly(
          "backend", [](const ImageProcessor& self) { return self.backend(); },
          "The ImageBackend where conversions run (equal to its wire string, 'cpu' or 'gl').")
      .def_property_readonly("backend_notes", &ImageProcessor::backend_notes,
                             "Why auto-selection did not choose GL; empty when it did or the backend was pinned.")
      .def_property_readonly(
          "stats",
          [](const ImageProcessor& self) {
            const ImageProcessorStats s = self.stats();
            py::dict d;
            d["gl_calls"] = s.gl_calls;
            d["cpu_calls"] = s.cpu_calls;
            d["fallbacks"] = s.fallbacks;
            d["last_fallback"] = s.last_fallback;
            d["dma_buf_imports"] = s.dma_buf_imports;
            d["dma_buf_import_note"] = s.dma_buf_import_note;
            return d;
          },
          "Conversions per backend, CPU fallbacks of a GL processor and why, DMA-BUF imports.")
      .def_property_readonly(
          "gl_renderer",
          [](const ImageProcessor& self) -> py::object {
            const GlDriverInfo* driver = self.gl_driver();
            if (driver == nullptr) return py::none();
            return py::str(driver->renderer);
          },
          "The GL renderer of a GL processor, else None.")
      .def(
          "convert",
          [](ImageProcessor& self, const Tensor& src, Tensor& dst, const py::kwargs& kw) {
            const ConvertOptions options = convert_options(kw);
            py::gil_scoped_release unlocked;
            unwrap(self.convert(src, dst, options));
          },
          py::arg("src"), py::arg("dst"),
          "Writes dst from src (the GIL is released). Options: crop=(x, y, w, h); flip, resize, interpolation, "
          "matrix, range: a member of Flip, ResizeMode, Interpolation, ColorMatrix, ColorRange, or its wire "
          "string or alias (flip='horizontal' or 'h', resize='letterbox', interpolation='area', matrix='bt709', "
          "range='full'); rotation: clockwise degrees (90), a Rotation or its wire string ('cw90'); "
          "pad=(r, g, b, a), mean=, std=, swap_rb=, dst_format=.")
      .def(
          "convert_batch",
          [](ImageProcessor& self, const std::vector<Tensor>& srcs, Tensor& dst, const py::kwargs& kw) {
            const ConvertOptions options = convert_options(kw);
            py::gil_scoped_release unlocked;
            unwrap(self.convert_batch(srcs, dst, options));
          },
          py::arg("srcs"), py::arg("dst"),
          "Fills the batch dst ({N, C, H, W} or {N, H, W, C}, N = len(srcs)) from frames of any sizes and "
          "formats in one call (the GIL is released); options as convert. Nothing is written when a frame is "
          "refused.")
      .def(
          "create_image",
          [](const ImageProcessor& self, int64_t w, int64_t h, py::object format, py::object dtype, py::object memory) {
            return unwrap(self.create_image(w, h, to_vocabulary<PixelFormat>(format, "create_image"),
                                            to_vocabulary<DType>(dtype, "create_image"),
                                            to_optional_vocabulary<MemoryKind>(memory, "create_image")));
          },
          py::arg("width"), py::arg("height"), py::arg("format"), py::arg("dtype") = "u8",
          py::arg("memory") = py::none(),
          "An image where this processor works best (memory=None), or in the kind given ('pbo' needs a GL processor).")
      .def("__repr__", [](const ImageProcessor& self) {
        return "memhal.ImageProcessor(backend=" + std::string(to_string(self.backend())) +
               ", threads=" + std::to_string(self.threads()) + ")";
      });
}

// Wakes the calls still blocked on `fd` (receive, accept) before the object is dropped: they
// return at once (Unavailable / an error) and their lease lets the object go.
void wake_blocked(int in_flight, int fd) {
  if (in_flight > 0) ::shutdown(fd, SHUT_RDWR);
}

// `closed`, and the context manager whose exit calls the class's close(), for a Closable.
template <class C>
py::class_<C> with_close_protocol(py::class_<C> cls, const char* enter_doc, const char* exit_doc) {
  cls.def_property_readonly(
         "closed", [](const C& self) { return !self.object; }, "Whether close() was called.")
      .def(
          "__enter__", [](py::object self) { return self; }, enter_doc)
      .def(
          "__exit__", [](py::object self, py::handle, py::handle, py::handle) { self.attr("close")(); },
          py::arg("exc_type"), py::arg("exc_value"), py::arg("traceback"), exit_doc);
  return cls;
}

std::string channel_repr(const PyChannel& self) {
  if (!self.object) return "memhal.Channel(closed)";
  return "memhal.Channel(fd=" + std::to_string(self.object->fd()) +
         ", bytes_sent=" + std::to_string(self.object->bytes_sent()) +
         ", bytes_received=" + std::to_string(self.object->bytes_received()) + ")";
}

PyChannel wrap(ipc::Channel channel) {
  return PyChannel{std::make_shared<ipc::Channel>(std::move(channel))};
}

void bind_channel(py::module_& m) {
  using ipc::Channel;
  using ipc::Listener;
  with_close_protocol(
      py::class_<PyChannel>(m, "Channel",
                            "Tensors and frames between processes over a Unix socket: descriptor plus fds, no bytes "
                            "copied. close() (or leaving a with block) closes the socket; calls blocked in receive "
                            "on other threads then return."),
      "Returns the channel.", "Closes the channel.")
      .def_static(
          "pair",
          [] {
            auto ends = unwrap(Channel::pair());
            return py::make_tuple(wrap(std::move(ends.first)), wrap(std::move(ends.second)));
          },
          "Two connected channels (socketpair).")
      .def_static(
          "connect",
          [](const std::string& path) {
            auto channel = [&] {
              py::gil_scoped_release unlocked;
              return unwrap(Channel::connect(path));
            }();
            return wrap(std::move(channel));
          },
          py::arg("path"), "Connects to a Listener bound at path; UnavailableError when nobody listens there.")
      .def_static(
          "adopt", [](int fd) { return wrap(unwrap(Channel::adopt(UniqueFd(fd)))); }, py::arg("fd"),
          "A channel over a connected Unix socket; the channel owns (and closes) fd.")
      .def(
          "send",
          [](PyChannel& self, const Tensor& t) {
            auto channel = self.use("Channel.send");
            py::gil_scoped_release unlocked;
            unwrap(channel->send(t));
          },
          py::arg("tensor"), "Sends a shm/dmabuf tensor's descriptor and fds (no bytes copied); mem is refused.")
      .def(
          "receive",
          [](PyChannel& self, py::object timeout) {
            const auto wait = to_timeout(timeout);
            auto channel = self.use("Channel.receive");
            py::gil_scoped_release unlocked;
            return unwrap(channel->receive(wait));
          },
          py::arg("timeout") = py::none(), "The next tensor; timeout in seconds (None or inf: forever; 0: no wait).")
      .def(
          "fileno", [](PyChannel& self) { return self.use("Channel.fileno")->fd(); },
          "The socket's fd, still owned by the channel.")
      .def(
          "close",
          [](PyChannel& self) {
            if (self.object) wake_blocked(self.in_flight, self.object->fd());
            self.object.reset();
          },
          "Closes the socket (the peer sees the end); shares still out stay valid. Idempotent.")
      .def_property(
          "buffer_registry", [](PyChannel& self) { return self.use("Channel.buffer_registry")->buffer_registry(); },
          [](PyChannel& self, bool on) { self.use("Channel.buffer_registry")->set_buffer_registry(on); },
          "Whether send registers each buffer once (default) or sends every tensor in full.")
      .def_property_readonly(
          "bytes_sent", [](PyChannel& self) { return self.use("Channel.bytes_sent")->bytes_sent(); },
          "Bytes of messages this end has written.")
      .def_property_readonly(
          "bytes_received", [](PyChannel& self) { return self.use("Channel.bytes_received")->bytes_received(); },
          "Bytes of messages this end has read.")
      .def("__repr__", &channel_repr);
  with_close_protocol(
      py::class_<PyListener>(m, "Listener",
                             "A named Unix socket that Channel.connect reaches. close() (or leaving a with block) "
                             "removes it; an accept blocked on another thread then returns."),
      "Returns the listener.", "Closes the listener.")
      .def_static(
          "bind",
          [](const std::string& path) { return PyListener{std::make_shared<Listener>(unwrap(Listener::bind(path)))}; },
          py::arg("path"), "Binds and listens on path (which must not exist; at most 107 bytes).")
      .def(
          "accept",
          [](PyListener& self, py::object timeout) {
            const auto wait = to_timeout(timeout);
            auto listener = self.use("Listener.accept");
            auto channel = [&] {
              py::gil_scoped_release unlocked;
              return unwrap(listener->accept(wait));
            }();
            return wrap(std::move(channel));
          },
          py::arg("timeout") = py::none(),
          "The next peer's Channel; timeout in seconds (None: forever; 0: no wait); BusyError when it passes.")
      .def(
          "fileno", [](PyListener& self) { return self.use("Listener.fileno")->fd(); },
          "The listening socket's fd, still owned by the listener.")
      .def(
          "close",
          [](PyListener& self) {
            if (self.object) wake_blocked(self.in_flight, self.object->fd());
            self.object.reset();
          },
          "Stops listening and removes the socket file. Idempotent.")
      .def("__repr__", [](const PyListener& self) {
        return self.object ? "memhal.Listener(fd=" + std::to_string(self.object->fd()) + ")"
                           : std::string("memhal.Listener(closed)");
      });
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return std::string(py::repr(to_tuple(shape)));
}

void bind_recording(py::module_& m) {
  py::class_<Record>(m, "Record", "One tensor read back from a recording.")
      .def_readonly("index", &Record::index, "Position in the file, from 0.")
      .def_readonly("timestamp_ns", &Record::timestamp_ns, "As given to the recorder.")
      .def_readonly("has_payload", &Record::has_payload,
                    "False for memory the recorder could not read (device memory): only the descriptor.")
      .def_property_readonly(
          "memory_name", [](const Record& r) { return r.descriptor.memory_name; },
          "The wire string of the memory the tensor was recorded from.")
      .def_property_readonly(
          "shape", [](const Record& r) { return to_tuple(r.descriptor.shape); }, "The recorded tensor's shape.")
      .def(
          "materialize",
          [](const Record& r, py::object memory) {
            const auto kind = to_optional_vocabulary<MemoryKind>(memory, "Record.materialize");
            py::gil_scoped_release unlocked;
            return unwrap(r.materialize(kind));
          },
          py::arg("memory") = py::none(),
          "A tensor with the recorded bytes, in memory when given, else the recorded kind when it can be "
          "allocated here, else by auto-selection.")
      .def("__repr__", [](const Record& r) {
        return "memhal.Record(index=" + std::to_string(r.index) + ", timestamp_ns=" + std::to_string(r.timestamp_ns) +
               ", shape=" + shape_text(r.descriptor.shape) + ", memory=" + r.descriptor.memory_name +
               (r.has_payload ? "" : ", no payload") + ")";
      });
  with_close_protocol(
      py::class_<PyRecorder>(m, "Recorder",
                             "Writes tensors and frames (descriptor + bytes) to a checksummed file; a context manager "
                             "that closes it."),
      "Returns the recorder.", "Closes the recorder.")
      .def(py::init([](const std::string& path) {
             py::gil_scoped_release unlocked;
             return PyRecorder{std::make_shared<Recorder>(unwrap(Recorder::create(path)))};
           }),
           py::arg("path"), "Creates (or truncates) path and writes the file header.")
      .def(
          "write",
          [](PyRecorder& self, py::object item, int64_t timestamp_ns) {
            auto recorder = self.use("Recorder.write");
            if (py::isinstance<Frame>(item)) {
              const Frame& frame = item.cast<const Frame&>();
              py::gil_scoped_release unlocked;
              unwrap(recorder->write(frame, timestamp_ns));
              return;
            }
            const Tensor& tensor = item.cast<const Tensor&>();
            py::gil_scoped_release unlocked;
            unwrap(recorder->write(tensor, timestamp_ns));
          },
          py::arg("tensor"), py::arg("timestamp_ns") = 0,
          "Appends a Tensor (or a Frame, with its timing and sequence): its bytes when the CPU can map it, else "
          "its descriptor alone.")
      .def_property_readonly(
          "records_written", [](PyRecorder& self) { return self.use("Recorder.records_written")->records_written(); },
          "How many records this recorder wrote.")
      .def(
          "close", [](PyRecorder& self) { self.object.reset(); }, "Closes the file. Idempotent.")
      .def("__repr__", [](const PyRecorder& self) {
        return self.object ? "memhal.Recorder(records_written=" + std::to_string(self.object->records_written()) + ")"
                           : std::string("memhal.Recorder(closed)");
      });
  with_close_protocol(
      py::class_<PyReplayer>(m, "Replayer",
                             "Reads a recording back: iterate it for Records (CorruptError, naming the record, for a "
                             "damaged one); a context manager that closes it."),
      "Returns the replayer.", "Closes the replayer.")
      .def(py::init([](const std::string& path) {
             py::gil_scoped_release unlocked;
             return PyReplayer{std::make_shared<Replayer>(unwrap(Replayer::open(path)))};
           }),
           py::arg("path"), "Opens path and checks its header.")
      .def(
          "next",
          [](PyReplayer& self) {
            auto replayer = self.use("Replayer.next");
            py::gil_scoped_release unlocked;
            return unwrap(replayer->next());
          },
          "The next Record, or None at the clean end of the file.")
      .def(
          "__iter__", [](py::object self) { return self; }, "The replayer itself.")
      .def(
          "__next__",
          [](PyReplayer& self) {
            auto replayer = self.use("Replayer.__next__");
            std::optional<Record> record;
            {
              py::gil_scoped_release unlocked;
              record = unwrap(replayer->next());
            }
            if (!record) throw py::stop_iteration();
            return std::move(*record);
          },
          "The next Record; StopIteration at the end.")
      .def(
          "close", [](PyReplayer& self) { self.object.reset(); }, "Closes the file. Idempotent.")
      .def("__repr__", [](const PyReplayer& self) {
        return std::string(self.object ? "memhal.Replayer(open)" : "memhal.Replayer(closed)");
      });
}

}  // namespace

void bind_pipeline(py::module_& m) {
  bind_image_processor(m);
  bind_channel(m);
  bind_recording(m);
}

}  // namespace memhal::python
