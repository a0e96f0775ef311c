// MemhalPool: a GstBufferPool whose buffers are memhal TensorPool slots (see memhal_pool.cpp).
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS
#define MEMHAL_TYPE_POOL (memhal_pool_get_type())
G_DECLARE_FINAL_TYPE(MemhalPool, memhal_pool, MEMHAL, POOL, GstBufferPool)
/// A new pool (configure it with caps, size and max buffers; max 0 takes `default_count`).
GstBufferPool* memhal_pool_new(guint default_count);
G_END_DECLS
