#include "coordinator/stop_rules.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/number_text.h"
#include "core/schema/status_macros.h"

namespace tailsweep {

bool StopRules::Stops(const AshaRule& rule, double value,
                      std::vector<double> values) {
  // Better first; NaN last.
  auto better = [&](double a, double b) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return rule.maximize ? a > b : a < b;
  };
  std::sort(values.begin(), values.end(), better);
  // The best 1/reduction go on: at least one.
  const size_t keep = std::max<size_t>(1, values.size() / rule.reduction);
  if (values.size() < static_cast<size_t>(rule.reduction)) return false;
  const double cutoff = values[keep - 1];
  return std::isnan(value) || better(cutoff, value);
}

absl::StatusOr<StopRules::Before> StopRules::Read(
    const std::string& job_id, const std::vector<MetricPoint>& points) {
  Before out;
  if (points.empty()) return out;
  absl::StatusOr<std::vector<Store::StopRuleOf>> rules =
      store_->StopRulesOf(job_id);
  if (!rules.ok()) return rules.status();
  for (const Store::StopRuleOf& r : *rules) {
    std::optional<AshaRule> asha = AshaFromJson(r.rule);
    if (!asha) continue;
    const bool named = std::any_of(
        points.begin(), points.end(),
        [&](const MetricPoint& p) { return p.name == asha->metric; });
    if (!named) continue;
    absl::StatusOr<int64_t> max = store_->MaxStep(job_id, asha->metric);
    if (!max.ok()) return max.status();
    out.rules.push_back({r.sweep, *asha, *max});
  }
  return out;
}

absl::StatusOr<std::string> StopRules::Judge(
    const std::string& job_id, const std::vector<MetricPoint>& points,
    const Before& before) {
  {
    absl::MutexLock lock(&mu_);
    auto it = stopped_.find(job_id);
    if (it != stopped_.end()) return it->second;  // said before: again
  }
  for (const Before::Rule& r : before.rules) {
    int64_t reached = -1;
    for (const MetricPoint& p : points) {
      if (p.name == r.asha.metric) reached = std::max(reached, p.step);
    }
    // Each rung its points reach for the first time, lowest first.
    for (int64_t rung = r.asha.min_steps; rung > 0 && rung <= reached;
         rung = rung > (int64_t{1} << 50) / r.asha.reduction
                    ? 0
                    : rung * r.asha.reduction) {
      if (rung <= r.max_step) continue;  // judged when it was reached
      absl::StatusOr<std::vector<double>> values =
          store_->ValuesAtStep(r.sweep, r.asha.metric, rung);
      if (!values.ok()) return values.status();
      // The job's own value there: its last point at or before the rung.
      absl::StatusOr<std::vector<double>> own =
          store_->ValuesAtStep(r.sweep, r.asha.metric, rung, job_id);
      if (!own.ok()) return own.status();
      const double value = own->empty() ? std::nan("") : own->front();
      if (!Stops(r.asha, value, *values)) continue;
      const std::string why = absl::StrCat(
          "asha: ", r.asha.metric, " ", FormatDouble(value), " at step ", rung,
          " is outside the best 1/", r.asha.reduction, " of the ",
          values->size(), " runs of sweep ", r.sweep, " there");
      absl::MutexLock lock(&mu_);
      stopped_[job_id] = why;
      return why;
    }
  }
  return std::string();
}

void StopRules::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  stopped_.erase(job_id);
}

}  // namespace tailsweep
