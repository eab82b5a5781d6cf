#include "core/evaluation.h"

#include <ATen/ATen.h>

#include <cmath>

#include "core/energy_distance.h"
#include "core/ensemble_metrics.h"
#include "core/reference.h"
#include "core/sampling.h"
#include "core/statistics.h"

namespace tailsweep {
namespace {

// The first `n` rows of a [points, dims] double tensor.
std::vector<std::vector<double>> Rows(const torch::Tensor& points, int64_t n) {
  const torch::Tensor head =
      points.slice(0, 0, std::min(n, points.size(0))).contiguous();
  std::vector<std::vector<double>> out(static_cast<size_t>(head.size(0)));
  const double* p = head.data_ptr<double>();
  for (auto& row : out) row.assign(p, p + head.size(1)), p += head.size(1);
  return out;
}

}  // namespace

absl::StatusOr<Evaluator> Evaluator::Create(const JobConfig& config,
                                            torch::Device device) {
  ReferenceOptions ref_options;
  ref_options.n = config.n_points;
  ref_options.trials = config.reference_trials;
  ref_options.seed = config.eval_seed + 1;  // apart from the instances' stream
  absl::StatusOr<Reference> reference =
      SamplingReference(TaskOf(config), ref_options);
  if (!reference.ok()) return reference.status();
  return Evaluator(config, device, reference->mean);
}

absl::StatusOr<EvalResult> Evaluate(PointTransformer& model,
                                    const JobConfig& config,
                                    torch::Device device) {
  absl::StatusOr<Evaluator> evaluator = Evaluator::Create(config, device);
  if (!evaluator.ok()) return evaluator.status();
  return evaluator->Run(model);
}

EvalSummary SummaryOf(const EvalResult& e) {
  EvalSummary s;
  s.ratio_mean = e.ratio_mean;
  s.ratio_median = e.ratio_median;
  s.ratio_ci_low = e.ratio_ci_low;
  s.ratio_ci_high = e.ratio_ci_high;
  s.spread_ratio = e.spread_ratio;
  s.delta = e.delta;
  s.eval_instances = static_cast<int64_t>(e.ratios.size());
  s.hill_stat = e.hill_stat;
  return s;
}

absl::StatusOr<EvalResult> Evaluator::Run(PointTransformer& model) const {
  const JobConfig& config = config_;
  const torch::Device device = device_;
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  const Task task = TaskOf(config);
  bool hill = config.marginal == MarginalFamily::kMirroredPareto;

  EvalResult result;
  result.delta = delta_;
  TaskSampler sampler(task, config.eval_seed);
  const std::vector<Instance> instances =
      sampler.DrawInstances(config.eval_instances);
  const torch::TensorOptions on_device =
      torch::TensorOptions()
          .dtype(ModelScalarType(config.precision))
          .device(device);
  const torch::TensorOptions cpu_double =
      torch::TensorOptions().dtype(torch::kDouble);
  HillErrors hill_errors;
  double spread_total = 0;
  bool finite = true;
  for (size_t i0 = 0; i0 < instances.size(); i0 += config.batch) {
    const std::vector<Instance> chunk(
        instances.begin() + i0,
        instances.begin() + std::min(instances.size(), i0 + config.batch));
    const torch::Tensor input =
        sampler.Sample(chunk, Side::kInput, config.n_points, on_device);
    const torch::Tensor target =
        sampler.Sample(chunk, Side::kTarget, config.n_points, cpu_double);
    // Drawn for every family so the instances' stream does not depend on it.
    const torch::Tensor second =
        sampler.Sample(chunk, Side::kTarget, config.n_points, cpu_double);
    const torch::Tensor prediction =
        model->forward(input).to(torch::kCPU, torch::kDouble);
    for (size_t b = 0; b < chunk.size(); ++b) {
      if (!torch::isfinite(prediction[b]).all().item<bool>()) {
        // A diverged model: recorded as NaN, never sorted.
        finite = false;
        result.ratios.push_back(NAN);
        spread_total = NAN;
        continue;
      }
      const int64_t index = static_cast<int64_t>(i0 + b);
      if (index < kSampleInstances) {
        result.samples.push_back({index, Rows(target[b], kSamplePoints),
                                  Rows(prediction[b], kSamplePoints)});
      }
      absl::StatusOr<double> ed = EnergyDistance(prediction[b], target[b]);
      if (!ed.ok()) return ed.status();
      result.ratios.push_back(*ed / result.delta);
      spread_total += SpreadRatio(prediction[b], target[b]).item<double>();
      // An undefined estimate (e.g. a fully collapsed output) leaves the
      // statistic undefined rather than failing the evaluation.
      hill = hill && AddHillErrors(prediction[b], target[b], second[b],
                                   config.hill_fraction, &hill_errors)
                         .ok();
    }
  }
  if (was_training) model->train();
  result.spread_ratio = spread_total / instances.size();
  if (!finite) {
    result.ratio_mean = result.ratio_median = NAN;
    result.ratio_ci_low = result.ratio_ci_high = NAN;
    return result;
  }
  result.ratio_mean = Mean(result.ratios);
  result.ratio_median = Median(result.ratios);
  absl::StatusOr<Interval> ci = BootstrapInterval(
      result.ratios, Statistic::kMedian, {2000, 0.95, config.eval_seed});
  if (!ci.ok()) return ci.status();
  result.ratio_ci_low = ci->low;
  result.ratio_ci_high = ci->high;
  if (hill) result.hill_stat = HillErrorStatistic(hill_errors);
  return result;
}

}  // namespace tailsweep
