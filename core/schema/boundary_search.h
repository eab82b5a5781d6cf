#ifndef TAILSWEEP_CORE_SCHEMA_BOUNDARY_SEARCH_H_
#define TAILSWEEP_CORE_SCHEMA_BOUNDARY_SEARCH_H_

// A boundary sweep's plan (sweep_spec.h's SearchSpec): for every cell of the
// grid, where a yes/no outcome of the runs (collapsed by default) flips
// along one key. A pure function of the jobs so far: the coordinator calls
// it whenever a result comes in and adds the jobs it asks for (their ids are
// content hashes, so asking twice adds nothing, and a restart loses
// nothing); `tailsweep results` and the report call it to show where each
// search stands.
//
// The rule, per cell:
// - a probe point is judged once all its runs are done: with yes runs out
//   of n (failed runs left out), the Wilson 95% interval of yes/n; entirely
//   below 1/2: "below", entirely above: "above". A split vote earns
//   `extra_seeds` more runs once; still split then, the fraction decides
//   (1/2 counts as above);
// - both ends are probed first. A point lies above the boundary when its
//   vote is "above" 1/2 and the outcome is rising (holds above the boundary,
//   SearchSpec::rising), or its vote is "below" and the outcome is falling;
//   else below the boundary. The bracket is [the largest point below the
//   boundary under the smallest point above it, that point]. No point above:
//   the boundary lies above the range; the lowest end above: below it;
// - while the bracket is wider than the tolerance (log scale: hi/lo - 1;
//   linear: hi - lo) and probes are left, its midpoint (geometric on a log
//   scale) is probed next. The estimate is the bracket's midpoint.
// Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/schema/job_state.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep {

// One job of a search sweep as the store or the API has it.
struct SearchJob {
  KeyValues cell;  // grid values, the searched key, seed
  JobState state = JobState::kQueued;
  std::string result_json;  // done jobs: result.json
};

// A probe point of one cell.
struct ProbePoint {
  std::string value;  // ProbeText
  double x = 0;
  int64_t yes = 0, no = 0, failed = 0, pending = 0;
  double low = 0, high = 1;  // Wilson 95% interval of yes / (yes + no)
  enum class Verdict {
    kPending,
    kBelow,
    kAbove,
    kUnknown
  } verdict = Verdict::kPending;
};

// Where one cell's search stands.
struct CellSearch {
  KeyValues cell;  // the grid values
  enum class State {
    kSearching,    // runs to wait for or to add
    kFound,        // the bracket is within the tolerance
    kOutOfProbes,  // max_probes used; the bracket is as narrow as it got
    kBelowRange,   // the lowest end is above the boundary already
    kAboveRange,   // no point up to the highest end is above the boundary
    kNoResults,    // a probe point has no done run (all failed)
  } state = State::kSearching;
  std::vector<ProbePoint> probes;  // by x
  // The bracket and its midpoint; NaN when there is none (yet).
  double bracket_lo, bracket_hi, estimate;
  int64_t runs = 0;  // jobs in the cell: done, failed and still to run
  // Jobs to add now: (probe value, seed).
  std::vector<std::pair<std::string, int64_t>> add;
};

absl::string_view CellSearchStateName(CellSearch::State state);
// pending | below | above | no results.
absl::string_view ProbeVerdictName(ProbePoint::Verdict verdict);

// Whether a done job's result shows the search's outcome, read by name from
// the outcomes its kind finds in it (JobKindDef::outcomes); nullopt when
// the result has no such outcome (it does not parse). REQUIRES: spec.search.
std::optional<bool> OutcomeOf(const SweepSpec& spec,
                              const std::string& result_json);

// The Wilson 95% score interval of yes out of n (n > 0).
std::pair<double, double> WilsonInterval(int64_t yes, int64_t n);

// Every cell of the sweep that has jobs, in first-seen order. REQUIRES:
// spec.search.
std::vector<CellSearch> PlanSearch(const SweepSpec& spec,
                                   const std::vector<SearchJob>& jobs);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_BOUNDARY_SEARCH_H_
