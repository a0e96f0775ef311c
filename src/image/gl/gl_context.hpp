// The GL backend's context: a headless EGL display and a GLES 3 context that is current on one
// thread the context owns. Every GL call runs on that thread (`run`), so the objects the
// backend hands out — processors, Pbo tensors and their maps — are usable from any thread.
#pragma once

#include <EGL/egl.h>
#include <GLES3/gl32.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memhal/error.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace memhal::detail::gl {

/// What the driver is, as `memhal info` shows it.
struct GlInfo {
  std::string platform;  ///< how the display was opened: "surfaceless", "device" or "default"
  std::string egl_version;
  std::string vendor;
  std::string renderer;
  std::string version;
  std::string glsl_version;
  int max_texture_size = 0;
  bool dma_buf_import = false;            ///< EGL_EXT_image_dma_buf_import
  bool dma_buf_import_modifiers = false;  ///< EGL_EXT_image_dma_buf_import_modifiers
  bool image_external = false;            ///< GL_OES_EGL_image_external(_essl3)
  bool float_render = false;              ///< GL_EXT_color_buffer_float
  bool robustness = false;                ///< GL_KHR_robustness / GL_EXT_robustness
  /// The EGL and GL extensions above that the driver advertises, by name.
  std::vector<std::string> extensions;
};

class GlContext {
 public:
  /// Opens a display with no window system (EGL_PLATFORM_SURFACELESS_MESA, else the first EGL
  /// device, else the default display with a 1x1 pbuffer), makes a GLES 3.x context current
  /// on a new thread, and reads what the driver is. `Unavailable` with the EGL call and error
  /// that refused ("eglInitialize: EGL_NOT_INITIALIZED") when there is no usable driver.
  static Result<std::shared_ptr<GlContext>> create();

  /// Stops the GL thread; the context and every GL object in it are destroyed.
  ~GlContext();
  GlContext(const GlContext&) = delete;
  GlContext& operator=(const GlContext&) = delete;

  const GlInfo& info() const noexcept { return info_; }
  /// This context's identity for the life of the process: ids are never reused, unlike the
  /// address of a destroyed context, so an object that names its context by id cannot be
  /// mistaken for one of a later context allocated at the same address.
  uint64_t id() const noexcept { return id_; }
  EGLDisplay display() const noexcept { return display_; }
  bool on_gl_thread() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }

  /// Runs `fn` on the GL thread with the context current and returns what it returns; called
  /// from the GL thread itself it runs `fn` directly. Thread-safe; calls are served in order.
  template <class F>
  std::invoke_result_t<F&> run(F&& fn);

  /// The GL context was reset (GL_KHR_robustness reported a reset). Once lost it stays lost.
  bool lost() const noexcept;
  /// Checks for a reset after GL work; on the GL thread only.
  Result<void> check_reset();

 private:
  GlContext();
  Result<void> make_current();
  void read_info(const char* egl_extensions);
  void post(std::function<void()> task);
  void loop();
  void release();

  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  EGLSurface surface_ = EGL_NO_SURFACE;
  GlInfo info_;
  const uint64_t id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::atomic<bool> lost_{false};
  GLenum (*reset_status_)() = nullptr;
  std::thread thread_;
};

template <class F>
std::invoke_result_t<F&> GlContext::run(F&& fn) {
  using R = std::invoke_result_t<F&>;
  if (on_gl_thread()) return fn();
  std::packaged_task<R()> task(std::ref(fn));
  std::future<R> done = task.get_future();
  post([&task] { task(); });
  return done.get();
}

/// Compiles and links a GLSL ES 3.00 program (the version line is added, `defines` goes before
/// the fragment body). On the GL thread. `Unavailable` with the info log, naming `name`.
Result<GLuint> build_program(const char* vertex_body, const char* defines, const char* fragment_body, const char* name);

/// The GL error flag as text ("GL_INVALID_OPERATION"), or "GL_NO_ERROR".
const char* gl_error_name(GLenum error) noexcept;
/// The EGL error as text ("EGL_BAD_ALLOC").
const char* egl_error_name(EGLint error) noexcept;

}  // namespace memhal::detail::gl
