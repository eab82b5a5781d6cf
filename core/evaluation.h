#ifndef TAILSWEEP_CORE_EVALUATION_H_
#define TAILSWEEP_CORE_EVALUATION_H_

// Evaluation of a trained model (science.md section 6) on M held-out
// instances drawn from config.eval_seed, the same instances for every job of
// a sweep that shares the seed, so cells are paired. Distances are computed
// in double against the sampling reference delta(op, family, N) drawn from
// the same seed.

#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/ensemble_metrics.h"
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

  // The sampling reference delta(op, family, N): the unit of the ratios.
  double delta() const { return delta_; }

 private:
  Evaluator(const JobConfig& config, torch::Device device, double delta)
      : config_(config), device_(device), delta_(delta) {}
  JobConfig config_;
  torch::Device device_;
  double delta_;
};

// The held-out instances' ensembles as Evaluator::Run draws them, chunk by
// chunk of config.batch instances: `input` [b, n, 2] as `input_options`
// (device, dtype: the stream is the same for the same options), `target`
// and a second, independent target sample `second` (double, CPU; the Hill
// statistic's noise). `first`: the chunk's first instance index. Statuses
// from `fn` end the walk.
struct EvalChunk {
  int64_t first = 0;
  torch::Tensor input, target, second;
};
absl::Status ForEachEvalChunk(
    const JobConfig& config, const torch::TensorOptions& input_options,
    const std::function<absl::Status(const EvalChunk&)>& fn);

// The judging of one evaluation, a prediction at a time: what Run does with
// a model's outputs, for predictions from anywhere (`tailsweep-lab lab bench
// judge`: another program's model judged by the same yardstick).
class EvalJudge {
 public:
  // `delta`: the sampling reference (Evaluator::delta()).
  EvalJudge(const JobConfig& config, double delta);
  // Instance `index`'s prediction [n, dims] against its target and second
  // sample (all double, CPU). A prediction that is not finite makes the
  // evaluation's ratios NaN (a diverged model). Statuses from the distances
  // pass through.
  absl::Status Add(int64_t index, const torch::Tensor& prediction,
                   const torch::Tensor& target, const torch::Tensor& second);
  // The evaluation of every instance added (config.eval_instances of them).
  absl::StatusOr<EvalResult> Finish();

 private:
  JobConfig config_;
  EvalResult result_;
  HillErrors hill_errors_;
  bool hill_;
  double spread_total_ = 0;
  bool finite_ = true;
  int64_t added_ = 0;
};

// Evaluator::Create(config, device) then Run(model).
absl::StatusOr<EvalResult> Evaluate(PointTransformer& model,
                                    const JobConfig& config,
                                    torch::Device device);

// The summary that results and metrics lines carry.
EvalSummary SummaryOf(const EvalResult& result);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_EVALUATION_H_
