#include "core/evaluation.h"

#include <ATen/ATen.h>

#include <cmath>

#include "core/energy_distance.h"
#include "core/ensemble_metrics.h"
#include "core/reference.h"
#include "core/sampling.h"
#include "core/schema/status_macros.h"
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

absl::Status ForEachEvalChunk(
    const JobConfig& config, const torch::TensorOptions& input_options,
    const std::function<absl::Status(const EvalChunk&)>& fn) {
  TaskSampler sampler(TaskOf(config), config.eval_seed);
  const std::vector<Instance> instances =
      sampler.DrawInstances(config.eval_instances);
  const torch::TensorOptions cpu_double =
      torch::TensorOptions().dtype(torch::kDouble);
  for (size_t i0 = 0; i0 < instances.size(); i0 += config.batch) {
    const std::vector<Instance> chunk(
        instances.begin() + i0,
        instances.begin() + std::min(instances.size(), i0 + config.batch));
    EvalChunk c;
    c.first = static_cast<int64_t>(i0);
    c.input =
        sampler.Sample(chunk, Side::kInput, config.n_points, input_options);
    c.target =
        sampler.Sample(chunk, Side::kTarget, config.n_points, cpu_double);
    // Drawn for every family so the instances' stream does not depend on it.
    c.second =
        sampler.Sample(chunk, Side::kTarget, config.n_points, cpu_double);
    if (absl::Status s = fn(c); !s.ok()) return s;
  }
  return absl::OkStatus();
}

EvalJudge::EvalJudge(const JobConfig& config, double delta)
    : config_(config),
      hill_(config.marginal == MarginalFamily::kMirroredPareto) {
  result_.delta = delta;
}

absl::Status EvalJudge::Add(int64_t index, const torch::Tensor& prediction,
                            const torch::Tensor& target,
                            const torch::Tensor& second) {
  ++added_;
  if (!torch::isfinite(prediction).all().item<bool>()) {
    // A diverged model: recorded as NaN, never sorted.
    finite_ = false;
    result_.ratios.push_back(NAN);
    spread_total_ = NAN;
    return absl::OkStatus();
  }
  if (index < kSampleInstances) {
    result_.samples.push_back(
        {index, Rows(target, kSamplePoints), Rows(prediction, kSamplePoints)});
  }
  absl::StatusOr<double> ed = EnergyDistance(prediction, target);
  if (!ed.ok()) return ed.status();
  result_.ratios.push_back(*ed / result_.delta);
  spread_total_ += SpreadRatio(prediction, target).item<double>();
  // An undefined estimate (e.g. a fully collapsed output) leaves the
  // statistic undefined rather than failing the evaluation.
  hill_ = hill_ && AddHillErrors(prediction, target, second,
                                 config_.hill_fraction, &hill_errors_)
                       .ok();
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> EvalJudge::Finish() {
  EvalResult result = result_;
  result.spread_ratio = spread_total_ / static_cast<double>(added_);
  if (!finite_) {
    result.ratio_mean = result.ratio_median = NAN;
    result.ratio_ci_low = result.ratio_ci_high = NAN;
    return result;
  }
  result.ratio_mean = Mean(result.ratios);
  result.ratio_median = Median(result.ratios);
  absl::StatusOr<Interval> ci = BootstrapInterval(
      result.ratios, Statistic::kMedian, {2000, 0.95, config_.eval_seed});
  if (!ci.ok()) return ci.status();
  result.ratio_ci_low = ci->low;
  result.ratio_ci_high = ci->high;
  if (hill_) result.hill_stat = HillErrorStatistic(hill_errors_);
  return result;
}

absl::StatusOr<EvalResult> Evaluator::Run(PointTransformer& model) const {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  EvalJudge judge(config_, delta_);
  const torch::TensorOptions on_device =
      torch::TensorOptions()
          .dtype(ModelScalarType(config_.precision))
          .device(device_);
  absl::Status walked = ForEachEvalChunk(
      config_, on_device, [&](const EvalChunk& c) -> absl::Status {
        const torch::Tensor prediction =
            model->forward(c.input).to(torch::kCPU, torch::kDouble);
        for (int64_t b = 0; b < prediction.size(0); ++b) {
          TS_RETURN_IF_ERROR(
              judge.Add(c.first + b, prediction[b], c.target[b], c.second[b]));
        }
        return absl::OkStatus();
      });
  if (was_training) model->train();
  if (!walked.ok()) return walked;
  return judge.Finish();
}

}  // namespace tailsweep
