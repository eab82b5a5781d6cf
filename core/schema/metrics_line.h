#ifndef TAILSWEEP_CORE_SCHEMA_METRICS_LINE_H_
#define TAILSWEEP_CORE_SCHEMA_METRICS_LINE_H_

// A job's metrics, from the trainer to the store, in one contract:
// - metrics.jsonl holds one JSON object per logged step (MetricsLine), keys
//   step, loss, lr, grad_norm, spread_ratio, step_seconds, and per layer in
//   order attention_entropy and attention_max_weight (arrays), and at a
//   periodic evaluation "eval": an object with the fields result.json holds
//   for the final one (EvalSummaryJson); non-finite numbers as json_number.h
//   says ("nan", "inf", "-inf");
// - the store keeps named points (StepPoints): loss, lr, grad_norm,
//   spread_ratio, step_seconds, attention_entropy/L, attention_max_weight/L
//   (L = layer from 0), each at the line's step, and eval/<field>
//   (EvalPoints) where the line has an evaluation;
// - the result adds (ResultPoints, job_result.h) eval/<field> at the final
//   step and collapse_onset / diverged_onset at their steps.
// Units: loss is energy distance; lr per step; step_seconds wall seconds;
// entropy in nats; spread and eval ratios are dimensionless. Torch-free.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/schema/metric_point.h"
#include "core/training_signals.h"

namespace tailsweep {

// The line for one step, without a newline.
std::string MetricsLine(const StepMetrics& metrics);

// InvalidArgument for a line that is not a complete metrics object (a
// half-written last line, another file's bytes): callers skip such a line
// only at the end of a file that is still being written.
absl::StatusOr<StepMetrics> ParseMetricsLine(absl::string_view line);

// The points of one step, in the order the header lists them.
std::vector<MetricPoint> StepPoints(const StepMetrics& metrics);

// eval/ratio_mean, eval/ratio_median, eval/ratio_ci_low, eval/ratio_ci_high,
// eval/spread_ratio, eval/delta and eval/hill_stat (when defined) at `step`.
std::vector<MetricPoint> EvalPoints(const EvalSummary& eval, int64_t step);

// An evaluation's fields as one flat JSON object: ratio_mean, ratio_median,
// ratio_ci_low, ratio_ci_high, spread_ratio, delta, eval_instances and
// hill_stat (when defined).
nlohmann::json EvalSummaryJson(const EvalSummary& eval);
// InvalidArgument "<what>: field ..." for a missing or mistyped field.
absl::StatusOr<EvalSummary> ParseEvalSummary(const nlohmann::json& object,
                                             absl::string_view what);

// Any program's metrics line (command jobs, docs/child-contract.md): a JSON
// object with an integer "step" >= 1; every other key is a metric: a number
// or "nan"/"inf"/"-inf" is one point NAME, a list NAME/0, NAME/1, ..., an
// object NAME/KEY (nested as deep as it goes). Names are at most 128 bytes
// and a line gives at most kMaxPointsPerLine points. InvalidArgument says
// what is wrong (not JSON, no step, a value that is not a number, ...).
inline constexpr size_t kMaxPointsPerLine = 10000;
struct FlatLine {
  int64_t step = 0;
  std::vector<MetricPoint> points;
};
absl::StatusOr<FlatLine> FlattenMetricsLine(absl::string_view line);

// Rewrites the metrics file at `path` (atomically) to its lines up to
// `step`, dropping the rest and any torn line (0: empty). Any line with an
// integer "step" counts (train lines and any program's); a line that is
// not one is dropped, and the lines after it are kept if their step is. A job resumed from
// step k does this before it logs; the worker does it too before it starts
// the child, so its relay never reads an earlier attempt's lines past k.
// A missing file becomes an empty one.
absl::Status KeepMetricsUpTo(const std::string& path, int64_t step);

// "attention_entropy/3" and the like.
std::string LayerMetricName(absl::string_view base, size_t layer);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_METRICS_LINE_H_
