/* An outside C program using the installed memhal through memhal::c or pkg-config. */
#include <memhal/memhal.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const int64_t shape[] = {4, 4};
  memhal_tensor_t* tensor = NULL;
  const char* name = NULL;
  uint32_t memory = 0;
  if (strcmp(memhal_version(), MEMHAL_VERSION_STRING) != 0) {
    fprintf(stderr, "library %s, headers %s\n", memhal_version(), MEMHAL_VERSION_STRING);
    return 1;
  }
  if (memhal_tensor_create(shape, 2, MEMHAL_DTYPE_F32, MEMHAL_MEMORY_KIND_AUTO, "c", &tensor) != MEMHAL_OK) {
    fprintf(stderr, "create failed: %s\n", memhal_last_error_message());
    return 1;
  }
  memhal_tensor_memory(tensor, &memory);
  memhal_code_to_string(MEMHAL_VOCABULARY_MEMORY_KIND, memory, &name);
  printf("c consumer ok: memhal %s, a %s tensor\n", memhal_version(), name);
  memhal_tensor_free(tensor);
  return 0;
}
