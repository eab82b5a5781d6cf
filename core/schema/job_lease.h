#ifndef TAILSWEEP_CORE_SCHEMA_JOB_LEASE_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_LEASE_H_

// A job as a worker holds it: what the coordinator's lease says (the wire's
// v1::JobLease, converted in proto/worker_api.cc). Every call a worker makes
// for the job carries its id and epoch (the fence: system.md, "Leases").

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/schema/job_kind.h"
#include "core/schema/run_outputs.h"

namespace tailsweep {

struct JobLease {
  std::string job_id;
  std::string sweep;
  JobKind kind;
  int64_t epoch = 0;
  int64_t attempt = 0;      // 1 for the first attempt
  int64_t deadline_ms = 0;  // renew before this (Unix ms)
  std::vector<std::pair<std::string, std::string>> params;  // the job's config
  // Seconds an attempt may run before the worker stops it and fails the
  // attempt ("timed out after N s"); 0: no limit.
  double timeout_s = 0;
  // What the worker keeps of the attempt (run_outputs.h; notify is the
  // coordinator's and empty here).
  RunOutputs outputs;
};

// The coordinator's answer to one lease request.
struct LeaseAnswer {
  std::vector<JobLease> leases;  // empty: nothing ready
  // With no leases: some job is still queued or leased, so more may come.
  bool unfinished_jobs = false;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_LEASE_H_
