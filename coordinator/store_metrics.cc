// The store's reads of metric points: one job's (GetMetrics) or a whole
// sweep's (ListSweepMetrics). Both walk the (job_id, name, step) primary
// key: a range scan per job, or per job and name.

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"

namespace tailsweep {
namespace {

constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();

// Appends to `out` the points of `q.job_id` that `q` asks for, by (name,
// step), until `out` holds `limit` points.
absl::Status ReadJobPoints(sql::Db& db, const Store::MetricsQuery& q,
                           int64_t limit, std::vector<MetricPoint>* out) {
  const int64_t step_max =
      q.step_max > 0 ? q.step_max : std::numeric_limits<int64_t>::max();
  auto read = [&](sql::Statement& st, const std::string* name) -> absl::Status {
    while (static_cast<int64_t>(out->size()) < limit) {
      absl::StatusOr<bool> row = st.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      const int c = name ? 0 : 1;  // named reads leave the name out
      // SQLite stores NaN as NULL; a point that was never logged has no row.
      out->push_back({name ? *name : st.Text(0), st.Int(c),
                      st.IsNull(c + 1)
                          ? std::numeric_limits<double>::quiet_NaN()
                          : st.Real(c + 1)});
    }
    return absl::OkStatus();
  };
  if (q.names.empty()) {
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "SELECT name, step, value FROM metrics WHERE job_id = ?1 "
        "AND (name, step) > (?2, ?3) AND step >= ?4 AND step <= ?5 "
        "ORDER BY name, step LIMIT ?6");
    if (!st.ok()) return st.status();
    st->Bind(1, q.job_id)
        .Bind(2, q.after_name)
        .Bind(3, q.after_name.empty() ? kMinStep : q.after_step)
        .Bind(4, q.step_min)
        .Bind(5, step_max)
        .Bind(6, limit - static_cast<int64_t>(out->size()));
    TS_RETURN_IF_ERROR(read(*st, nullptr));
    st->Reset().IgnoreError();
    return absl::OkStatus();
  }
  std::vector<std::string> names = q.names;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "SELECT step, value FROM metrics WHERE job_id = ?1 AND name = ?2 "
      "AND step > ?3 AND step >= ?4 AND step <= ?5 ORDER BY step LIMIT ?6");
  if (!st.ok()) return st.status();
  for (const std::string& name : names) {
    if (static_cast<int64_t>(out->size()) >= limit) break;
    if (!q.after_name.empty() && name < q.after_name) continue;
    st->Reset().IgnoreError();
    st->Bind(1, q.job_id)
        .Bind(2, name)
        .Bind(3, name == q.after_name ? q.after_step : kMinStep)
        .Bind(4, q.step_min)
        .Bind(5, step_max)
        .Bind(6, limit - static_cast<int64_t>(out->size()));
    TS_RETURN_IF_ERROR(read(*st, &name));
  }
  st->Reset().IgnoreError();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<MetricPoint>> Store::Metrics(const MetricsQuery& q) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> known =
      reader_->Prepare("SELECT 1 FROM jobs WHERE job_id = ?");
  if (!known.ok()) return known.status();
  known->Bind(1, q.job_id);
  absl::StatusOr<bool> exists = known->Step();
  if (!exists.ok()) return exists.status();
  known->Reset().IgnoreError();
  if (!*exists) return absl::NotFoundError(absl::StrCat("no job ", q.job_id));
  std::vector<MetricPoint> out;
  TS_RETURN_IF_ERROR(ReadJobPoints(*reader_, q, q.limit, &out));
  return out;
}

absl::StatusOr<std::vector<Store::MetricSeries>> Store::SweepMetrics(
    const SweepMetricsQuery& q) {
  std::lock_guard<std::mutex> lock(read_mu_);
  TS_RETURN_IF_ERROR(store_internal::CheckSweep(*reader_, q.sweep));
  absl::StatusOr<sql::Statement> jobs = reader_->Prepare(
      "SELECT sj.position, sj.job_id FROM sweeps s JOIN sweep_jobs sj "
      "USING (sweep_id) WHERE s.name = ?1 AND sj.position >= ?2 "
      "ORDER BY sj.position");
  if (!jobs.ok()) return jobs.status();
  jobs->Bind(1, q.sweep).Bind(2, std::max<int64_t>(q.after.position, 0));
  std::vector<MetricSeries> out;
  std::vector<MetricPoint> points;
  int64_t total = 0;
  while (total < q.limit) {
    absl::StatusOr<bool> row = jobs->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    MetricsQuery one;
    one.job_id = jobs->Text(1);
    one.names = q.names;
    one.step_min = q.step_min;
    one.step_max = q.step_max;
    const int64_t position = jobs->Int(0);
    if (position == q.after.position) {
      one.after_name = q.after.name;
      one.after_step = q.after.step;
    }
    points.clear();
    TS_RETURN_IF_ERROR(ReadJobPoints(*reader_, one, q.limit - total, &points));
    total += static_cast<int64_t>(points.size());
    for (MetricPoint& p : points) {
      if (out.empty() || out.back().position != position ||
          out.back().name != p.name) {
        out.push_back({position, one.job_id, p.name, {}, {}});
      }
      out.back().steps.push_back(p.step);
      out.back().values.push_back(p.value);
    }
  }
  jobs->Reset().IgnoreError();
  return out;
}

}  // namespace tailsweep
