#include "core/schema/metrics_line.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "core/schema/json_number.h"
#include "core/schema/status_macros.h"

namespace tailsweep {
namespace {

using nlohmann::json;

json Numbers(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(JsonNumber(v));
  return out;
}

// The key of a periodic evaluation in a metrics line.
constexpr char kEvalLineKey[] = "eval";

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("metrics line: ", why));
}

}  // namespace

bool MetricPoint::operator==(const MetricPoint& o) const {
  const bool same_value =
      value == o.value || (std::isnan(value) && std::isnan(o.value));
  return name == o.name && step == o.step && same_value;
}

std::string MetricsLine(const StepMetrics& m) {
  json line{{"step", m.step},
            {kLossMetric, JsonNumber(m.loss)},
            {kLrMetric, JsonNumber(m.lr)},
            {kGradNormMetric, JsonNumber(m.grad_norm)},
            {kSpreadRatioMetric, JsonNumber(m.spread_ratio)},
            {kStepSecondsMetric, JsonNumber(m.step_seconds)},
            {kAttentionEntropyMetric, Numbers(m.attention_entropy)},
            {kAttentionMaxWeightMetric, Numbers(m.attention_max_weight)}};
  if (m.eval) line[kEvalLineKey] = EvalSummaryJson(*m.eval);
  return line.dump();
}

absl::StatusOr<StepMetrics> ParseMetricsLine(absl::string_view line) {
  const json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Bad("not a JSON object");
  StepMetrics m;
  const auto step = doc.find("step");
  if (step == doc.end() || !step->is_number_integer() ||
      step->get<int64_t>() < 1) {
    return Bad("no step (an integer >= 1)");
  }
  m.step = step->get<int64_t>();
  struct Field {
    const char* name;
    double* out;
  };
  for (const Field& f : {Field{kLossMetric, &m.loss}, Field{kLrMetric, &m.lr},
                         Field{kGradNormMetric, &m.grad_norm},
                         Field{kSpreadRatioMetric, &m.spread_ratio},
                         Field{kStepSecondsMetric, &m.step_seconds}}) {
    const std::optional<double> v = NumberAt(doc, f.name);
    if (!v) return Bad(absl::StrCat("no number for '", f.name, "'"));
    *f.out = *v;
  }
  struct Layers {
    const char* name;
    std::vector<double>* out;
  };
  for (const Layers& f :
       {Layers{kAttentionEntropyMetric, &m.attention_entropy},
        Layers{kAttentionMaxWeightMetric, &m.attention_max_weight}}) {
    const auto it = doc.find(f.name);
    if (it == doc.end()) continue;  // lines written before they existed
    if (!it->is_array()) return Bad(absl::StrCat("'", f.name, "' not a list"));
    for (const json& item : *it) {
      const std::optional<double> v = NumberFromJson(item);
      if (!v) return Bad(absl::StrCat("'", f.name, "' holds a non-number"));
      f.out->push_back(*v);
    }
  }
  if (const auto it = doc.find(kEvalLineKey); it != doc.end()) {
    if (!it->is_object()) return Bad("'eval' not an object");
    absl::StatusOr<EvalSummary> eval =
        ParseEvalSummary(*it, "metrics line eval");
    if (!eval.ok()) return eval.status();
    m.eval = *eval;
  }
  return m;
}

std::vector<MetricPoint> EvalPoints(const EvalSummary& e, int64_t step) {
  const std::string p = kEvalMetricPrefix;
  std::vector<MetricPoint> out = {{p + "ratio_mean", step, e.ratio_mean},
                                  {p + "ratio_median", step, e.ratio_median},
                                  {p + "ratio_ci_low", step, e.ratio_ci_low},
                                  {p + "ratio_ci_high", step, e.ratio_ci_high},
                                  {p + "spread_ratio", step, e.spread_ratio},
                                  {p + "delta", step, e.delta}};
  if (e.hill_stat) out.push_back({p + "hill_stat", step, *e.hill_stat});
  return out;
}

json EvalSummaryJson(const EvalSummary& e) {
  json doc = {{"ratio_mean", JsonNumber(e.ratio_mean)},
              {"ratio_median", JsonNumber(e.ratio_median)},
              {"ratio_ci_low", JsonNumber(e.ratio_ci_low)},
              {"ratio_ci_high", JsonNumber(e.ratio_ci_high)},
              {"spread_ratio", JsonNumber(e.spread_ratio)},
              {"delta", JsonNumber(e.delta)},
              {"eval_instances", e.eval_instances}};
  if (e.hill_stat) doc["hill_stat"] = JsonNumber(*e.hill_stat);
  return doc;
}

