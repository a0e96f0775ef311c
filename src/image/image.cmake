# The image layer (ImageProcessor and its CPU and GL backends), included from src/CMakeLists.txt.
# Highway provides the SIMD kernels with run-time dispatch (libhwy-dev).
find_package(hwy 1.0 CONFIG REQUIRED)

# The GL backend (EGL + OpenGL ES 3, headless): Debian libegl-dev and libgles-dev. Built when
# they are found; MEMHAL_WITH_GL=OFF leaves it out.
find_package(PkgConfig REQUIRED)
pkg_check_modules(MEMHAL_GL IMPORTED_TARGET egl glesv2)
option(MEMHAL_WITH_GL "Build the OpenGL ES image backend (needs libegl-dev and libgles-dev)" ${MEMHAL_GL_FOUND})
if(MEMHAL_WITH_GL AND NOT MEMHAL_GL_FOUND)
  message(FATAL_ERROR "MEMHAL_WITH_GL is ON but egl/glesv2 were not found: apt-get install libegl-dev libgles-dev")
endif()

file(GLOB image_sources CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} image/*.cpp image/cpu/*.cpp)
if(MEMHAL_WITH_GL)
  file(GLOB gl_sources CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} image/gl/*.cpp)
  list(APPEND image_sources ${gl_sources})
endif()
memhal_layer(image SOURCES ${image_sources})
target_link_libraries(memhal_image PUBLIC hwy::hwy)
if(MEMHAL_WITH_GL)
  target_compile_definitions(memhal_image PUBLIC MEMHAL_WITH_GL=1)
  target_link_libraries(memhal_image PUBLIC PkgConfig::MEMHAL_GL)
endif()
# The per-pixel loops are the hot path of every frame: let GCC vectorise what Highway does not.
set_source_files_properties(image/cpu/kernels.cpp image/cpu/pixel_io.cpp image/cpu/pixel_write.cpp
                            image/cpu/cpu_converter.cpp PROPERTIES COMPILE_OPTIONS "-O3")
