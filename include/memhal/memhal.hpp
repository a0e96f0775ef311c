/// @file
/// All of memhal's C++ API in one include.
#pragma once

#include <memhal/dma_buf_source.hpp>
#include <memhal/descriptor.hpp>
#include <memhal/error.hpp>
#include <memhal/image_processor.hpp>
#include <memhal/layout.hpp>
#include <memhal/memory.hpp>
#include <memhal/pixel_format.hpp>
#include <memhal/recording.hpp>
#include <memhal/shared_fd.hpp>
#include <memhal/tensor.hpp>
#include <memhal/tensor_map.hpp>
#include <memhal/tensor_pool.hpp>
#include <memhal/unique_fd.hpp>
#include <memhal/version.hpp>
#include <memhal/vocabulary.hpp>
