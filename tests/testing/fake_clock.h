#ifndef TAILSWEEP_TESTS_TESTING_FAKE_CLOCK_H_
#define TAILSWEEP_TESTS_TESTING_FAKE_CLOCK_H_

// A Clock (core/schema/clock.h) that only moves when slept on: SleepMs advances
// it at once, then runs the events that came due (At, in time order) and
// the watchers (OnAdvance, e.g. fake jobs writing their files). Tests never
// sleep for real. Not thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "core/schema/clock.h"

namespace tailsweep {

class FakeClock final : public Clock {
 public:
  int64_t WallMs() override { return 1'700'000'000'000 + now_ms_; }
  int64_t SteadyMs() override { return now_ms_; }
  void SleepMs(int64_t ms) override {
    if (ms > 0) now_ms_ += ms;
    while (!events_.empty() && events_.begin()->first <= now_ms_) {
      std::function<void()> fn = std::move(events_.begin()->second);
      events_.erase(events_.begin());
      fn();
    }
    for (const auto& watch : watchers_) watch(now_ms_);
  }
  // Runs `fn` once the clock has reached `at_ms`.
  void At(int64_t at_ms, std::function<void()> fn) {
    events_.emplace(at_ms, std::move(fn));
  }
  // Runs `fn(now)` after every sleep.
  void OnAdvance(std::function<void(int64_t)> fn) {
    watchers_.push_back(std::move(fn));
  }

 private:
  int64_t now_ms_ = 0;
  std::multimap<int64_t, std::function<void()>> events_;
  std::vector<std::function<void(int64_t)>> watchers_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_TESTS_TESTING_FAKE_CLOCK_H_
