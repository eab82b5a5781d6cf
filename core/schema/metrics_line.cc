#include "core/schema/metrics_line.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/schema/json_number.h"

namespace tailsweep {
namespace {

using nlohmann::json;

json Numbers(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(JsonNumber(v));
  return out;
}

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("metrics line: ", why));
}

}  // namespace

bool NamedPoint::operator==(const NamedPoint& o) const {
  const bool same_value =
      value == o.value || (std::isnan(value) && std::isnan(o.value));
  return name == o.name && step == o.step && same_value;
}

std::string MetricsLine(const StepMetrics& m) {
  return json{{"step", m.step},
              {kLossMetric, JsonNumber(m.loss)},
              {kLrMetric, JsonNumber(m.lr)},
              {kGradNormMetric, JsonNumber(m.grad_norm)},
              {kSpreadRatioMetric, JsonNumber(m.spread_ratio)},
              {kStepSecondsMetric, JsonNumber(m.step_seconds)},
              {kAttentionEntropyMetric, Numbers(m.attention_entropy)},
              {kAttentionMaxWeightMetric, Numbers(m.attention_max_weight)}}
      .dump();
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
  return m;
}

std::string LayerMetricName(absl::string_view base, size_t layer) {
  return absl::StrCat(base, "/", layer);
}

std::vector<NamedPoint> StepPoints(const StepMetrics& m) {
  std::vector<NamedPoint> out = {{kLossMetric, m.step, m.loss},
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
  return out;
}

}  // namespace tailsweep
