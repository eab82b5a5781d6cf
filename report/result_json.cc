#include "report/result_json.h"

#include <iterator>

#include "core/schema/job_state.h"

namespace tailsweep {

nlohmann::json CountsJson(const JobCounts& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (JobState state : kJobStates) {
    out[std::string(JobStateName(state))] = counts.Of(state);
  }
  return out;
}

nlohmann::json CellResultJson(const v1::CellResult& r, JsonNumberFn number) {
  return {{"jobs", r.jobs()},
          {"done", r.done()},
          {"failed", r.failed()},
          {"ratio_median", number(r.ratio_median())},
          {"ratio_mean", number(r.ratio_mean())},
          {"ratio_ci_low", number(r.ratio_ci_low())},
          {"ratio_ci_high", number(r.ratio_ci_high())},
          {"seed_min", number(r.seed_min())},
          {"seed_max", number(r.seed_max())},
          {"bold", r.bold()},
          {"collapsed", r.collapsed()},
          {"collapse_step", number(r.collapse_step())},
          {"diverged", r.diverged()},
          {"hill_stat", number(r.hill_stat())},
          {"stopped_early", r.stopped_early()},
          {"steps_saved", r.steps_saved()}};
}

}  // namespace tailsweep
