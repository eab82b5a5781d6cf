#ifndef TAILSWEEP_TESTS_FAULTS_FAULT_PROXY_H_
#define TAILSWEEP_TESTS_FAULTS_FAULT_PROXY_H_

// A TCP proxy between a worker and the coordinator that can cut the
// network: in kStall nothing passes either way (packets vanish, connections
// stay open, as in a partition), in kDrop every connection is reset and new
// ones are refused; in kDropReplies requests pass and every reply vanishes
// (the server acts, the client never learns), and a connection that lost
// bytes so is closed when the mode ends, as one that broke would be; kPass
// forwards. A proxy made with a request rate forwards requests (worker to
// coordinator) at most that many bytes a second, with small socket buffers
// (a slow uplink); replies go at full speed. Runs its own thread.

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace tailsweep::testing {

class FaultProxy {
 public:
  enum class Mode { kPass, kStall, kDrop, kDropReplies };

  // Listens on 127.0.0.1:listen_port and forwards to 127.0.0.1:target_port;
  // request_bytes_per_s 0: at full speed.
  FaultProxy(int listen_port, int target_port, int64_t request_bytes_per_s = 0);
  ~FaultProxy();

  void Set(Mode mode) { mode_ = mode; }
  bool listening() const { return listen_fd_ >= 0; }

 private:
  void Loop();

  int listen_fd_ = -1;
  int target_port_;
  const int64_t request_bytes_per_s_;
  std::atomic<Mode> mode_{Mode::kPass};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_FAULTS_FAULT_PROXY_H_
