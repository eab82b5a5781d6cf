#ifndef TAILSWEEP_PROTO_PROGRESS_WATCHDOG_H_
#define TAILSWEEP_PROTO_PROGRESS_WATCHDOG_H_

// A progress deadline for one streaming call (a checkpoint transfer): the
// call may take as long as it needs while it moves, and is cancelled once
// `idle_ms` pass without Progress(). A fixed deadline would either cut a
// large checkpoint off on a slow link or let a stalled one hang for long.
// Runs one thread for its lifetime, on the real steady clock. Thread-safe.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace tailsweep {

class ProgressWatchdog {
 public:
  // `ctx` must outlive the watchdog.
  ProgressWatchdog(grpc::ClientContext* ctx, int64_t idle_ms);
  // Stops the thread (does not cancel the call).
  ~ProgressWatchdog();
  ProgressWatchdog(const ProgressWatchdog&) = delete;
  ProgressWatchdog& operator=(const ProgressWatchdog&) = delete;

  // The call moved (a chunk went or came).
  void Progress();
  // True when it cancelled the call.
  bool fired() const;

 private:
  void Watch();

  grpc::ClientContext* ctx_;
  const std::chrono::milliseconds idle_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::chrono::steady_clock::time_point last_;  // guarded by mu_
  bool stopping_ = false;                       // guarded by mu_
  bool fired_ = false;                          // guarded by mu_
  std::thread thread_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_PROGRESS_WATCHDOG_H_
