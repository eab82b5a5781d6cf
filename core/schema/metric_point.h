#ifndef TAILSWEEP_CORE_SCHEMA_METRIC_POINT_H_
#define TAILSWEEP_CORE_SCHEMA_METRIC_POINT_H_

// The metric names every process shares, and the one point type that
// carries a value under one of them. A new metric is a constant here (and
// the line that writes it, metrics_line.h). Non-finite values are kept as
// they are (NaN, +-inf) in memory and on the wire; in JSON files they are
// spelled as json_number.h says.

#include <cstdint>
#include <string>

namespace tailsweep {

inline constexpr char kLossMetric[] = "loss";
inline constexpr char kLrMetric[] = "lr";
inline constexpr char kGradNormMetric[] = "grad_norm";
inline constexpr char kSpreadRatioMetric[] = "spread_ratio";
inline constexpr char kStepSecondsMetric[] = "step_seconds";
inline constexpr char kAttentionEntropyMetric[] = "attention_entropy";
inline constexpr char kAttentionMaxWeightMetric[] = "attention_max_weight";
inline constexpr char kEvalMetricPrefix[] = "eval/";
inline constexpr char kCollapseOnsetMetric[] = "collapse_onset";
inline constexpr char kDivergedOnsetMetric[] = "diverged_onset";

// One metric point, the same record from the child's metrics file through
// the worker, the wire (v1::MetricPoint, converted in proto/) and the store
// to the CLI and the report.
struct MetricPoint {
  std::string name;
  int64_t step = 0;
  double value = 0;
  bool operator==(const MetricPoint& o) const;  // NaN equals NaN here
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_METRIC_POINT_H_
