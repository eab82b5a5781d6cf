#ifndef TAILSWEEP_COORDINATOR_CLOCK_H_
#define TAILSWEEP_COORDINATOR_CLOCK_H_

// Time as the coordinator sees it, injected so tests can move it by hand.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tailsweep {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch. Thread-safe.
  virtual int64_t NowMs() = 0;
};

class SystemClock : public Clock {
 public:
  int64_t NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that only moves when told to. Thread-safe.
class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'000'000) : now_(start_ms) {}
  int64_t NowMs() override { return now_.load(); }
  void Advance(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_CLOCK_H_
