// Headless EGL + GLES 3 on a thread of its own. The display is opened without a window system
// (Mesa's surfaceless platform, an EGL device, or the default display with a pbuffer), so it
// works on a server with no X or Wayland, on llvmpipe in CI and on real GPUs alike.
#include "image/gl/gl_context.hpp"

#include <EGL/eglext.h>
#include <GLES2/gl2ext.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "core/strings.hpp"

namespace memhal::detail::gl {
namespace {

bool has_extension(const char* list, std::string_view name) {
  if (list == nullptr) return false;
  std::string_view rest(list);
  while (!rest.empty()) {
    const auto end = rest.find(' ');
    if (rest.substr(0, end) == name) return true;
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return false;
}

Error egl_failure(const char* call) {
  return Error(ErrorCode::Unavailable, cat("GL backend: ", call, " failed: ", egl_error_name(eglGetError())));
}

template <class Fn>
Fn egl_proc(const char* name) {
  return reinterpret_cast<Fn>(eglGetProcAddress(name));
}

struct OpenedDisplay {
  EGLDisplay display = EGL_NO_DISPLAY;
  const char* platform = "";
};

// The first platform with no window system that initialises; the reasons of the others are
// joined into the error when none does.
Result<OpenedDisplay> open_display() {
  const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  auto get_platform_display = egl_proc<PFNEGLGETPLATFORMDISPLAYEXTPROC>("eglGetPlatformDisplayEXT");
  std::string tried;
  auto initialise = [&](EGLDisplay display, const char* platform) -> bool {
    EGLint major = 0;
    EGLint minor = 0;
    if (display != EGL_NO_DISPLAY && eglInitialize(display, &major, &minor) == EGL_TRUE) return true;
    tried += cat(tried.empty() ? "" : "; ", platform, ": ",
                 display == EGL_NO_DISPLAY ? "no display" : cat("eglInitialize ", egl_error_name(eglGetError())));
    return false;
  };
  if (get_platform_display != nullptr && has_extension(client, "EGL_MESA_platform_surfaceless")) {
    EGLDisplay display = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    if (initialise(display, "surfaceless")) return OpenedDisplay{display, "surfaceless"};
  }
  auto query_devices = egl_proc<PFNEGLQUERYDEVICESEXTPROC>("eglQueryDevicesEXT");
  if (get_platform_display != nullptr && query_devices != nullptr && has_extension(client, "EGL_EXT_platform_device")) {
    EGLDeviceEXT device = nullptr;
    EGLint count = 0;
    if (query_devices(1, &device, &count) == EGL_TRUE && count > 0) {
      EGLDisplay display = get_platform_display(EGL_PLATFORM_DEVICE_EXT, device, nullptr);
      if (initialise(display, "device")) return OpenedDisplay{display, "device"};
    } else {
      tried += cat(tried.empty() ? "" : "; ", "device: no EGL device");
    }
  }
  EGLDisplay display = eglGetDisplay(EGL_DEFAULT_DISPLAY);
  if (initialise(display, "default display")) return OpenedDisplay{display, "default"};
  return fail(ErrorCode::Unavailable, "GL backend: no EGL display without a window system (", tried,
              "); no EGL driver answered: install Mesa's (libegl-mesa0) or the GPU vendor's");
}

// Compiles `body` after the version line and `defines`.
Result<GLuint> compile(GLenum type, const char* defines, const char* body, const char* name) {
  const GLuint shader = glCreateShader(type);
  if (shader == 0) {
    return fail(ErrorCode::Unavailable, "GL backend: glCreateShader (", name,
                ") failed: ", gl_error_name(glGetError()));
  }
  const char* parts[] = {"#version 300 es\n", defines, body};
  glShaderSource(shader, 3, parts, nullptr);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok == GL_TRUE) return shader;
  GLint length = 0;
  glGetShaderiv(shader, GL_INFO_LOG_LENGTH, &length);
  std::string log(static_cast<std::size_t>(std::max(length, 1)), '\0');
  glGetShaderInfoLog(shader, length, nullptr, log.data());
  glDeleteShader(shader);
  return fail(ErrorCode::Unavailable, "GL backend: the ", name, " shader does not compile: ", log.c_str());
}

}  // namespace

Result<GLuint> build_program(const char* vertex_body, const char* defines, const char* fragment_body,
                             const char* name) {
  MEMHAL_ASSIGN_OR_RETURN(const GLuint vertex, compile(GL_VERTEX_SHADER, "", vertex_body, "vertex"));
  auto fragment = compile(GL_FRAGMENT_SHADER, defines, fragment_body, name);
  if (!fragment) {
    glDeleteShader(vertex);
    return unexpected(fragment.error());
  }
  const GLuint program = glCreateProgram();
  glAttachShader(program, vertex);
  glAttachShader(program, *fragment);
  glLinkProgram(program);
  // The program keeps what it linked; the shaders go once it does.
  glDeleteShader(vertex);
  glDeleteShader(*fragment);
  GLint ok = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (ok == GL_TRUE) return program;
  GLint length = 0;
  glGetProgramiv(program, GL_INFO_LOG_LENGTH, &length);
  std::string log(static_cast<std::size_t>(std::max(length, 1)), '\0');
  glGetProgramInfoLog(program, length, nullptr, log.data());
  glDeleteProgram(program);
  return fail(ErrorCode::Unavailable, "GL backend: the ", name, " program does not link: ", log.c_str());
}

const char* gl_error_name(GLenum error) noexcept {
  switch (error) {
    case GL_NO_ERROR: return "GL_NO_ERROR";
    case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
    case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
    case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
    case GL_INVALID_FRAMEBUFFER_OPERATION: return "GL_INVALID_FRAMEBUFFER_OPERATION";
    case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY";
    case GL_CONTEXT_LOST: return "GL_CONTEXT_LOST";
    default: return "unknown GL error";
  }
}

const char* egl_error_name(EGLint error) noexcept {
  switch (error) {
    case EGL_SUCCESS: return "EGL_SUCCESS";
    case EGL_NOT_INITIALIZED: return "EGL_NOT_INITIALIZED";
    case EGL_BAD_ACCESS: return "EGL_BAD_ACCESS";
    case EGL_BAD_ALLOC: return "EGL_BAD_ALLOC";
    case EGL_BAD_ATTRIBUTE: return "EGL_BAD_ATTRIBUTE";
    case EGL_BAD_CONTEXT: return "EGL_BAD_CONTEXT";
    case EGL_BAD_CONFIG: return "EGL_BAD_CONFIG";
    case EGL_BAD_CURRENT_SURFACE: return "EGL_BAD_CURRENT_SURFACE";
    case EGL_BAD_DISPLAY: return "EGL_BAD_DISPLAY";
    case EGL_BAD_SURFACE: return "EGL_BAD_SURFACE";
    case EGL_BAD_MATCH: return "EGL_BAD_MATCH";
    case EGL_BAD_PARAMETER: return "EGL_BAD_PARAMETER";
    case EGL_BAD_NATIVE_PIXMAP: return "EGL_BAD_NATIVE_PIXMAP";
    case EGL_BAD_NATIVE_WINDOW: return "EGL_BAD_NATIVE_WINDOW";
    case EGL_CONTEXT_LOST: return "EGL_CONTEXT_LOST";
    default: return "unknown EGL error";
  }
}

namespace {
// 64 bits: a new context every nanosecond would take centuries to wrap.
uint64_t next_context_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

GlContext::GlContext() : id_(next_context_id()) {}

Result<std::shared_ptr<GlContext>> GlContext::create() {
  std::shared_ptr<GlContext> context(new GlContext());
  std::promise<Result<void>> started;
  auto ready = started.get_future();
  GlContext* self = context.get();
  context->thread_ = std::thread([self, &started] {
    auto made = self->make_current();
    const bool ok = made.has_value();
    started.set_value(std::move(made));
    if (ok) self->loop();
    self->release();
  });
  auto made = ready.get();
  if (!made) {
    context->thread_.join();
    return unexpected(made.error());
  }
  return context;
}

Result<void> GlContext::make_current() {
  MEMHAL_ASSIGN_OR_RETURN(const OpenedDisplay opened, open_display());
  display_ = opened.display;
  info_.platform = opened.platform;
  info_.egl_version = eglQueryString(display_, EGL_VERSION);
  const char* egl_extensions = eglQueryString(display_, EGL_EXTENSIONS);
  if (eglBindAPI(EGL_OPENGL_ES_API) != EGL_TRUE) return unexpected(egl_failure("eglBindAPI(EGL_OPENGL_ES_API)"));
  const bool pbuffer = info_.platform == std::string_view("default");
  const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_SURFACE_TYPE,
                                   pbuffer ? EGL_PBUFFER_BIT : 0, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint configs = 0;
  if (eglChooseConfig(display_, config_attribs, &config, 1, &configs) != EGL_TRUE || configs == 0) {
    return fail(ErrorCode::Unavailable, "GL backend: the ", info_.platform,
                " EGL display has no OpenGL ES 3 config (eglChooseConfig: ", egl_error_name(eglGetError()), ")");
  }
  // Ask to be told of a GPU reset rather than crash on a lost context, where the driver can.
  const bool robust = has_extension(egl_extensions, "EGL_EXT_create_context_robustness");
  const EGLint robust_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_OPENGL_RESET_NOTIFICATION_STRATEGY_EXT,
                                   EGL_LOSE_CONTEXT_ON_RESET_EXT, EGL_NONE};
  const EGLint plain_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_NONE};
  context_ = robust ? eglCreateContext(display_, config, EGL_NO_CONTEXT, robust_attribs) : EGL_NO_CONTEXT;
  if (context_ == EGL_NO_CONTEXT) context_ = eglCreateContext(display_, config, EGL_NO_CONTEXT, plain_attribs);
  if (context_ == EGL_NO_CONTEXT) return unexpected(egl_failure("eglCreateContext(OpenGL ES 3)"));
  if (pbuffer) {
    const EGLint surface_attribs[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
    surface_ = eglCreatePbufferSurface(display_, config, surface_attribs);
    if (surface_ == EGL_NO_SURFACE) return unexpected(egl_failure("eglCreatePbufferSurface"));
  } else if (!has_extension(egl_extensions, "EGL_KHR_surfaceless_context")) {
    return fail(ErrorCode::Unavailable, "GL backend: the ", info_.platform,
                " EGL display lacks EGL_KHR_surfaceless_context");
  }
  if (eglMakeCurrent(display_, surface_, surface_, context_) != EGL_TRUE) {
    return unexpected(egl_failure("eglMakeCurrent"));
  }
  read_info(egl_extensions);
  return {};
}

void GlContext::read_info(const char* egl_extensions) {
  auto text = [](GLenum name) {
    const auto* s = reinterpret_cast<const char*>(glGetString(name));
    return std::string(s != nullptr ? s : "");
  };
  info_.vendor = text(GL_VENDOR);
  info_.renderer = text(GL_RENDERER);
  info_.version = text(GL_VERSION);
  info_.glsl_version = text(GL_SHADING_LANGUAGE_VERSION);
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &info_.max_texture_size);
  std::vector<std::string> gl_extensions;
  GLint count = 0;
  glGetIntegerv(GL_NUM_EXTENSIONS, &count);
  for (GLint i = 0; i < count; ++i) {
    const auto* name = reinterpret_cast<const char*>(glGetStringi(GL_EXTENSIONS, static_cast<GLuint>(i)));
    if (name != nullptr) gl_extensions.emplace_back(name);
  }
  auto gl_has = [&](std::string_view name) {
    return std::find(gl_extensions.begin(), gl_extensions.end(), name) != gl_extensions.end();
  };
  auto note = [&](bool present, const char* name) {
    if (present) info_.extensions.emplace_back(name);
    return present;
  };
  info_.dma_buf_import =
      note(has_extension(egl_extensions, "EGL_EXT_image_dma_buf_import"), "EGL_EXT_image_dma_buf_import");
  info_.dma_buf_import_modifiers = note(has_extension(egl_extensions, "EGL_EXT_image_dma_buf_import_modifiers"),
                                        "EGL_EXT_image_dma_buf_import_modifiers");
  note(has_extension(egl_extensions, "EGL_KHR_surfaceless_context"), "EGL_KHR_surfaceless_context");
  note(has_extension(egl_extensions, "EGL_EXT_create_context_robustness"), "EGL_EXT_create_context_robustness");
  info_.image_external = note(gl_has("GL_OES_EGL_image_external_essl3"), "GL_OES_EGL_image_external_essl3") |
                         note(gl_has("GL_OES_EGL_image_external"), "GL_OES_EGL_image_external");
  note(gl_has("GL_OES_EGL_image"), "GL_OES_EGL_image");
  info_.float_render = note(gl_has("GL_EXT_color_buffer_float"), "GL_EXT_color_buffer_float");
  info_.robustness =
      note(gl_has("GL_KHR_robustness"), "GL_KHR_robustness") | note(gl_has("GL_EXT_robustness"), "GL_EXT_robustness");
  // Core in ES 3.2, an extension entry point before; looked up so 3.0 drivers load too.
  for (const char* name : {"glGetGraphicsResetStatus", "glGetGraphicsResetStatusKHR", "glGetGraphicsResetStatusEXT"}) {
    if (reset_status_ == nullptr) reset_status_ = reinterpret_cast<GLenum (*)()>(eglGetProcAddress(name));
  }
}