absl::StatusOr<EvalSummary> ParseEvalSummary(const json& object,
                                             absl::string_view what) {
  JsonFields in(object, what);
  EvalSummary e;
  e.ratio_mean = in.Number("ratio_mean");
  e.ratio_median = in.Number("ratio_median");
  e.ratio_ci_low = in.Number("ratio_ci_low");
  e.ratio_ci_high = in.Number("ratio_ci_high");
  e.spread_ratio = in.Number("spread_ratio");
  e.delta = in.Number("delta");
  e.eval_instances = in.Integer("eval_instances");
  e.hill_stat = in.OptionalNumber("hill_stat");
  if (!in.status().ok()) return in.status();
  return e;
}

absl::Status KeepMetricsUpTo(const std::string& path, int64_t step) {
  std::string kept;
  if (step > 0) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      // Garbage a program wrote, or a torn line (a crash mid-write), is
      // dropped; a line past `step` ends the kept part.
      const json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_object()) continue;
      const auto s = doc.find("step");
      if (s == doc.end() || !s->is_number_integer()) continue;
      if (s->get<int64_t>() > step) break;
      absl::StrAppend(&kept, line, "\n");
    }
  }
  return WriteFileAtomic(path, kept);
}

namespace {

absl::Status Flatten(const std::string& name, const json& value,
                     std::vector<MetricPoint>& out, int64_t step) {
  if (name.size() > 128) {
    return Bad(absl::StrCat("metric name '", name.substr(0, 40),
                            "...' is longer than 128 bytes"));
  }
  if (out.size() > kMaxPointsPerLine) {
    return Bad(
        absl::StrCat("more than ", kMaxPointsPerLine, " values in one line"));
  }
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      TS_RETURN_IF_ERROR(
          Flatten(absl::StrCat(name, "/", i), value[i], out, step));
    }
    return absl::OkStatus();
  }
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) {
      TS_RETURN_IF_ERROR(Flatten(absl::StrCat(name, "/", k), v, out, step));
    }
    return absl::OkStatus();
  }
  if (value.is_boolean()) {
    out.push_back({name, step, value.get<bool>() ? 1.0 : 0.0});
    return absl::OkStatus();
  }
  const std::optional<double> v = NumberFromJson(value);
  if (!v) {
    return Bad(absl::StrCat("'", name, "' is ", value.dump().substr(0, 40),
                            ", not a number (or \"nan\", \"inf\", \"-inf\")"));
  }
  out.push_back({name, step, *v});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FlatLine> FlattenMetricsLine(absl::string_view line) {
  const json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad("not JSON");
  if (!doc.is_object()) return Bad("not a JSON object");
  const auto step = doc.find("step");
  if (step == doc.end() || !step->is_number_integer() ||
      step->get<int64_t>() < 1) {
    return Bad("no step (an integer >= 1)");
  }
  FlatLine out;
  out.step = step->get<int64_t>();
  for (const auto& [k, v] : doc.items()) {
    if (k == "step") continue;
    if (k.empty()) return Bad("a metric with an empty name");
    TS_RETURN_IF_ERROR(Flatten(k, v, out.points, out.step));
  }
  return out;
}

std::string LayerMetricName(absl::string_view base, size_t layer) {
  return absl::StrCat(base, "/", layer);
}

std::vector<MetricPoint> StepPoints(const StepMetrics& m) {
  std::vector<MetricPoint> out = {{kLossMetric, m.step, m.loss},
                                  {kLrMetric, m.step, m.lr},
                                  {kGradNormMetric, m.step, m.grad_norm},
                                  {kSpreadRatioMetric, m.step, m.spread_ratio},
                                  {kStepSecondsMetric, m.step, m.step_seconds}};
  for (size_t l = 0; l < m.attention_entropy.size(); ++l) {
    out.push_back({LayerMetricName(kAttentionEntropyMetric, l), m.step,
                   m.attention_entropy[l]});
  }
  for (size_t l = 0; l < m.attention_max_weight.size(); ++l) {
    out.push_back({LayerMetricName(kAttentionMaxWeightMetric, l), m.step,
                   m.attention_max_weight[l]});
  }
  if (m.eval) {
    for (MetricPoint& p : EvalPoints(*m.eval, m.step))
      out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tailsweep
