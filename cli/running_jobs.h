#ifndef TAILSWEEP_CLI_RUNNING_JOBS_H_
#define TAILSWEEP_CLI_RUNNING_JOBS_H_

// What `tailsweep watch` shows under its progress bar: the sweep's running
// jobs, each with its cell, its worker, its newest logged step, two of its
// metrics (each one's newest value), and how long ago that step arrived.
// The metrics: loss and spread_ratio for train jobs; for any program's, the
// first two of loss, spread_ratio, then the other names in order (per-layer
// and eval/ names, which hold a '/', left out). Points are read
// incrementally (each refresh asks for the steps past the newest one
// seen), so a long job costs one full read, then only what is new. The age
// is since this watch saw the step change ("-" until it has).

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/connection.h"
#include "cli/render.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep::cli {

class RunningJobs {
 public:
  using Clock = std::chrono::steady_clock;

  // Reads the sweep's leased jobs and their new points.
  absl::Status Refresh(Connection& c, const std::string& sweep);

  // The jobs' state after `running` (leased jobs) and their new points; the
  // part of Refresh without calls, for tests.
  void Update(const std::vector<v1::JobInfo>& running,
              const std::map<std::string, std::vector<v1::MetricPoint>>& points,
              Clock::time_point now);

  // job, cell, worker, step, two metrics (loss, spread_ratio when nothing
  // is logged yet), last point ("4s ago"): the first `max_rows` running
  // jobs, then a row "(N more)".
  Table View(Clock::time_point now, size_t max_rows = 20) const;

 private:
  // The two metric columns (View says which).
  std::vector<std::string> Columns() const;

  struct Seen {
    std::string cell, worker;
    int64_t step = 0;  // newest step of any metric; 0: none yet
    std::map<std::string, double> values;  // each name's newest value
    bool changed_seen = false;             // the step changed while watched
    Clock::time_point changed;
  };
  std::map<std::string, Seen> jobs_;  // by job id
  std::vector<std::string> order_;    // grid order of the running jobs
};

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_RUNNING_JOBS_H_
