// The other process of the channel tests: a real, separately exec'd program that talks to
// the test over the socket it inherits as fd 3.
//   channel_peer receive-and-write   receive a tensor, check pattern A, write pattern B
//   channel_peer die-mid-message     send a message announcing 2 fds with 1 attached, exit
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memhal/channel.hpp>
#include <string_view>

namespace {

int receive_and_write() {
  auto channel = memhal::ipc::Channel::adopt(memhal::UniqueFd(3));
  if (!channel) return 10;
  auto tensor = channel->receive(std::chrono::milliseconds(10000));
  if (!tensor) {
    std::fprintf(stderr, "peer: %s\n", tensor.error().to_string().c_str());
    return 11;
  }
  auto map = tensor->map(memhal::CpuAccess::ReadWrite);
  if (!map) return 12;
  auto bytes = map->span<uint8_t>();
  if (!bytes) return 13;
  for (std::size_t i = 0; i < bytes->size(); ++i) {
    if ((*bytes)[i] != static_cast<uint8_t>(i % 251)) return 14;
    (*bytes)[i] = static_cast<uint8_t>(255 - i % 251);
  }
  std::printf("peer: checked and rewrote %zu bytes, received %llu message bytes\n", bytes->size(),
              static_cast<unsigned long long>(channel->bytes_received()));
  return 0;
}

int die_mid_message() {
  const int memfd = ::memfd_create("peer", MFD_CLOEXEC);
  if (memfd < 0 || ::ftruncate(memfd, 4096) != 0) return 20;
  const char message[] = {'M', 'H', 'C', 'H', 2, 0, 1, 0, 2, 0, 0, 0};  // announces 2 fds
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec io{const_cast<char*>(message), sizeof message};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(rights), &memfd, sizeof memfd);
  if (::sendmsg(3, &header, 0) < 0) return 21;
  _exit(0);  // gone before any second part could follow
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "receive-and-write") return receive_and_write();
  if (mode == "die-mid-message") return die_mid_message();
  std::fprintf(stderr, "usage: channel_peer receive-and-write|die-mid-message\n");
  return 2;
}
