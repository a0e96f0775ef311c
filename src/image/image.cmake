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
