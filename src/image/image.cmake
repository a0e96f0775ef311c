# The image layer (ImageProcessor and its CPU backend), included from src/CMakeLists.txt.
# Highway provides the SIMD kernels with run-time dispatch (libhwy-dev).
find_package(hwy 1.0 CONFIG REQUIRED)

target_sources(memhal_objects PRIVATE
  image/image_processor.cpp
  image/cpu/cpu_converter.cpp
  image/cpu/kernels.cpp
  image/cpu/pixel_io.cpp
  image/cpu/pixel_write.cpp
  image/cpu/resample_plan.cpp
  image/cpu/thread_pool.cpp
)
target_link_libraries(memhal_objects PUBLIC hwy::hwy)
target_link_libraries(memhal PRIVATE hwy::hwy)
# The per-pixel loops are the hot path of every frame: let GCC vectorise what Highway does not.
set_source_files_properties(image/cpu/kernels.cpp image/cpu/pixel_io.cpp image/cpu/pixel_write.cpp
                            image/cpu/cpu_converter.cpp PROPERTIES COMPILE_OPTIONS "-O3")

# The GL backend (EGL + OpenGL ES 3, headless): Debian libegl-dev and libgles-dev. Built when
# they are found; MEMHAL_WITH_GL=OFF leaves it out.
find_package(PkgConfig REQUIRED)
pkg_check_modules(MEMHAL_GL IMPORTED_TARGET egl glesv2)
option(MEMHAL_WITH_GL "Build the OpenGL ES image backend (needs libegl-dev and libgles-dev)" ${MEMHAL_GL_FOUND})
if(MEMHAL_WITH_GL)
  if(NOT MEMHAL_GL_FOUND)
    message(FATAL_ERROR "MEMHAL_WITH_GL is ON but egl/glesv2 were not found: apt-get install libegl-dev libgles-dev")
  endif()
  target_sources(memhal_objects PRIVATE
    image/gl/gl_context.cpp
    image/gl/dmabuf_import.cpp
    image/gl/gl_backend.cpp
    image/gl/gl_converter.cpp
    image/gl/pbo_storage.cpp
  )
  target_compile_definitions(memhal_objects PUBLIC MEMHAL_WITH_GL=1)
  target_link_libraries(memhal_objects PUBLIC PkgConfig::MEMHAL_GL)
  target_link_libraries(memhal PRIVATE PkgConfig::MEMHAL_GL)
endif()
