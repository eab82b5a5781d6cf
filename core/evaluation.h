#ifndef TAILSWEEP_CORE_EVALUATION_H_
#define TAILSWEEP_CORE_EVALUATION_H_

// Evaluation of a trained model (science.md section 6) on M held-out
// instances drawn from config.eval_seed, the same instances for every job of
// a sweep that shares the seed, so cells are paired. Distances are computed
// in double against the sampling reference delta(op, family, N) drawn from
// the same seed.

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job_config.h"
#include "core/model.h"

namespace tailsweep {

struct EvalResult {
  std::vector<double> ratios;  // ED(prediction, target) / delta, per instance
  double delta = 0;
  double ratio_mean = 0;
  double ratio_median = 0;
  // 95% percentile-bootstrap interval of the median ratio over instances.
  double ratio_ci_low = 0;
  double ratio_ci_high = 0;
  double spread_ratio = 0;          // mean over instances
  std::optional<double> hill_stat;  // mirrored Pareto only
};

// Runs `model` (in eval mode, no grad) on config.eval_instances instances of
// config.n_points points, config.batch at a time, on `device`. Statuses from
// the statistics (e.g. an undefined Hill estimate) pass through.
absl::StatusOr<EvalResult> Evaluate(PointTransformer& model,
                                    const JobConfig& config,
                                    torch::Device device);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_EVALUATION_H_
