#ifndef TAILSWEEP_WORKER_BACKOFF_H_
#define TAILSWEEP_WORKER_BACKOFF_H_

// Exponential backoff with jitter for calls to an unreachable coordinator:
// after k failures in a row the next call waits base * 2^(k-1), capped, times
// a random factor in [0.5, 1] (so a restarted coordinator is not hit by
// every worker at once). A success resets it. Not thread-safe.

#include <algorithm>
#include <cstdint>
#include <random>

namespace tailsweep {

class Backoff {
 public:
  Backoff(int64_t base_ms, int64_t cap_ms, uint64_t seed)
      : base_ms_(base_ms), cap_ms_(cap_ms), rng_(seed) {}

  // True when a call may be made at `now_ms`.
  bool Ready(int64_t now_ms) const { return now_ms >= next_ms_; }
  // Records a failed call at `now_ms`; returns the wait before the next.
  int64_t Failed(int64_t now_ms) {
    ++failures_;
    const int64_t full =
        std::min(cap_ms_, base_ms_ << std::min<int64_t>(failures_ - 1, 30));
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    const int64_t wait = static_cast<int64_t>(full * jitter(rng_));
    next_ms_ = now_ms + wait;
    return wait;
  }
  void Succeeded() {
    failures_ = 0;
    next_ms_ = 0;
  }
  int64_t failures() const { return failures_; }

 private:
  int64_t base_ms_, cap_ms_;
  std::mt19937_64 rng_;
  int64_t failures_ = 0;
  int64_t next_ms_ = 0;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_BACKOFF_H_
