#ifndef TAILSWEEP_CORE_SCHEMA_CLOCK_H_
#define TAILSWEEP_CORE_SCHEMA_CLOCK_H_

// Time as the daemons see it, injected so tests move it by hand. Two
// readings with different uses:
// - WallMs, milliseconds since the Unix epoch: for what is recorded and
//   shown to people (created_ms, events, last seen). It may jump.
// - SteadyMs, a monotonic clock (CLOCK_MONOTONIC, the same in every process
//   of a machine): for deadlines and intervals. Only differences mean
//   anything; it never jumps.
// Lease deadlines run on SteadyMs, so neither a wall-clock step nor a
// process that was down or paused expires or immortalises a lease.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace tailsweep {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t WallMs() = 0;
  virtual int64_t SteadyMs() = 0;
  // Returns after `ms` milliseconds (at once for ms <= 0).
  virtual void SleepMs(int64_t ms) = 0;
};

// The real clocks. Thread-safe.
class SystemClock final : public Clock {
 public:
  int64_t WallMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t SteadyMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepMs(int64_t ms) override {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
};

// Clocks that only move when told to: Advance (or SleepMs) moves both,
// StepWall only the wall clock (an NTP step, a VM restored). Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'000'000)
      : wall_(start_ms), steady_(start_ms) {}
  int64_t WallMs() override { return wall_.load(); }
  int64_t SteadyMs() override { return steady_.load(); }
  void SleepMs(int64_t ms) override {
    if (ms > 0) Advance(ms);
  }
  void Advance(int64_t ms) {
    wall_ += ms;
    steady_ += ms;
  }
  void StepWall(int64_t ms) { wall_ += ms; }

 private:
  std::atomic<int64_t> wall_;
  std::atomic<int64_t> steady_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_CLOCK_H_
