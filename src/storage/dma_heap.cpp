#include "storage/dma_heap.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>

#include "core/strings.hpp"
#include "storage/shm.hpp"

namespace memhal {
namespace detail {
namespace {

constexpr const char* kHeapDir = "/dev/dma_heap";
constexpr const char* kUdmabufPath = "/dev/udmabuf";
constexpr std::array<std::string_view, 3> kPreferredHeaps{"linux,cma", "reserved", "system"};

struct Node {
  DmaBufSource info;
  UniqueFd fd;
};

std::string open_failure(int err, const std::string& path) {
  std::string text = std::strerror(err);
  if (err == EACCES || err == EPERM) {
    text +=
        cat(" (add the user to the 'video' or 'render' group, or grant access with a udev rule such as "
            "SUBSYSTEM==\"dma_heap\", GROUP=\"video\", MODE=\"0660\" for ",
            path, ")");
  }
  return text;
}

Node open_node(std::string name, std::string path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  const int err = errno;
  Node node{{std::move(name), std::move(path), false, {}}, std::move(fd)};
  if (node.fd) {
    node.info.usable = true;
    node.info.state = "open";
  } else {
    node.info.state = open_failure(err, node.info.path);
  }
  return node;
}

std::size_t preference(std::string_view name) {
  auto it = std::find(kPreferredHeaps.begin(), kPreferredHeaps.end(), name);
  return static_cast<std::size_t>(it - kPreferredHeaps.begin());
}

// Every node, opened once for the life of the process.
struct Registry {
  std::vector<Node> heaps;
  std::string heap_dir_problem;  // why /dev/dma_heap could not be listed; empty when it could
  Node udmabuf;

  Registry() : udmabuf(open_node("udmabuf", kUdmabufPath)) {
    DIR* dir = ::opendir(kHeapDir);
    if (dir == nullptr) {
      heap_dir_problem = open_failure(errno, kHeapDir);
      return;
    }
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      heaps.push_back(open_node(name, cat(kHeapDir, "/", name)));
    }
    ::closedir(dir);
    std::sort(heaps.begin(), heaps.end(), [](const Node& a, const Node& b) {
      const auto pa = preference(a.info.name), pb = preference(b.info.name);
      return pa != pb ? pa < pb : a.info.name < b.info.name;
    });
  }
};

const Registry& registry() {
  static const Registry instance;
  return instance;
}

Result<NewDmaBuf> allocate_from_heap(const Node& heap, std::size_t bytes) {
  dma_heap_allocation_data request{};
  request.len = bytes;
  request.fd_flags = O_RDWR | O_CLOEXEC;
  if (::ioctl(heap.fd.get(), DMA_HEAP_IOCTL_ALLOC, &request) != 0) {
    const int err = errno;
    return fail_errno(err == ENOMEM ? ErrorCode::OutOfMemory : code_for_errno(err), err, "dma-heap alloc of ", bytes,
                      " bytes from ", heap.info.path, " failed");
  }
  return NewDmaBuf{UniqueFd(static_cast<int>(request.fd)), heap.info.path};
}

Result<NewDmaBuf> allocate_from_udmabuf(const Node& udmabuf, std::size_t bytes) {
  // udmabuf requires the memfd to be sealed against shrinking (the pages must stay); it must
  // not be sealed against writes.
  MEMHAL_ASSIGN_OR_RETURN(UniqueFd memfd, create_sealed_memfd("memhal-udmabuf", bytes, F_SEAL_SHRINK | F_SEAL_GROW));
  udmabuf_create request{};
  request.memfd = static_cast<uint32_t>(memfd.get());
  request.flags = UDMABUF_FLAGS_CLOEXEC;
  request.offset = 0;
  request.size = bytes;
  UniqueFd fd(::ioctl(udmabuf.fd.get(), UDMABUF_CREATE, &request));
  if (!fd) {
    const int err = errno;
    return fail_errno(err == ENOMEM ? ErrorCode::OutOfMemory : code_for_errno(err), err, "udmabuf create of ", bytes,
                      " bytes from a memfd through ", kUdmabufPath,
                      err == EINVAL ? " failed (above the udmabuf.size_limit_mb module limit?)" : " failed");
  }
  return NewDmaBuf{std::move(fd), cat(kUdmabufPath, " (memfd-backed)")};
}

std::string describe_nodes(const Registry& nodes) {
  std::string text;
  if (!nodes.heap_dir_problem.empty()) {
    text = cat(kHeapDir, ": ", nodes.heap_dir_problem);
  } else if (nodes.heaps.empty()) {
    text = cat(kHeapDir, ": no heaps");
  }
  for (const Node& heap : nodes.heaps) {
    if (!heap.info.usable) text += cat(text.empty() ? "" : "; ", heap.info.path, ": ", heap.info.state);
  }
  return text + cat("; ", kUdmabufPath, ": ", nodes.udmabuf.info.state);
}

Result<NewDmaBuf> allocate_named(const Registry& nodes, std::string_view wanted, std::size_t bytes) {
  if (wanted == "udmabuf") {
    if (!nodes.udmabuf.info.usable) {
      return fail(ErrorCode::Unavailable, "MEMHAL_DMA_HEAP=udmabuf: ", kUdmabufPath, ": ", nodes.udmabuf.info.state);
    }
    return allocate_from_udmabuf(nodes.udmabuf, bytes);
  }
  std::string found;
  for (const Node& heap : nodes.heaps) {
    if (heap.info.name != wanted) {
      found += cat(found.empty() ? "" : ", ", heap.info.name);
      continue;
    }
    if (!heap.info.usable) {
      return fail(ErrorCode::Unavailable, "MEMHAL_DMA_HEAP=", wanted, ": ", heap.info.path, ": ", heap.info.state);
    }
    return allocate_from_heap(heap, bytes);
  }
  return fail(ErrorCode::Unavailable, "MEMHAL_DMA_HEAP=", wanted, ": no heap ", kHeapDir, "/", wanted,
              " (heaps found: ", found.empty() ? "none" : found, ")");
}

}  // namespace

Result<NewDmaBuf> allocate_dma_buf_fd(std::size_t bytes) {
  const Registry& nodes = registry();
  if (const char* wanted = std::getenv("MEMHAL_DMA_HEAP"); wanted != nullptr && *wanted != '\0') {
    return allocate_named(nodes, wanted, bytes);
  }
  std::string failures;
  ErrorCode first_code = ErrorCode::Unavailable;
  bool any_heap_open = false;
  for (const Node& heap : nodes.heaps) {
    if (!heap.info.usable) continue;
    any_heap_open = true;
    auto buffer = allocate_from_heap(heap, bytes);
    if (buffer) return buffer;
    if (failures.empty()) first_code = buffer.error().code();
    failures += cat(failures.empty() ? "" : "; ", buffer.error().message());
  }
  if (any_heap_open) return unexpected(Error(first_code, failures));
  if (nodes.udmabuf.info.usable) return allocate_from_udmabuf(nodes.udmabuf, bytes);
  return fail(ErrorCode::Unavailable, "no DMA-BUF source: ", describe_nodes(nodes));
}

}  // namespace detail

std::vector<DmaBufSource> dma_buf_sources() {
  const detail::Registry& nodes = detail::registry();
  std::vector<DmaBufSource> sources;
  if (!nodes.heap_dir_problem.empty()) {
    sources.push_back({"dma_heap", detail::kHeapDir, false, nodes.heap_dir_problem});
  }
  for (const auto& heap : nodes.heaps) sources.push_back(heap.info);
  sources.push_back(nodes.udmabuf.info);
  return sources;
}

}  // namespace memhal
