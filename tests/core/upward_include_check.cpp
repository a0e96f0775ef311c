// Built by the test layer_upward_include_fails_to_compile (tests/core/CMakeLists.txt) with the
// frame layer's include directories: frame code sees the private headers of its own layer and
// of the layers below it, and an include from a layer above (ipc) must not compile.
#include "core/checked_vector.hpp"
#include "frame/shared_bytes_access.hpp"
#include "storage/storage.hpp"
#include "tensor/tensor_access.hpp"
#ifdef MEMHAL_COMPILE_FAILURE
#include "ipc/wire.hpp"
#endif
