// The memhal GStreamer plugin: memhalsink, memhalsrc, memhalconvert.
#include <gst/gst.h>

#include "elements.hpp"

#define PACKAGE "memhal"  // GST_PLUGIN_DEFINE reads it

static gboolean memhal_plugin_init(GstPlugin* plugin) {
  return gst_element_register(plugin, "memhalsink", GST_RANK_NONE, MEMHAL_TYPE_SINK) &&
         gst_element_register(plugin, "memhalsrc", GST_RANK_NONE, MEMHAL_TYPE_SRC) &&
         gst_element_register(plugin, "memhalconvert", GST_RANK_NONE, MEMHAL_TYPE_CONVERT);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, memhal,
                  "Share video frames with memhal programs across processes without copying", memhal_plugin_init,
                  MEMHAL_GST_VERSION, "unknown", "memhal", "memhal")
