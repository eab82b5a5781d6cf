#ifndef TAILSWEEP_CORE_SCHEMA_LEASE_FILE_H_
#define TAILSWEEP_CORE_SCHEMA_LEASE_FILE_H_

// The lease watchdog, part of the child-job protocol (job_protocol.h): the
// worker keeps DIR/lease holding one decimal number, the steady-clock
// millisecond (CLOCK_MONOTONIC, the same for every process of a machine)
// until which the child may run. It rewrites the file after every lease
// renewal. A train child checks it between steps and, once the moment has
// passed, stops as on SIGTERM (checkpoint, result "stopped", with
// "lease_ran_out", so the worker knows it was not a signal): its daemon
// could not renew the lease (frozen, cut off from the coordinator), and the
// coordinator may soon lease the job to someone else. No file (a job run by
// hand): no watchdog. Torch-free.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "core/schema/clock.h"

namespace tailsweep {

inline constexpr char kLeaseFileName[] = "lease";

// Replaces DIR/lease through a rename (readers see the old or the new
// number, never half of one). Not synced: it only matters while both
// processes live.
absl::Status WriteLeaseFile(const std::string& dir, int64_t run_until_ms);

// The number in DIR/lease; nullopt when there is no such file or it does
// not hold a number.
std::optional<int64_t> ReadLeaseFile(const std::string& dir);

// Answers "has the lease run out?" from DIR/lease, reading the file at most
// every kRereadMs (steps may take microseconds). Not thread-safe.
class LeaseWatchdog {
 public:
  static constexpr int64_t kRereadMs = 100;
  // `clock` must outlive the watchdog.
  LeaseWatchdog(std::string dir, Clock* clock)
      : dir_(std::move(dir)), clock_(clock) {}
  bool Expired();

 private:
  std::string dir_;
  Clock* clock_;
  int64_t next_read_ms_ = 0;
  std::optional<int64_t> until_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_LEASE_FILE_H_
