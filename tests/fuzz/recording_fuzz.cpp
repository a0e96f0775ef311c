// libFuzzer target: the recording reader over an arbitrary file, materialising every record
// (as a frame too, where it is one).
#include <sys/mman.h>
#include <unistd.h>

#include <memhal/recording.hpp>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::memfd_create("recording_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, data, size) == static_cast<ssize_t>(size)) {
    auto replayer = memhal::Replayer::open("/proc/self/fd/" + std::to_string(fd));
    for (int i = 0; replayer && i < 64; ++i) {
      auto record = replayer->next();
      if (!record || !record->has_value()) break;
      (void)(*record)->materialize(memhal::MemoryKind::Mem);
      if ((*record)->descriptor.frame) (void)(*record)->materialize_frame(memhal::MemoryKind::Mem);
    }
  }
  ::close(fd);
  return 0;
}
