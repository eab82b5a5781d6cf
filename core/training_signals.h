#ifndef TAILSWEEP_CORE_TRAINING_SIGNALS_H_
#define TAILSWEEP_CORE_TRAINING_SIGNALS_H_

// What a training run reports, and the small pure pieces of its loop:
// the learning-rate schedule and collapse detection. Torch-free.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/job_config.h"

namespace tailsweep {

// An evaluation on the held-out instances (science.md section 6): the
// distance ratios' summary; what result.json holds at the end and a metrics
// line holds at a periodic evaluation (job_config.h's eval_every).
struct EvalSummary {
  double ratio_mean = 0, ratio_median = 0;
  double ratio_ci_low = 0, ratio_ci_high = 0;  // 95% bootstrap over instances
  double spread_ratio = 0;
  double delta = 0;  // the sampling reference
  int64_t eval_instances = 0;
  std::optional<double> hill_stat;  // mirrored Pareto only, when defined
};

// A few points of one evaluation instance, for figures (the paper's
// collapse figure): the first points of the target sample and of the
// model's prediction (both i.i.d., so the first points are a sample).
struct PointSample {
  int64_t instance = 0;  // index among the evaluation instances
  std::vector<std::vector<double>> target, prediction;  // [point][coordinate]
};
// What a final evaluation keeps: this many instances, points each.
inline constexpr int kSampleInstances = 2, kSamplePoints = 128;

// One logged step. Steps count from 1.
struct StepMetrics {
  int64_t step = 0;
  double loss = 0;  // mean energy distance over the step's trials
  double lr = 0;
  double grad_norm = 0;     // before clipping
  double spread_ratio = 0;  // mean over the step's trials
  double step_seconds = 0;  // wall time of the step
  // Per layer, in order: mean attention entropy and largest weight.
  std::vector<double> attention_entropy;
  std::vector<double> attention_max_weight;
  // Set at a periodic evaluation step, after the step's update.
  std::optional<EvalSummary> eval;
};

// Where a trainer sends its metrics. Implementations decide where they go
// (a file, a batch for the coordinator, memory in tests). A non-OK status
// stops the run with that status.
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual absl::Status Write(const StepMetrics& metrics) = 0;
};

// Linear warm-up from lr/warmup to lr over `warmup` steps, then cosine
// decay to 0 at `steps`. REQUIRES: 1 <= step <= steps, warmup <= steps.
double LearningRate(const JobConfig& config, int64_t step);

// Collapse: the output concentrated near one location. One rule for every
// kernel [choice, revised from science.md 6's "stays below to the end"]:
// - the onset is the first step (every step, logged or not) whose spread
//   ratio is below
//   `collapse_threshold` (NaN, a diverged output, counts as below). A
//   recovery afterwards does not undo it: CPU runs whose spread hits 0.009,
//   partly recovers and ends at 0.15 with a distance ratio of 28 are
//   collapsed runs, which the old rule called healthy;
// - a run that never went below has collapsed at its last step when its
//   final evaluation's spread ratio is below kEvalCollapseSpread
//   (CollapseOnsetAfterEvaluation).
inline constexpr double kEvalCollapseSpread = 0.25;

class CollapseTracker {
 public:
  explicit CollapseTracker(double threshold) : threshold_(threshold) {}

  void Observe(int64_t step, double spread_ratio);
  bool collapsed() const { return below_since_ >= 0; }
  // The onset step, or -1 when not collapsed.
  int64_t onset() const { return below_since_; }

  // For checkpoints: the whole state is the onset.
  void Restore(int64_t onset) { below_since_ = onset; }

 private:
  double threshold_;
  int64_t below_since_ = -1;
};

// The onset once the final evaluation (at `final_step`, spread ratio
// `eval_spread`) is known: `onset` when there is one, else `final_step` when
// the evaluation's spread is below kEvalCollapseSpread (or NaN), else -1.
int64_t CollapseOnsetAfterEvaluation(int64_t onset, int64_t final_step,
                                     double eval_spread);

// A run's collapse under each rule (job_config.h's CollapseRule), chosen
// before the data: the step of its onset, -1 for none. A logged or
// evaluated spread that is NaN counts as below.
inline constexpr int kCollapseRunLength = 3;  // logged_3
struct CollapseOnsets {
  int64_t any_step = -1;     // the tracker's: every training step
  int64_t logged_step = -1;  // the first logged step below
  int64_t logged_run = -1;   // the first of kCollapseRunLength in a row
  int64_t final_eval = -1;   // the last step, when the evaluation is below
};
// `logged`: the logged steps' (step, spread ratio) in step order.
CollapseOnsets JudgeCollapse(
    int64_t any_step_onset,
    const std::vector<std::pair<int64_t, double>>& logged, double threshold,
    int64_t final_step, double eval_spread);
int64_t OnsetUnder(const CollapseOnsets& onsets, CollapseRule rule);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_TRAINING_SIGNALS_H_
