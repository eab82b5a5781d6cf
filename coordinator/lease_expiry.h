#ifndef TAILSWEEP_COORDINATOR_LEASE_EXPIRY_H_
#define TAILSWEEP_COORDINATOR_LEASE_EXPIRY_H_

// The coordinator's lease-expiry loop: every `period_ms` it returns the
// leases past their deadline to the queue (Store::ExpireLeases) and logs
// each with its job, epoch and holder, and whether the job failed for good.
// A failing round is logged and the next round tries again.
//
// It also notices its own pauses: when a round starts more than
// kPauseRounds periods after the one before (the process was stopped, its
// machine or VM frozen), no worker could renew through the gap, so every
// live lease first gets a full period again (Store::RestartLeaseClocks).
// The store, the steady clock, the wait and the logger are injected. Not
// thread-safe; Run on one thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/store.h"
#include "core/schema/clock.h"

namespace tailsweep {

class LeaseExpiry {
 public:
  using ExpireFn = std::function<absl::StatusOr<int64_t>(
      int64_t now_steady, std::vector<Store::ExpiredLease>*)>;
  using RestartFn = std::function<void(int64_t now_steady)>;
  // Waits up to `ms`; returns early (false) when stopping.
  using WaitFn = std::function<bool(int64_t ms)>;
  // Default: spdlog's default logger (warn for expiries, error for
  // failures).
  using LogFn = std::function<void(const std::string& line)>;

  static constexpr int64_t kPauseRounds = 3;

  LeaseExpiry(ExpireFn expire, RestartFn restart, Clock* clock, WaitFn wait,
              int64_t period_ms, LogFn log = nullptr);

  // One round: the leases that expired (none on a store error, which is
  // logged and returned).
  absl::StatusOr<std::vector<Store::ExpiredLease>> RunOnce();
  // Rounds until `wait` returns false.
  void Run();

  int64_t expired_total() const { return expired_total_; }
  int64_t pauses() const { return pauses_; }

 private:
  ExpireFn expire_;
  RestartFn restart_;
  Clock* clock_;
  int64_t last_round_ = -1;  // steady ms; -1: none yet
  int64_t pauses_ = 0;
  WaitFn wait_;
  int64_t period_ms_;
  LogFn log_;
  int64_t expired_total_ = 0;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_LEASE_EXPIRY_H_
