// The plugin's element types.
#pragma once

#include <gst/base/gstbasesink.h>
#include <gst/base/gstbasetransform.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS
#define MEMHAL_TYPE_SINK (memhal_sink_get_type())
G_DECLARE_FINAL_TYPE(MemhalSink, memhal_sink, MEMHAL, SINK, GstBaseSink)
#define MEMHAL_TYPE_SRC (memhal_src_get_type())
G_DECLARE_FINAL_TYPE(MemhalSrc, memhal_src, MEMHAL, SRC, GstPushSrc)
#define MEMHAL_TYPE_CONVERT (memhal_convert_get_type())
G_DECLARE_FINAL_TYPE(MemhalConvert, memhal_convert, MEMHAL, CONVERT, GstBaseTransform)
G_END_DECLS
