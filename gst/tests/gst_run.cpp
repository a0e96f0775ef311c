// gst_run: runs a pipeline (gst-launch syntax) to EOS, then prints properties of its
// elements; the gst tests' driver for what gst-launch-1.0 cannot report.
// Usage: gst_run [--timeout S] [--thread-cpu ELEMENT] [--wait-for PATH] "<pipeline>" [element.property ...]
// SIGTERM/SIGINT send EOS (the properties are then printed as at the end of the stream).
// --thread-cpu ELEMENT: prints ELEMENT.thread_cpu_us=MEDIAN frames=N at the end: the CPU time the
// streaming thread feeding ELEMENT's sink pad spent from one buffer to the next, median over the
// stream (a median, because an emulated guest's CPU clock also runs while the host steals time).
// --wait-for PATH: starts the pipeline only once PATH exists (a producer's socket), up to 30 s.
// Exit: 0 at EOS, 1 after an ERROR message (printed to stderr), 2 on timeout, 3 bad pipeline.
#include <gst/gst.h>

#include <csignal>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {
volatile std::sig_atomic_t stop_requested = 0;
void request_stop(int) {
  stop_requested = 1;
}
// Thread CPU at each buffer reaching a pad; read after the pipeline has stopped.
struct ThreadCpu {
  std::vector<double> deltas_us;
  double last_us = -1;
};

GstPadProbeReturn on_buffer(GstPad*, GstPadProbeInfo*, gpointer data) {
  auto* cpu = static_cast<ThreadCpu*>(data);
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  const double us = static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
  if (cpu->last_us >= 0) cpu->deltas_us.push_back(us - cpu->last_us);
  cpu->last_us = us;
  return GST_PAD_PROBE_OK;
}
}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  int arg = 1;
  double timeout_s = 60;
  const char* thread_cpu = nullptr;
  for (;;) {
    if (arg + 1 < argc && std::strcmp(argv[arg], "--timeout") == 0) {
      timeout_s = std::atof(argv[arg + 1]);
      arg += 2;
    } else if (arg + 1 < argc && std::strcmp(argv[arg], "--thread-cpu") == 0) {
      thread_cpu = argv[arg + 1];
      arg += 2;
    } else if (arg + 1 < argc && std::strcmp(argv[arg], "--wait-for") == 0) {
      for (int tries = 0; tries < 600 && !g_file_test(argv[arg + 1], G_FILE_TEST_EXISTS); ++tries) g_usleep(50000);
      arg += 2;
    } else {
      break;
    }
  }
  if (arg >= argc) {
    std::fprintf(
        stderr,
        "usage: gst_run [--timeout S] [--thread-cpu ELEMENT] [--wait-for PATH] PIPELINE [element.property ...]\n");
    return 3;
  }
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(argv[arg], &error);
  if (pipeline == nullptr || error != nullptr) {
    std::fprintf(stderr, "gst_run: bad pipeline: %s\n", error != nullptr ? error->message : "?");
    if (error != nullptr) g_error_free(error);
    if (pipeline != nullptr) gst_object_unref(pipeline);
    return 3;
  }
  ThreadCpu cpu;
  if (thread_cpu != nullptr) {
    GstElement* element = gst_bin_get_by_name(GST_BIN(pipeline), thread_cpu);
    GstPad* pad = element != nullptr ? gst_element_get_static_pad(element, "sink") : nullptr;
    if (pad == nullptr) {
      std::fprintf(stderr, "gst_run: no element %s with a sink pad\n", thread_cpu);
      if (element != nullptr) gst_object_unref(element);
      gst_object_unref(pipeline);
      return 3;
    }
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &cpu, nullptr);
    gst_object_unref(pad);
    gst_object_unref(element);
  }
  int rc = 2;
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) rc = 1;
  GstBus* bus = gst_element_get_bus(pipeline);
  const auto types = static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  std::signal(SIGTERM, request_stop);
  std::signal(SIGINT, request_stop);
  GstMessage* message = nullptr;
  bool eos_sent = false;
  for (double waited = 0; message == nullptr && waited < timeout_s; waited += 0.1) {
    if (stop_requested != 0 && !eos_sent) {
      gst_element_send_event(pipeline, gst_event_new_eos());
      eos_sent = true;
    }
    message = gst_bus_timed_pop_filtered(bus, GST_SECOND / 10, types);
  }
  if (message == nullptr) {
    std::fprintf(stderr, "gst_run: no EOS or ERROR within %.1f s\n", timeout_s);
  } else if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS) {
    rc = 0;
  } else {
    GError* err = nullptr;
    gchar* debug = nullptr;
    gst_message_parse_error(message, &err, &debug);
    std::fprintf(stderr, "ERROR from %s: %s\n%s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(message)), err->message,
                 debug != nullptr ? debug : "");
    g_error_free(err);
    g_free(debug);
    rc = 1;
  }
  if (message != nullptr) gst_message_unref(message);
  for (int i = arg + 1; i < argc; ++i) {
    const std::string spec = argv[i];
    const auto dot = spec.find('.');
    GstElement* element = gst_bin_get_by_name(GST_BIN(pipeline), spec.substr(0, dot).c_str());
    if (element == nullptr || dot == std::string::npos) {
      std::fprintf(stderr, "gst_run: no element for %s\n", spec.c_str());
      rc = rc == 0 ? 3 : rc;
      continue;
    }
    GValue value = G_VALUE_INIT;
    g_object_get_property(G_OBJECT(element), spec.substr(dot + 1).c_str(), &value);
    gchar* text = g_strdup_value_contents(&value);
    std::printf("%s=%s\n", spec.c_str(), text);
    g_free(text);
    g_value_unset(&value);
    gst_object_unref(element);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  if (thread_cpu != nullptr) {
    auto& d = cpu.deltas_us;
    std::sort(d.begin(), d.end());
    std::printf("%s.thread_cpu_us=%.1f frames=%zu\n", thread_cpu, d.empty() ? 0.0 : d[d.size() / 2], d.size() + 1);
  }
  return rc;
}
