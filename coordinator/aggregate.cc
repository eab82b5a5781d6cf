#include "coordinator/aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

namespace tailsweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  return std::accumulate(v.begin(), v.end(), 0.0) /
         static_cast<double>(v.size());
}

// A number field of a result; nullopt when absent or null.
std::optional<double> Number(const nlohmann::json& r, const char* key) {
  if (!r.contains(key) || !r[key].is_number()) return std::nullopt;
  return r[key].get<double>();
}

struct Group {
  CellSummary summary;
  std::vector<double> medians, means, lows, highs, onsets, hills;
};

}  // namespace

std::vector<CellSummary> Summarize(const std::vector<JobRow>& jobs,
                                   bool over_seeds) {
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const JobRow& job : jobs) {
    KeyValues cell;
    for (const auto& kv : job.cell) {
      if (!over_seeds || kv.first != "seed") cell.push_back(kv);
    }
    std::string key;
    for (const auto& [k, v] : cell) key += k + "=" + v + "\n";
    auto [it, added] = groups.try_emplace(key);
    if (added) {
      order.push_back(key);
      it->second.summary.cell = cell;
    }
    Group& g = it->second;
    ++g.summary.jobs;
    if (job.state == JobState::kFailed) ++g.summary.failed;
    if (job.state != JobState::kDone) continue;
    ++g.summary.done;
    const nlohmann::json r =
        nlohmann::json::parse(job.result_json, nullptr, false);
    if (!r.is_object()) continue;
    if (r.value("collapsed", false)) {
      ++g.summary.collapsed;
      if (auto s = Number(r, "collapse_step")) g.onsets.push_back(*s);
    }
    if (r.value("diverged", false)) ++g.summary.diverged;
    if (auto h = Number(r, "hill_stat")) g.hills.push_back(*h);
    const auto median = Number(r, "ratio_median");
    if (!median) continue;
    g.medians.push_back(*median);
    if (auto m = Number(r, "ratio_mean")) g.means.push_back(*m);
    if (auto l = Number(r, "ratio_ci_low")) g.lows.push_back(*l);
    if (auto h = Number(r, "ratio_ci_high")) g.highs.push_back(*h);
  }
  std::vector<CellSummary> out;
  for (const std::string& key : order) {
    Group& g = groups[key];
    CellSummary& s = g.summary;
    s.ratio_median = Median(g.medians);
    s.ratio_mean = Mean(g.means);
    s.ratio_ci_low = Median(g.lows);
    s.ratio_ci_high = Median(g.highs);
    s.seed_min = g.medians.empty()
                     ? kNaN
                     : *std::min_element(g.medians.begin(), g.medians.end());
    s.seed_max = g.medians.empty()
                     ? kNaN
                     : *std::max_element(g.medians.begin(), g.medians.end());
    s.collapse_step = Median(g.onsets);
    s.hill_stat = Median(g.hills);
    s.bold = !std::isnan(s.ratio_ci_low) && s.ratio_ci_low <= 1.0;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tailsweep
