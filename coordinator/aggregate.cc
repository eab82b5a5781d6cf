#include "coordinator/aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/number_text.h"
#include "core/schema/job_result.h"
#include "core/statistics.h"

namespace tailsweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// core/statistics.h's, NaN for no values.
double MedianOrNaN(const std::vector<double>& v) {
  return v.empty() ? kNaN : Median(v);
}
double MeanOrNaN(const std::vector<double>& v) {
  return v.empty() ? kNaN : Mean(v);
}

// Adds v unless it is NaN (a value that does not exist).
void Add(std::vector<double>& to, double v) {
  if (!std::isnan(v)) to.push_back(v);
}

std::string CellKey(const KeyValues& cell) {
  std::string key;
  for (const auto& [k, v] : cell) key += k + "=" + v + "\n";
  return key;
}

KeyValues WithoutSeed(const KeyValues& cell, bool over_seeds) {
  KeyValues out;
  for (const auto& kv : cell) {
    if (!over_seeds || kv.first != "seed") out.push_back(kv);
  }
  return out;
}

// The steps an early-stopped run did not run: its config's `steps` less
// the steps it did.
int64_t StepsSaved(const TrainResult& r) {
  for (const auto& [key, value] : r.config) {
    int64_t steps = 0;
    if (key == "steps" && absl::SimpleAtoi(value, &steps)) {
      return std::max<int64_t>(steps - r.steps_done, 0);
    }
  }
  return 0;
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
    const KeyValues cell = WithoutSeed(job.cell, over_seeds);
    const std::string key = CellKey(cell);
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
    const absl::StatusOr<TrainResult> r = ParseTrainResult(job.result_json);
    if (!r.ok()) continue;
    if (r->collapsed) {
      ++g.summary.collapsed;
      if (r->collapse_step >= 0) g.onsets.push_back(r->collapse_step);
    }
    if (r->diverged) ++g.summary.diverged;
    if (!r->early_stop.empty()) {
      ++g.summary.stopped_early;
      g.summary.steps_saved += StepsSaved(*r);
    }
    if (!r->evaluation) continue;
    const EvalSummary& e = *r->evaluation;
    if (e.hill_stat) Add(g.hills, *e.hill_stat);
    if (std::isnan(e.ratio_median)) continue;
    g.medians.push_back(e.ratio_median);
    Add(g.means, e.ratio_mean);
    Add(g.lows, e.ratio_ci_low);
    Add(g.highs, e.ratio_ci_high);
  }
  std::vector<CellSummary> out;
  for (const std::string& key : order) {
    Group& g = groups[key];
    CellSummary& s = g.summary;
    s.ratio_median = MedianOrNaN(g.medians);
    s.ratio_mean = MeanOrNaN(g.means);
    s.ratio_ci_low = MedianOrNaN(g.lows);
    s.ratio_ci_high = MedianOrNaN(g.highs);
    s.seed_min = g.medians.empty()
                     ? kNaN
                     : *std::min_element(g.medians.begin(), g.medians.end());
    s.seed_max = g.medians.empty()
                     ? kNaN
                     : *std::max_element(g.medians.begin(), g.medians.end());
    s.collapse_step = MedianOrNaN(g.onsets);
    s.hill_stat = MedianOrNaN(g.hills);
    s.bold = !std::isnan(s.ratio_ci_low) && s.ratio_ci_low <= 1.0;
    out.push_back(std::move(s));
  }
  return out;
}

PivotTable Pivot(const std::vector<CellSummary>& summaries,
                 const std::string& group_by) {
  PivotTable t;
  t.group_by = group_by;
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < summaries.size(); ++i) {
    std::string column = "-";
    std::vector<std::string> parts;
    for (const auto& [k, v] : summaries[i].cell) {
      if (k == group_by) {
        column = v;
      } else {
        parts.push_back(k + "=" + v);
      }
    }
    auto c = std::find(t.columns.begin(), t.columns.end(), column);
    const size_t col = static_cast<size_t>(c - t.columns.begin());
    if (c == t.columns.end()) {
      t.columns.push_back(column);
      for (PivotTable::Row& r : t.rows) r.cells.push_back(-1);
    }
    const std::string label = parts.empty() ? "-" : absl::StrJoin(parts, " ");
    auto [it, added] = row_of.try_emplace(label, t.rows.size());
    if (added) {
      t.rows.push_back({label, std::vector<int>(t.columns.size(), -1)});
    }
    t.rows[it->second].cells[col] = static_cast<int>(i);
  }
  return t;
}

std::vector<TailsSummary> SummarizeTails(const std::vector<JobRow>& jobs,
                                         bool over_seeds) {
  struct Values {
    TailsSummary first;  // cell and row identity
    std::vector<double> ed_mean, ed_sd, w2_mean, w2_sd, ed_noise, w2_noise;
  };
  std::vector<std::string> order;
  std::map<std::string, Values> groups;
  for (const JobRow& job : jobs) {
    if (job.state != JobState::kDone) continue;
    const absl::StatusOr<std::vector<TailsRow>> rows =
        ParseTailsResult(job.result_json);
    if (!rows.ok()) continue;
    const KeyValues cell = WithoutSeed(job.cell, over_seeds);
    for (const TailsRow& r : *rows) {
      const std::string key =
          absl::StrCat(CellKey(cell), FormatDouble(r.seam), "/", r.n, "/",
                       FormatDouble(r.index));
      auto [it, added] = groups.try_emplace(key);
      Values& v = it->second;
      if (added) {
        order.push_back(key);
        v.first.cell = cell;
        v.first.row = r;
      }
      ++v.first.seeds;
      v.ed_mean.push_back(r.ed_mean);
      v.ed_sd.push_back(r.ed_sd);
      v.w2_mean.push_back(r.w2_mean);
      v.w2_sd.push_back(r.w2_sd);
      v.ed_noise.push_back(r.ed_noise);
      v.w2_noise.push_back(r.w2_noise);
    }
  }
  std::vector<TailsSummary> out;
  for (const std::string& key : order) {
    Values& v = groups[key];
    TailsSummary s = v.first;
    // One seed: its own values, bit for bit (the median of one value).
    s.row.ed_mean = MedianOrNaN(v.ed_mean);
    s.row.ed_sd = MedianOrNaN(v.ed_sd);
    s.row.w2_mean = MedianOrNaN(v.w2_mean);
    s.row.w2_sd = MedianOrNaN(v.w2_sd);
    s.row.ed_noise = MedianOrNaN(v.ed_noise);
    s.row.w2_noise = MedianOrNaN(v.w2_noise);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tailsweep
