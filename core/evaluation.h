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
#include "core/training_signals.h"

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
  // The first kSampleInstances instances' first kSamplePoints points
  // (training_signals.h); none of an instance whose prediction is not finite.
  std::vector<PointSample> samples;
};

// The evaluation of one job config, its sampling reference drawn once, so a
// run that evaluates every few hundred steps pays for the reference once.
// Evaluating touches no random stream of the training (its own generators,
// seeded from config.eval_seed), so it does not change a run's trajectory.
class Evaluator {
 public:
  // Draws the reference. Statuses from the reference pass through.
  static absl::StatusOr<Evaluator> Create(const JobConfig& config,
                                          torch::Device device);

  // Runs `model` (in eval mode, no grad; its mode is restored) on
  // config.eval_instances instances of config.n_points points, config.batch
  // at a time. A model with non-finite outputs gives NaN ratios. Statuses
  // from the statistics pass through.
  absl::StatusOr<EvalResult> Run(PointTransformer& model) const;

 private:
  Evaluator(const JobConfig& config, torch::Device device, double delta)
      : config_(config), device_(device), delta_(delta) {}
  JobConfig config_;
  torch::Device device_;
  double delta_;
};

// Evaluator::Create(config, device) then Run(model).
absl::StatusOr<EvalResult> Evaluate(PointTransformer& model,
                                    const JobConfig& config,
                                    torch::Device device);

// The summary that results and metrics lines carry.
EvalSummary SummaryOf(const EvalResult& result);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_EVALUATION_H_
