#ifndef TAILSWEEP_COORDINATOR_RESULT_PAGES_H_
#define TAILSWEEP_COORDINATOR_RESULT_PAGES_H_

// The snapshots GetResults pages are cut from. A results table needs every
// job of the sweep (rows group seeds, the pivot groups cells from all over
// the grid), so a read computes it once, at its first page, and keeps it:
// the read's later pages come from that snapshot (one consistent table,
// and a 100k-job sweep is read and aggregated once, not once a page). The
// page token names the snapshot; a token whose snapshot is no longer kept
// gets a fresh one. A new read reuses the newest kept snapshot of the same
// key computed at the same store generation (Store::Generation: nothing
// that results show has changed since), so a dashboard polling a big sweep
// aggregates it once per change, not once per poll. At most kKept
// snapshots are kept, the least recently used dropped first. Thread-safe.

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/schema/results_table.h"

namespace tailsweep {

// A sweep's results: its kind's table (JobKindDef::summarize) and, for
// reads without `table` (clients before 0.2.0), the pivot by group_by.
struct ResultsSnapshot {
  std::string kind;
  int64_t jobs = 0, done = 0;
  ResultsTable table;
  ResultsPivot pivot;
};

class ResultPages {
 public:
  static constexpr size_t kKept = 4;

  // What a snapshot is of: the request's sweep and options.
  struct Key {
    std::string sweep;
    bool over_seeds = false;
    std::string group_by;
    bool operator==(const Key& o) const {
      return sweep == o.sweep && over_seeds == o.over_seeds &&
             group_by == o.group_by;
    }
  };
  using Compute = std::function<absl::StatusOr<ResultsSnapshot>()>;

  // The snapshot `id` of `key` when it is kept; otherwise (id 0: a new
  // read) one of `key` kept from `generation`, else a fresh one from
  // `compute` (to be called at `generation` or later), kept under a new id.
  // Sets *id to the snapshot's. The statuses of `compute`.
  absl::StatusOr<std::shared_ptr<const ResultsSnapshot>> Get(
      const Key& key, uint64_t generation, uint64_t* id,
      const Compute& compute);

 private:
  struct Entry {
    Key key;
    uint64_t id;
    uint64_t generation;
    std::shared_ptr<const ResultsSnapshot> snapshot;
  };
  absl::Mutex mu_;
  std::list<Entry> kept_ ABSL_GUARDED_BY(mu_);  // most recently used first
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_RESULT_PAGES_H_