void GlContext::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void GlContext::release() {
  if (display_ == EGL_NO_DISPLAY) return;
  eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  if (context_ != EGL_NO_CONTEXT) eglDestroyContext(display_, context_);
  if (surface_ != EGL_NO_SURFACE) eglDestroySurface(display_, surface_);
  // The display is not terminated: EGL displays are per process, and another processor's
  // context may still live on it.
  eglReleaseThread();
}

GlContext::~GlContext() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void GlContext::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

bool GlContext::lost() const noexcept {
  return lost_.load(std::memory_order_acquire);
}

Result<void> GlContext::check_reset() {
  if (lost()) return fail(ErrorCode::Unavailable, "GL backend: the GL context was lost (GPU reset)");
  if (!info_.robustness || reset_status_ == nullptr) return {};
  const GLenum status = reset_status_();
  if (status == GL_NO_ERROR) return {};
  lost_.store(true, std::memory_order_release);
  return fail(ErrorCode::Unavailable, "GL backend: the GL context was lost (",
              status == GL_GUILTY_CONTEXT_RESET     ? "this context caused a GPU reset"
              : status == GL_INNOCENT_CONTEXT_RESET ? "another context caused a GPU reset"
                                                    : "GPU reset of unknown cause",
              ")");
}

}  // namespace memhal::detail::gl
