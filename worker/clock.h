#ifndef TAILSWEEP_WORKER_CLOCK_H_
#define TAILSWEEP_WORKER_CLOCK_H_

// The worker's time: a steady millisecond clock and a sleep, injected so
// that tests run the daemon loop on a fake clock without sleeping.
// SteadyClock is the real one. Implementations need not be thread-safe.

#include <chrono>
#include <cstdint>
#include <thread>

namespace tailsweep {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds on a steady clock (only differences mean anything).
  virtual int64_t NowMs() = 0;
  // Returns after `ms` milliseconds (at once for ms <= 0).
  virtual void SleepMs(int64_t ms) = 0;
};

class SteadyClock final : public Clock {
 public:
  int64_t NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepMs(int64_t ms) override {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_CLOCK_H_
