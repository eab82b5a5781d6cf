// The `train` kind: one training run of the paper's model (core/job_config.h
// is its schema), run as `tailsweep-lab lab train`; its result is
// job_result.h's TrainResult, its outcomes collapsed, diverged and
// ratio_above X, judged by the child.

#include "core/schema/train_kind.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/job_config.h"
#include "core/number_text.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "core/schema/schema_kind.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"
#include "core/statistics.h"

namespace tailsweep {
namespace train_kind {  // named: the kinds' files share unity batches

absl::StatusOr<KeyValues> Params(const SweepSpec& spec, const KeyValues& cell) {
  JobConfig config;
  TS_RETURN_IF_ERROR((SchemaConfig<JobConfig, SetJobKey>(spec, cell, &config)));
  TS_RETURN_IF_ERROR(ValidateJobConfig(config));
  return JobConfigToKeyValues(config);
}

KeyValues Defaults() {
  return JobConfigToKeyValues(JobConfig{}, KeyListing::kEvery);
}

absl::Status ParseOutcome(const std::string& text, const SweepSpec&,
                          SearchSpec& s) {
  const std::vector<std::string> words =
      absl::StrSplit(text, ' ', absl::SkipEmpty());
  double above = 0;
  if (words.empty()) return absl::OkStatus();  // collapsed, the default
  if (words.size() == 1 &&
      (words[0] == "collapsed" || words[0] == "diverged")) {
    s.outcome = s.holds = words[0];
    s.fact.clear();
  } else if (words.size() == 2 && words[0] == "ratio_above" &&
             absl::SimpleAtod(words[1], &above) && std::isfinite(above) &&
             above > 0) {
    s.outcome = absl::StrCat("ratio_above ", FormatDouble(above));
    s.holds.clear();
    s.fact = "ratio_median";  // Outcomes' fact
    s.above = above;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("outcome '", text,
                     "': allowed: collapsed, diverged, or ratio_above X (X > "
                     "0: the median distance ratio above X)"));
  }
  return absl::OkStatus();
}

// Every job key as --set KEY=VALUE; its GPUs made the only visible ones;
// --resume when a checkpoint is there.
absl::StatusOr<ChildCommand> Child(const ChildJob& job) {
  ChildCommand out = LabChildCommand(job);
  out.argv.push_back(kTrainKindName);
  JobConfig config;
  for (const auto& [key, value] : job.params) {
    TS_RETURN_IF_ERROR(SetJobKey(config, key, value));
    out.argv.push_back("--set");
    out.argv.push_back(absl::StrCat(key, "=", value));
  }
  const bool cuda = absl::StartsWith(job.device, "cuda");
  if (absl::StartsWith(job.device, "cuda:")) {
    out.env.push_back(
        absl::StrCat("CUDA_VISIBLE_DEVICES=", job.visible_devices.empty()
                                                  ? job.device.substr(5)
                                                  : job.visible_devices));
  }
  out.argv.insert(out.argv.end(),
                  {"--out-dir", job.dir, "--device", cuda ? "cuda" : "cpu"});
  if (NewestCheckpointIn(JobPath(job.dir, kCheckpointDirName)).ok()) {
    out.argv.push_back("--resume");
  }
  return out;
}

// Done, or stopped when the result says so (at a checkpoint, on SIGTERM or
// when its lease file ran out).
FinishedJob ReadFinished(const std::string& dir, int exit_code) {
  if (std::optional<FinishedJob> ended = ReadExit(exit_code, true)) {
    return *ended;
  }
  FinishedJob out;
  absl::StatusOr<std::string> text = ReadResultFile(dir);
  if (!text.ok()) {
    out.error = std::string(text.status().message());
    out.permanent = absl::IsResourceExhausted(text.status());  // too large
    return out;
  }
  absl::StatusOr<TrainResult> result = ParseTrainResult(*text);
  if (!result.ok()) {
    out.error = std::string(result.status().message());
    return out;
  }
  out.outcome = result->stopped ? JobOutcome::kStopped : JobOutcome::kDone;
  out.lease_ran_out = result->stopped && result->lease_ran_out;
  out.result_json = *std::move(text);
  return out;
}

std::vector<MetricPoint> ResultPointsOf(const std::string& json) {
  absl::StatusOr<TrainResult> result = ParseTrainResult(json);
  if (!result.ok()) return {};
  return ResultPoints(*result);
}

absl::StatusOr<int64_t> CheckResult(absl::string_view json) {
  absl::StatusOr<TrainResult> result = ParseTrainResult(json);
  if (!result.ok()) return result.status();
  return result->resumed_from_step;
}

// ---- Results: per cell, and over training seeds (the jobs whose cells
// differ only in `seed` form one row). Per job, the result holds the median
// and mean distance ratio over held-out instances and its 95% bootstrap
// interval (instance variability at fixed weights, science.md). Over seeds:
// ratio_median / ratio_mean are the median / mean of the per-seed values;
// ratio_ci_low / ratio_ci_high the median of the interval ends; seed_min /
// seed_max the range of the per-seed medians (training-seed variability,
// which the bootstrap interval does not describe); bold when ratio_ci_low
// <= 1; collapsed / diverged count seeds, collapse_step is the median onset
// of those that collapsed. A result that does not parse counts as done
// without values.

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double MedianOrNaN(const std::vector<double>& v) {
  return v.empty() ? kNaN : Median(v);
}

// The steps an early-stopped run did not run: its config's `steps` less the
// steps it did.
int64_t StepsSaved(const TrainResult& r) {
  for (const auto& [key, value] : r.config) {
    int64_t steps = 0;
    if (key == "steps" && absl::SimpleAtoi(value, &steps)) {
      return std::max<int64_t>(steps - r.steps_done, 0);
    }
  }
  return 0;
}

// The collapse rules side by side, in the table's order.
constexpr CollapseRule kRules[4] = {
    CollapseRule::kAnyStep, CollapseRule::kLoggedStep, CollapseRule::kLoggedRun,
    CollapseRule::kFinalEval};

struct CellValues {
  std::vector<double> medians, means, lows, highs, onsets, hills;
  int64_t collapsed = 0, diverged = 0, stopped_early = 0, steps_saved = 0;
  // Collapsed under each of kRules, of the results that say;
  // `unjudged`: those that do not.
  int64_t by_rule[4] = {0, 0, 0, 0};
  int64_t unjudged = 0;
  void Add(const TrainResult& r) {
    if (r.collapse_onsets) {
      for (size_t i = 0; i < 4; ++i) {
        by_rule[i] += OnsetUnder(*r.collapse_onsets, kRules[i]) >= 0 ? 1 : 0;
      }
    } else if (r.evaluation) {
      ++unjudged;
    }
    auto add = [](std::vector<double>& to, double v) {
      if (!std::isnan(v)) to.push_back(v);
    };
    if (r.collapsed) {
      ++collapsed;
      if (r.collapse_step >= 0) onsets.push_back(r.collapse_step);
    }
    if (r.diverged) ++diverged;
    if (!r.early_stop.empty()) {
      ++stopped_early;
      steps_saved += StepsSaved(r);
    }
    if (!r.evaluation) return;
    const EvalSummary& e = *r.evaluation;
    if (e.hill_stat) add(hills, *e.hill_stat);
    if (std::isnan(e.ratio_median)) return;
    medians.push_back(e.ratio_median);
    add(means, e.ratio_mean);
    add(lows, e.ratio_ci_low);
    add(highs, e.ratio_ci_high);
  }
};

// One cell as people read it: "median [low, high]", " b" when the interval
// reaches 1, "*" collapsed, "!" diverged, "~" stopped early (k/n of n
// seeds); over several seeds also n and the seeds' range.
std::string Headline(const JobGroup& g, const CellValues& v, double median,
                     double low, double high) {
  const int64_t jobs = static_cast<int64_t>(g.jobs.size());
  if (std::isnan(median)) {
    if (v.diverged > 0) return "diverged";
    if (g.failed > 0) return "failed";
    return g.done == jobs ? "-" : "pending";
  }
  std::string text = absl::StrFormat("%.3f [%.3f, %.3f]", median, low, high);
  if (low <= 1.0) text += " b";
  const auto of = [&](int64_t k) {
    return jobs > 1 ? absl::StrCat(k, "/", g.done) : std::string();
  };
  if (v.collapsed > 0) text += " *" + of(v.collapsed);
  if (v.diverged > 0) text += " !" + of(v.diverged);
  if (v.stopped_early > 0) text += " ~" + of(v.stopped_early);
  if (jobs > 1) {
    const auto [lo, hi] =
        std::minmax_element(v.medians.begin(), v.medians.end());
    absl::StrAppend(&text,
                    absl::StrFormat(" n=%d (%.3f-%.3f)", g.done, *lo, *hi));
  }
  return text;
}

ResultsTable Summarize(absl::Span<const ResultJob> jobs, bool over_seeds) {
  const std::vector<JobGroup> groups = GroupJobs(jobs, over_seeds);
  ResultsTable t;
  AddCellColumns(groups, t);
  const size_t first = t.columns.size();
  for (const char* name : {"ratio_median", "ratio_mean", "ratio_ci_low",
                           "ratio_ci_high", "seed_min", "seed_max"}) {
    t.AddColumn(name, ColumnType::kNumber);
  }
  t.AddColumn("bold", ColumnType::kBoolean);
  t.AddColumn("collapsed", ColumnType::kInteger);
  t.AddColumn("collapse_step", ColumnType::kNumber);
  // Side by side, whatever rule `collapsed` follows (job_config.h's
  // collapse_rule): NaN where a seed's result predates the rules.
  for (CollapseRule rule : kRules) {
    t.AddColumn(absl::StrCat("collapsed_", CollapseRuleName(rule)),
                ColumnType::kNumber);
  }
  t.AddColumn("diverged", ColumnType::kInteger);
  t.AddColumn("hill_stat", ColumnType::kNumber);
  t.AddColumn("stopped_early", ColumnType::kInteger);
  t.AddColumn("steps_saved", ColumnType::kInteger);
  t.AddColumn("ratio", ColumnType::kText, ColumnRole::kDisplay);
  t.headline = "ratio";
  t.group_by = "kernel";
  t.note =
      "median distance ratio [95% bootstrap interval over instances]; b: the "
      "interval reaches 1; *: collapsed; !: diverged; ~: stopped early; over "
      "seeds: medians of the seeds, n=seeds (range of their medians)";
  for (size_t i = 0; i < groups.size(); ++i) {
    CellValues v;
    for (const ResultJob* job : groups[i].jobs) {
      if (job->state != JobState::kDone) continue;
      absl::StatusOr<TrainResult> r = ParseTrainResult(job->result_json);
      if (r.ok()) v.Add(*r);
    }
    const double median = MedianOrNaN(v.medians);
    const double low = MedianOrNaN(v.lows), high = MedianOrNaN(v.highs);
    const bool some = !v.medians.empty();
    std::vector<ResultValue>& row = t.rows[i];
    row.resize(t.columns.size());
    size_t c = first;
    for (double x :
         {median, v.means.empty() ? kNaN : Mean(v.means), low, high,
          some ? *std::min_element(v.medians.begin(), v.medians.end()) : kNaN,
          some ? *std::max_element(v.medians.begin(), v.medians.end())
               : kNaN}) {
      row[c++] = x;
    }
    row[c++] = !std::isnan(low) && low <= 1.0;
    row[c++] = v.collapsed;
    row[c++] = MedianOrNaN(v.onsets);
    for (int64_t n : v.by_rule) {
      row[c++] = v.unjudged > 0 ? kNaN : static_cast<double>(n);
    }
    row[c++] = v.diverged;
    row[c++] = MedianOrNaN(v.hills);
    row[c++] = v.stopped_early;
    row[c++] = v.steps_saved;
    row[c++] = Headline(groups[i], v, median, low, high);
  }
  return t;
}

// collapsed and diverged; ratio_median (no finite ratio, as a diverged
// run's: +inf, the map not learned).
JobOutcomes Outcomes(absl::string_view result_json) {
  JobOutcomes out;
  absl::StatusOr<TrainResult> r = ParseTrainResult(result_json);
  if (!r.ok()) return out;
  out.holds = {{"collapsed", r->collapsed}, {"diverged", r->diverged}};
  const double ratio = r->evaluation ? r->evaluation->ratio_median : kNaN;
  out.facts["ratio_median"] =
      std::isfinite(ratio) ? ratio : std::numeric_limits<double>::infinity();
  return out;
}

}  // namespace train_kind

const JobKindDef& TrainKindDef() {
  static const JobKindDef def = [] {
    JobKindDef d;
    d.name = kTrainKindName;
    d.old_workers_run = true;
    d.check_key = SchemaCheckKey<JobConfig, JobKeys, SetJobKey>;
    d.check_value = SchemaCheckValue<JobConfig, SetJobKey>;
    d.job_params = train_kind::Params;
    d.default_params = train_kind::Defaults;
    d.parse_outcome = train_kind::ParseOutcome;
    d.child_command = train_kind::Child;
    d.read_finished = train_kind::ReadFinished;
    d.result_points = train_kind::ResultPointsOf;
    d.check_result = train_kind::CheckResult;
    d.summarize = train_kind::Summarize;
    d.outcomes = train_kind::Outcomes;
    return d;
  }();
  return def;
}

}  // namespace tailsweep
