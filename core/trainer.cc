#include "core/trainer.h"

#include <torch/nn/utils/clip_grad.h>

#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/checkpoint.h"
#include "core/energy_distance.h"
#include "core/ensemble_metrics.h"
#include "core/schema/job_result.h"

namespace tailsweep {
namespace {

// The training data's seed, kept apart from the model-init seed.
uint64_t DataSeed(uint64_t seed) { return seed ^ 0x5eed0da7a5eed0daULL; }

double SteadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ModelOptions ModelOptionsFor(const JobConfig& c) {
  ModelOptions o;
  o.layers = c.layers;
  o.d_model = c.d_model;
  o.heads = c.heads;
  o.ffn_multiple = c.ffn_multiple;
  o.kernel = c.kernel;
  o.norm = c.norm;
  o.symlog = c.symlog;
  o.attention = {c.query_tile, c.key_tile};
  return o;
}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(
    const JobConfig& config, torch::Device device, TrainerEnv env) {
  if (absl::Status s = ValidateJobConfig(config); !s.ok()) return s;
  if (env.sink == nullptr) {
    return absl::InvalidArgumentError("Trainer needs a metrics sink");
  }
  return std::unique_ptr<Trainer>(new Trainer(config, device, std::move(env)));
}

Trainer::Trainer(const JobConfig& config, torch::Device device, TrainerEnv env)
    : config_(config),
      device_(device),
      env_(std::move(env)),
      sampler_(TaskOf(config), DataSeed(config.seed)),
      collapse_(config.collapse_threshold) {
  if (!env_.now) env_.now = SteadySeconds;
  // TF32 matrix products on CUDA for tf32 only (a process setting: one job
  // runs per process); CPUs have none.
  if (device.is_cuda()) {
    const bool tf32 = config.precision == Precision::kTF32;
    at::globalContext().setAllowTF32CuBLAS(tf32);
    at::globalContext().setAllowTF32CuDNN(tf32);
  }
  torch::manual_seed(config.seed);
  model_ = PointTransformer(ModelOptionsFor(config));
  // Initialised in float32 and then converted, so every precision starts
  // from the same weights.
  model_->to(device, ModelScalarType(config.precision));
  optimizer_ = std::make_unique<torch::optim::AdamW>(
      model_->parameters(),
      torch::optim::AdamWOptions(config.lr).weight_decay(config.weight_decay));
}

absl::Status Trainer::ResumeFrom(const std::string& checkpoint_path) {
  absl::StatusOr<TrainingState> state =
      LoadCheckpoint(checkpoint_path, model_, optimizer_.get());
  if (!state.ok()) return state.status();
  if (JobConfigToKeyValues(state->config) != JobConfigToKeyValues(config_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        checkpoint_path, ": checkpoint belongs to another job config"));
  }
  step_ = state->step;
  sampler_.generator().set_state(state->data_rng_state);
  collapse_.Restore(state->collapse_onset);
  diverged_step_ = state->diverged_step;
  return absl::OkStatus();
}

absl::Status Trainer::Checkpoint() {
  if (env_.checkpoint_dir.empty()) return absl::OkStatus();
  TrainingState state;
  state.config = config_;
  state.step = step_;
  state.data_rng_state = sampler_.generator().get_state();
  state.collapse_onset = collapse_.onset();
  state.diverged_step = diverged_step_;
  return SaveCheckpoint(CheckpointPath(env_.checkpoint_dir, step_), model_,
                        *optimizer_, state);
}

absl::StatusOr<std::optional<EvalSummary>> Trainer::PeriodicEval(int64_t step) {
  if (config_.eval_every == 0 || step % config_.eval_every != 0 ||
      step >= config_.steps || diverged_step_ >= 0) {
    return std::nullopt;
  }
  if (!evaluator_) {
    absl::StatusOr<Evaluator> created = Evaluator::Create(config_, device_);
    if (!created.ok()) return created.status();
    evaluator_.emplace(*std::move(created));
  }
  absl::StatusOr<EvalResult> eval = evaluator_->Run(model_);
  if (!eval.ok()) return eval.status();
  return SummaryOf(*eval);
}

bool Trainer::CollapseStopDue() const {
  return config_.stop_after_collapse >= 0 && collapse_.collapsed() &&
         step_ >= collapse_.onset() + config_.stop_after_collapse;
}

absl::StatusOr<TrainOutcome> Trainer::Run() {
  model_->train();
  const torch::ScalarType model_type = ModelScalarType(config_.precision);
  const torch::TensorOptions options =
      torch::TensorOptions()
          .dtype(LossScalarType(config_.precision))
          .device(device_);
  TrainOutcome outcome;
  while (step_ < config_.steps && diverged_step_ < 0 && !CollapseStopDue()) {
    const int64_t step = step_ + 1;
    const double start = env_.now();
    const double lr = LearningRate(config_, step);
    for (auto& group : optimizer_->param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }
    const EnsembleBatch batch =
        sampler_.Next(config_.batch, config_.n_points, options);
    const bool log = step % config_.log_every == 0;
    std::vector<AttentionStats> attention;
    torch::Tensor prediction =
        model_->forward(batch.input.to(model_type), log ? &attention : nullptr)
            .to(options.dtype());
    if (env_.on_prediction) env_.on_prediction(step, prediction);
    torch::Tensor loss = EnergyDistanceLoss(prediction, batch.target).mean();
    if (env_.on_loss) env_.on_loss(step, loss);
    const double loss_value = loss.item<double>();
    double grad_norm = NAN;
    if (std::isfinite(loss_value)) {
      optimizer_->zero_grad();
      loss.backward();
      grad_norm =
          torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.clip);
    }
    if (!std::isfinite(loss_value) || !std::isfinite(grad_norm)) {
      diverged_step_ = step;  // the step is not applied
    } else {
      optimizer_->step();
    }
    const double spread =
        SpreadRatio(prediction.detach(), batch.target).mean().item<double>();
    collapse_.Observe(step, spread);
    step_ = step;
    outcome.final_loss = loss_value;
    if (log || diverged_step_ == step) {
      StepMetrics m;
      m.step = step;
      m.loss = loss_value;
      m.lr = lr;
      m.grad_norm = grad_norm;
      m.spread_ratio = spread;
      m.step_seconds = env_.now() - start;
      for (const AttentionStats& a : attention) {
        m.attention_entropy.push_back(a.entropy);
        m.attention_max_weight.push_back(a.max_weight);
      }
      // After step_seconds: the evaluation is not the step's cost.
      absl::StatusOr<std::optional<EvalSummary>> eval = PeriodicEval(step);
      if (!eval.ok()) return eval.status();
      m.eval = *eval;
      if (absl::Status s = env_.sink->Write(m); !s.ok()) return s;
    }
    const bool stop = env_.stop_requested && env_.stop_requested();
    if (step % config_.checkpoint_every == 0 || step == config_.steps ||
        diverged_step_ == step || CollapseStopDue() || stop) {
      if (absl::Status s = Checkpoint(); !s.ok()) return s;
    }
    if (stop && step < config_.steps) {
      outcome.stopped = true;
      break;
    }
  }
  outcome.steps_done = step_;
  if (!outcome.stopped && step_ < config_.steps) {
    outcome.early_stop =
        diverged_step_ >= 0 ? kEarlyStopDiverged : kEarlyStopCollapse;
  }
  outcome.diverged = diverged_step_ >= 0;
  outcome.diverged_step = diverged_step_;
  outcome.collapsed = collapse_.collapsed();
  outcome.collapse_step = collapse_.onset();
  return outcome;
}

}  // namespace tailsweep
