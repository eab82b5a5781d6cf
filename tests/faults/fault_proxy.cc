#include "tests/faults/fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace tailsweep::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

struct Pipe {
  int client = -1, server = -1;
  bool lost_bytes = false;  // replies dropped: its HTTP/2 stream is broken
};

void ClosePipe(Pipe& p) {
  if (p.client >= 0) ::close(p.client);
  if (p.server >= 0) ::close(p.server);
  p.client = p.server = -1;
}

// Moves what is readable from `from` to `to` (to < 0: reads and drops it);
// false when either end closed.
bool Forward(int from, int to) {
  char buffer[64 * 1024];
  const ssize_t n = ::read(from, buffer, sizeof(buffer));
  if (n <= 0) return false;
  if (to < 0) return true;
  for (ssize_t done = 0; done < n;) {
    const ssize_t w = ::write(to, buffer + done, n - done);
    if (w <= 0) return false;
    done += w;
  }
  return true;
}

}  // namespace

FaultProxy::FaultProxy(int listen_port, int target_port)
    : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = Loopback(listen_port);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
          0 ||
      ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    return;
  }
  thread_ = std::thread([this] { Loop(); });
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void FaultProxy::Loop() {
  std::vector<Pipe> pipes;
  while (!stop_) {
    const Mode mode = mode_;
    if (mode == Mode::kDrop) {
      for (Pipe& p : pipes) ClosePipe(p);
      pipes.clear();
    }
    if (mode == Mode::kPass) {
      for (Pipe& p : pipes) {
        if (p.lost_bytes) ClosePipe(p);
      }
    }
    const bool moving = mode == Mode::kPass || mode == Mode::kDropReplies;
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
    if (moving) {
      for (const Pipe& p : pipes) {
        fds.push_back({p.client, POLLIN, 0});
        fds.push_back({p.server, POLLIN, 0});
      }
    }
    // Only the pipes in `fds` were polled; one accepted below waits a round.
    const size_t polled = (fds.size() - 1) / 2;
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client >= 0 && mode == Mode::kDrop) {
        ::close(client);  // refused
      } else if (client >= 0) {
        const int server = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr = Loopback(target_port_);
        if (::connect(server, reinterpret_cast<sockaddr*>(&addr),
                      sizeof(addr)) == 0) {
          pipes.push_back({client, server});
        } else {
          ::close(server);
          ::close(client);
        }
      }
    }
    if (!moving) continue;  // stalled: nothing moves
    for (size_t i = 0; i < polled; ++i) {
      const pollfd& c = fds[1 + 2 * i];
      const pollfd& s = fds[2 + 2 * i];
      bool ok = true;
      if (c.revents & (POLLIN | POLLHUP | POLLERR)) {
        ok = Forward(pipes[i].client, pipes[i].server);
      }
      if (ok && (s.revents & (POLLIN | POLLHUP | POLLERR))) {
        const bool drop = mode == Mode::kDropReplies;
        pipes[i].lost_bytes = pipes[i].lost_bytes || drop;
        ok = Forward(pipes[i].server, drop ? -1 : pipes[i].client);
      }
      if (!ok) ClosePipe(pipes[i]);
    }
    std::vector<Pipe> open;
    for (const Pipe& p : pipes) {
      if (p.client >= 0) open.push_back(p);
    }
    pipes.swap(open);
  }
  for (Pipe& p : pipes) ClosePipe(p);
}

}  // namespace tailsweep::testing
