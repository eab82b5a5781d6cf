// The `tails` kind: one tail-estimator experiment (core/tails_job.h is its
// schema), run as `tailsweep-lab lab tails`; its result is a table of
// rows (job_result.h's TailsResultJson). It has no yes/no outcome, so no
// search.

#include "core/schema/tails_kind.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "core/schema/schema_kind.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"
#include "core/statistics.h"
#include "core/tails_job.h"

namespace tailsweep {
namespace tails_kind {  // named: the kinds' files share unity batches

absl::StatusOr<KeyValues> Params(const SweepSpec& spec, const KeyValues& cell) {
  TailsJobConfig config;
  TS_RETURN_IF_ERROR(
      (SchemaConfig<TailsJobConfig, SetTailsJobKey>(spec, cell, &config)));
  return TailsJobToKeyValues(config);
}

KeyValues Defaults() { return TailsJobToKeyValues(TailsJobConfig{}); }

// The job's keys as lab tails' flags.
absl::StatusOr<ChildCommand> Child(const ChildJob& job) {
  TailsJobConfig c;
  for (const auto& [key, value] : job.params) {
    TS_RETURN_IF_ERROR(SetTailsJobKey(c, key, value));
  }
  const KeyValues kv = TailsJobToKeyValues(c);
  auto value = [&](absl::string_view key) {
    for (const auto& [k, v] : kv) {
      if (k == key) return v;
    }
    return std::string();
  };
  ChildCommand out = LabChildCommand(job);
  out.argv.insert(
      out.argv.end(),
      {kTailsKindName, "--seams", value("seam"), "--budgets", value("n"),
       "--index-grid", value("indices"), "--trials", value("trials"), "--seed",
       value("seed"), "--reference-index", value("reference_index"),
       "--out-dir", job.dir});
  return out;
}

// A result that is a testbed table (job_result.h's ParseTailsResult).
absl::Status CheckRows(absl::string_view json) {
  return ParseTailsResult(json).status();
}

FinishedJob ReadFinished(const std::string& dir, int exit_code) {
  return ReadDoneResult(dir, exit_code, /*bad_input_code=*/true, CheckRows);
}

absl::StatusOr<int64_t> CheckResult(absl::string_view json) {
  TS_RETURN_IF_ERROR(CheckRows(json));
  return 0;  // run whole every attempt
}

// ---- Results (science.md 7): a row per (job cell, seam, budget, index) of
// the done jobs' results, in grid order and then each job's own row order.
// Over seeds, the jobs whose cells differ only in `seed` give one row per
// (seam, budget, index), each number the median over those seeds (one
// seed: its own value, bit for bit).
ResultsTable Summarize(absl::Span<const ResultJob> jobs, bool over_seeds) {
  const std::vector<JobGroup> groups = GroupJobs(jobs, over_seeds);
  ResultsTable t;
  // A grid's seam and n (one of the job's lists) give way to the row's.
  static constexpr absl::string_view kOwn[] = {"seam", "n", "index"};
  AddKeyColumns(groups, t, kOwn);
  t.AddColumn("seam", ColumnType::kNumber);
  t.AddColumn("n", ColumnType::kInteger);
  t.AddColumn("index", ColumnType::kNumber);
  static constexpr const char* kValues[] = {"ed_mean", "ed_sd",    "w2_mean",
                                            "w2_sd",   "ed_noise", "w2_noise"};
  for (const char* name : kValues) t.AddColumn(name, ColumnType::kNumber);
  t.AddColumn("seeds", ColumnType::kInteger);
  t.note = "noise units: (mean_a - mean_a*) / sd_a*";
  for (const JobGroup& g : groups) {
    // (seam, n, index) -> the seeds' rows, in first-seen order.
    std::vector<std::vector<TailsRow>> rows;
    std::map<std::tuple<double, int64_t, double>, size_t> index;
    for (const ResultJob* job : g.jobs) {
      if (job->state != JobState::kDone) continue;
      absl::StatusOr<std::vector<TailsRow>> parsed =
          ParseTailsResult(job->result_json);
      if (!parsed.ok()) continue;
      for (const TailsRow& r : *parsed) {
        auto [it, added] =
            index.try_emplace({r.seam, r.n, r.index}, rows.size());
        if (added) rows.emplace_back();
        rows[it->second].push_back(r);
      }
    }
    for (const std::vector<TailsRow>& seeds : rows) {
      auto median = [&](double TailsRow::*field) {
        std::vector<double> v;
        for (const TailsRow& r : seeds) v.push_back(r.*field);
        return Median(v);
      };
      std::vector<ResultValue> row = KeyRow(g, t);
      size_t c = *t.ColumnIndex("seam");
      row[c++] = seeds[0].seam;
      row[c++] = seeds[0].n;
      row[c++] = seeds[0].index;
      for (double TailsRow::*field :
           {&TailsRow::ed_mean, &TailsRow::ed_sd, &TailsRow::w2_mean,
            &TailsRow::w2_sd, &TailsRow::ed_noise, &TailsRow::w2_noise}) {
        row[c++] = median(field);
      }
      row[c++] = static_cast<int64_t>(seeds.size());
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

}  // namespace tails_kind

const JobKindDef& TailsKindDef() {
  static const JobKindDef def = [] {
    JobKindDef d;
    d.name = kTailsKindName;
    d.old_workers_run = true;
    d.check_key = SchemaCheckKey<TailsJobConfig, TailsJobKeys, SetTailsJobKey>;
    d.check_value = SchemaCheckValue<TailsJobConfig, SetTailsJobKey>;
    d.job_params = tails_kind::Params;
    d.default_params = tails_kind::Defaults;
    d.child_command = tails_kind::Child;
    d.read_finished = tails_kind::ReadFinished;
    d.check_result = tails_kind::CheckResult;
    d.summarize = tails_kind::Summarize;
    return d;
  }();
  return def;
}

}  // namespace tailsweep
