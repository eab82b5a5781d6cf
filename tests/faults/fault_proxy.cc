#include "tests/faults/fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

// Moves what is readable from `from` to `to`, at most `limit` bytes (to < 0:
// reads and drops it); false when either end closed. *moved: the bytes.
bool Forward(int from, int to, int64_t limit = 64 * 1024,
             int64_t* moved = nullptr) {
  char buffer[64 * 1024];
  const ssize_t n =
      ::read(from, buffer,
             static_cast<size_t>(std::min<int64_t>(limit, sizeof(buffer))));
  if (moved != nullptr) *moved = std::max<ssize_t>(n, 0);
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

FaultProxy::FaultProxy(int listen_port, int target_port,
                       int64_t request_bytes_per_s)
    : target_port_(target_port), request_bytes_per_s_(request_bytes_per_s) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (request_bytes_per_s_ > 0) {
    // Accepted sockets inherit it: little waits unseen in the kernel.
    const int small = 32 * 1024;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  }
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
  // Request bytes that may move now (a token bucket of 50 ms).
  const bool throttled = request_bytes_per_s_ > 0;
  int64_t budget = 0;
  auto refilled = std::chrono::steady_clock::now();
  while (!stop_) {
    if (throttled) {
      const auto now = std::chrono::steady_clock::now();
      const int64_t us =
          std::chrono::duration_cast<std::chrono::microseconds>(now - refilled)
              .count();
      budget = std::min(request_bytes_per_s_ / 20,
                        budget + request_bytes_per_s_ * us / 1000000);
      refilled = now;
    }
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
      // Out of budget: requests are not read (and not polled, which would
      // return at once) until it refills.
      const short requests = !throttled || budget > 0 ? POLLIN : 0;
      for (const Pipe& p : pipes) {
        fds.push_back({p.client, requests, 0});
        fds.push_back({p.server, POLLIN, 0});
      }
    }
    // Only the pipes in `fds` were polled; one accepted below waits a round.
    const size_t polled = (fds.size() - 1) / 2;
    if (::poll(fds.data(), fds.size(), throttled ? 5 : 20) <= 0) continue;
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
    // Throttled: the budget is shared fairly among the connections with
    // requests waiting, as a link's bandwidth is among its TCP streams.
    int64_t share = 64 * 1024;
    if (throttled) {
      int64_t waiting = 0;
      for (size_t i = 0; i < polled; ++i) {
        if (fds[1 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) ++waiting;
      }
      share = std::max<int64_t>(1, budget / std::max<int64_t>(waiting, 1));
    }
    for (size_t i = 0; i < polled; ++i) {
      const pollfd& c = fds[1 + 2 * i];
      const pollfd& s = fds[2 + 2 * i];
      bool ok = true;
      if ((c.revents & (POLLIN | POLLHUP | POLLERR)) &&
          (!throttled || budget > 0)) {
        int64_t moved = 0;
        ok = Forward(pipes[i].client, pipes[i].server,
                     std::min(share, throttled ? budget : share), &moved);
        if (throttled) budget -= moved;
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
