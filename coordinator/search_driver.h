#ifndef TAILSWEEP_COORDINATOR_SEARCH_DRIVER_H_
#define TAILSWEEP_COORDINATOR_SEARCH_DRIVER_H_

// Boundary sweeps' next rounds: the first adaptive thing the coordinator
// does. The plan is core/schema/boundary_search.h's pure function of a
// sweep's jobs and results; this asks it after every finished job, after a
// submit and once at start, and adds the jobs it asks for. Job ids are
// content hashes, so a plan asked twice adds nothing, and a restart mid-round
// recomputes the same plan from the store: nothing is lost or run twice.
// Thread-safe (one advance at a time).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/store.h"
#include "core/schema/boundary_search.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep {

class SearchDriver {
 public:
  // `store` must outlive the driver.
  explicit SearchDriver(Store* store) : store_(store) {}

  // Finds the sweeps that search (their stored specs) and advances each.
  absl::Status Start();
  // `spec` was submitted: remembered when it searches, and advanced.
  absl::Status Submitted(const SweepSpec& spec);
  // A job finished (done, or failed for good): every searching sweep is
  // advanced. Errors are logged; the next finished job tries again.
  void JobFinished();
  // Where the search of `sweep` stands: the plan the last advance made,
  // or, when the sweep's jobs changed since (Store::Generation), planned
  // again (and kept). FailedPrecondition for a sweep without a search,
  // NotFound for an unknown one.
  absl::StatusOr<std::vector<CellSearch>> Plan(const std::string& sweep);

 private:
  absl::Status Advance(const SweepSpec& spec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The plan of `spec` from the store's jobs now, kept with its generation.
  absl::StatusOr<const std::vector<CellSearch>*> Replan(const SweepSpec& spec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  absl::Mutex mu_;
  std::map<std::string, SweepSpec> searching_ ABSL_GUARDED_BY(mu_);
  struct KeptPlan {
    uint64_t generation = 0;  // Store::Generation() before the jobs' read
    int64_t next_position = 0;
    std::vector<CellSearch> plan;
  };
  std::map<std::string, KeptPlan> plans_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_SEARCH_DRIVER_H_
