#ifndef TAILSWEEP_CORE_SCHEMA_JOB_COUNTS_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_COUNTS_H_

// How many of a sweep's jobs are in each state, in kJobStates order: what
// the store counts, the wire carries (proto/wire_records.h) and the tools
// print. A new state (job_state.h) is counted, stored and sent without a
// change here. Torch-free, header-only.

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/schema/job_state.h"

namespace tailsweep {

struct JobCounts {
  std::array<int64_t, kJobStates.size()> by_state{};
  int64_t Of(JobState state) const {
    return by_state[static_cast<size_t>(state)];
  }
  int64_t& Of(JobState state) { return by_state[static_cast<size_t>(state)]; }
  int64_t total() const {
    int64_t n = 0;
    for (int64_t c : by_state) n += c;
    return n;
  }
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_COUNTS_H_
