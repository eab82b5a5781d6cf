// The store's reads: they run on their own connection (WAL lets them go on
// while the writer commits), one at a time.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"
#include "coordinator/store_sql.h"

namespace tailsweep {

using store_internal::CheckSweep;
using store_internal::FromJson;
using store_internal::ParseState;

absl::StatusOr<JobCounts> Store::Counts(const std::string& sweep) {
  std::lock_guard<std::mutex> lock(read_mu_);
  TS_RETURN_IF_ERROR(CheckSweep(*reader_, sweep));
  absl::StatusOr<sql::Statement> st = reader_->Prepare(absl::StrCat(
      "SELECT ", StoreSql("sweep_job_state"),
      ", COUNT(*) FROM sweeps s JOIN sweep_jobs sj USING (sweep_id) "
      "JOIN jobs j USING (job_id) WHERE s.name = ? GROUP BY 1"));
  if (!st.ok()) return st.status();
  st->Bind(1, sweep);
  JobCounts c;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<JobState> state = ParseState(st->Text(0));
    if (!state.ok()) return state.status();
    c.Of(*state) = st->Int(1);
  }
  return c;
}

absl::StatusOr<Store::EarlyStops> Store::EarlyStopsOf(
    const std::string& sweep) {
  std::lock_guard<std::mutex> lock(read_mu_);
  TS_RETURN_IF_ERROR(CheckSweep(*reader_, sweep));
  absl::StatusOr<sql::Statement> st =
      reader_->Prepare(std::string(StoreSql("early_stops")));
  if (!st.ok()) return st.status();
  st->Bind(1, sweep);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  EarlyStops out;
  if (*row) {
    out.runs = st->Int(0);
    out.steps_saved = st->Int(1);
  }
  return out;
}

namespace {

// A job's (j) best checkpoint kept for its metric: its step, 0 for none.
constexpr char kBestCheckpointStep[] =
    "COALESCE((SELECT k.step FROM kept_checkpoints k WHERE k.job_id = "
    "j.job_id ORDER BY k.rank_key, k.step DESC LIMIT 1), 0)";

// A job's not_kept notes, the newest 8, newest first, one per line.
constexpr char kNotKept[] =
    "COALESCE((SELECT group_concat(detail, char(10)) FROM (SELECT e.detail "
    "FROM events e WHERE e.job_id = j.job_id AND e.kind = 'not_kept' ORDER "
    "BY e.event_id DESC LIMIT 8)), '')";

std::vector<std::string> SplitNotKept(const std::string& lines) {
  std::vector<std::string> notes;
  if (lines.empty()) return notes;
  notes = absl::StrSplit(lines, '\n');
  std::reverse(notes.begin(), notes.end());  // oldest first
  return notes;
}

// The parameter filters of a jobs query: per key, its JSON path and values
// bound from ?6 on.
std::string WhereSql(
    const std::vector<std::pair<std::string, std::vector<std::string>>>&
        where) {
  std::string sql;
  for (const auto& [key, values] : where) {
    sql += " AND json_extract(j.params, ?) IN (";
    for (size_t i = 0; i < values.size(); ++i) sql += i ? ", ?" : "?";
    sql += ")";
  }
  return sql;
}

}  // namespace

absl::StatusOr<std::vector<JobRow>> Store::Jobs(const JobsQuery& q) {
  std::lock_guard<std::mutex> lock(read_mu_);
  TS_RETURN_IF_ERROR(CheckSweep(*reader_, q.sweep));
  // The view state and the holder of the sweep's view: none for a job it
  // cancelled that runs on for another sweep.
  absl::StatusOr<sql::Statement> st = reader_->Prepare(absl::StrCat(
      "SELECT j.job_id, sj.cell, ", StoreSql("sweep_job_state"),
      ", j.state, j.epoch, j.attempt, "
      "CASE WHEN ",
      StoreSql("sweep_job_state"),
      " = j.state THEN COALESCE(j.holder, '') ELSE '' END, "
      "COALESCE(j.last_error, ''), COALESCE(r.result, ''), sj.position, "
      "j.params, j.updated_ms, ",
      // Its device time: GPU ms and CPU-slot ms, a live lease to now (?6;
      // job_hours writes it as ?1).
      absl::StrReplaceAll(StoreSql("job_hours"), {{"?1", "?6"}}), ", ",
      kBestCheckpointStep, ", ", kNotKept,
      " FROM sweeps s JOIN sweep_jobs sj USING (sweep_id) "
      "JOIN jobs j USING (job_id) LEFT JOIN results r USING (job_id) "
      "WHERE s.name = ?1 AND (?2 = '' OR ",
      StoreSql("sweep_job_state"),
      " = ?2) AND sj.position > ?3 AND (?5 = 0 OR j.updated_ms > ?5)",
      WhereSql(q.where), " ORDER BY sj.position LIMIT ?4"));
  if (!st.ok()) return st.status();
  st->Reset().IgnoreError();
  st->Bind(1, q.sweep)
      .Bind(2, q.state ? JobStateName(*q.state) : "")
      .Bind(3, q.after_position)
      .Bind(4, q.limit > 0 ? q.limit : int64_t{-1})
      .Bind(5, q.updated_since_ms)
      .Bind(6, clock_->WallMs());
  int index = 7;  // the where clause's, after ?6
  for (const auto& [key, values] : q.where) {
    st->Bind(index++, absl::StrCat("$.\"", key, "\""));
    for (const std::string& v : values) st->Bind(index++, v);
  }
  std::vector<JobRow> out;
  int64_t bytes = 0;
  while (q.max_bytes <= 0 || bytes <= q.max_bytes) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    JobRow r;
    r.job_id = st->Text(0);
    r.cell = FromJson(st->Text(1));
    absl::StatusOr<JobState> state = ParseState(st->Text(2));
    if (!state.ok()) return state.status();
    r.state = *state;
    state = ParseState(st->Text(3));
    if (!state.ok()) return state.status();
    r.job_state = *state;
    r.epoch = st->Int(4);
    r.attempt = st->Int(5);
    r.holder = st->Text(6);
    r.last_error = st->Text(7);
    r.result_json = st->Text(8);
    r.position = st->Int(9);
    r.params = FromJson(st->Text(10));
    r.updated_ms = st->Int(11);
    constexpr double kMsPerHour = 3600.0 * 1000.0;
    r.gpu_hours = st->Real(12) / kMsPerHour;
    r.cpu_hours = st->Real(13) / kMsPerHour;
    r.best_checkpoint_step = st->Int(14);
    r.not_kept = SplitNotKept(st->Text(15));
    bytes += static_cast<int64_t>(r.result_json.size() + st->Text(10).size() +
                                  st->Text(1).size());
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<Store::WorkerRow>> Store::Workers() {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT w.worker_id, w.last_seen_ms, (SELECT COUNT(*) FROM jobs j WHERE "
      "j.holder = w.worker_id AND j.state = 'leased') FROM workers w "
      "ORDER BY w.worker_id");
  if (!st.ok()) return st.status();
  std::vector<WorkerRow> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.push_back({st->Text(0), st->Int(1), st->Int(2), ""});
  }
  // Idle workers seen since the last flush (ExpireLeases).
  absl::MutexLock seen_lock(&lease_mu_);
  for (WorkerRow& w : out) {
    auto it = worker_devices_.find(w.worker_id);
    if (it != worker_devices_.end()) w.devices = it->second.devices;
  }
  for (const auto& [worker, at] : idle_seen_) {
    auto it = std::find_if(out.begin(), out.end(), [&](const WorkerRow& w) {
      return w.worker_id == worker;
    });
    if (it == out.end()) {
      auto d = worker_devices_.find(worker);
      out.push_back(
          {worker, at, 0, d == worker_devices_.end() ? "" : d->second.devices});
    } else {
      it->last_seen_ms = std::max(it->last_seen_ms, at);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.worker_id < b.worker_id;
  });
  return out;
}

absl::StatusOr<int64_t> Store::MetricCount(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st =
      reader_->Prepare("SELECT COUNT(*) FROM metrics WHERE job_id = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  return st->Int(0);
}

absl::StatusOr<std::string> Store::Result(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st =
      reader_->Prepare("SELECT result FROM results WHERE job_id = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row)
    return absl::NotFoundError(absl::StrCat("no result for job ", job_id));
  return st->Text(0);
}

absl::StatusOr<std::string> Store::IntegrityCheck() {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st =
      reader_->Prepare("PRAGMA integrity_check");
  if (!st.ok()) return st.status();
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  return st->Text(0);
}

absl::Status Store::CheckLease(const std::string& worker,
                               const std::string& job_id, int64_t epoch) {
  std::lock_guard<std::mutex> lock(lease_read_mu_);
  return store_internal::CheckLease(*lease_reader_, worker, job_id, epoch,
                                    /*allow_done=*/false);
}

absl::StatusOr<std::vector<CheckpointRow>> Store::Checkpoints(
    const std::string& job_id, bool with_kept) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(absl::StrCat(
      "SELECT step, file, bytes, sha256, uploaded_ms, 0, 0 FROM checkpoints "
      "WHERE job_id = ?1 UNION ALL SELECT step, file, bytes, sha256, "
      "uploaded_ms, 0, 0 FROM previous_checkpoints WHERE job_id = ?1 ",
      with_kept ? "UNION ALL SELECT step, file, bytes, sha256, uploaded_ms, "
                  "1, metric FROM kept_checkpoints WHERE job_id = ?1 "
                : "",
      "ORDER BY 1 DESC, 6 DESC"));
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  std::vector<CheckpointRow> rows;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    // A kept row first (ORDER BY), then the same step's newest row: one
    // row a file.
    if (!rows.empty() && rows.back().step == st->Int(0) &&
        rows.back().file == st->Text(1)) {
      continue;
    }
    rows.push_back({st->Int(0), st->Text(1), st->Int(2), st->Text(3),
                    st->Int(4), st->Int(5) != 0, st->Real(6)});
  }
  if (rows.empty()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint for job ", job_id));
  }
  return rows;
}

absl::StatusOr<std::vector<Store::SweepOutputs>> Store::SweepsOfJob(
    const std::string& job_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT s.name, s.outputs FROM sweep_jobs sj JOIN sweeps s USING "
      "(sweep_id) WHERE sj.job_id = ? ORDER BY s.sweep_id");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  std::vector<SweepOutputs> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.push_back({st->Text(0), RunOutputsFromJson(st->Text(1))});
  }
  return out;
}

absl::StatusOr<JobKind> Store::Kind(const std::string& sweep) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st =
      reader_->Prepare("SELECT kind FROM sweeps WHERE name = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, sweep);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return store_internal::NoSuchSweep(*reader_, sweep);
  return store_internal::ParseKind(st->Text(0));
}

absl::StatusOr<std::vector<Store::SweepRow>> Store::Sweeps() {
  std::lock_guard<std::mutex> lock(read_mu_);
  // One SUM per state, in kJobStates order.
  std::string sums;
  for (JobState state : kJobStates) {
    absl::StrAppend(&sums, ", SUM(v = '", JobStateName(state), "')");
  }
  absl::StatusOr<sql::Statement> st = reader_->Prepare(absl::StrCat(
      "SELECT name, kind, created_ms", sums,
      " FROM (SELECT s.sweep_id, s.name, s.kind, s.created_ms, ",
      StoreSql("sweep_job_state"),
      " AS v FROM sweeps s LEFT JOIN sweep_jobs sj USING (sweep_id) "
      "LEFT JOIN jobs j USING (job_id)) GROUP BY sweep_id ORDER BY sweep_id"));
  if (!st.ok()) return st.status();
  std::vector<SweepRow> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    SweepRow r;
    r.name = st->Text(0);
    absl::StatusOr<JobKind> kind = store_internal::ParseKind(st->Text(1));
    if (!kind.ok()) return kind.status();
    r.kind = *kind;
    r.created_ms = st->Int(2);
    for (size_t i = 0; i < kJobStates.size(); ++i) {
      r.counts.Of(kJobStates[i]) = st->Int(3 + static_cast<int>(i));
    }
    out.push_back(std::move(r));
  }
  TS_RETURN_IF_ERROR(
      store_internal::FillSettingsAndHours(*reader_, clock_->WallMs(), out));
  return out;
}

absl::StatusOr<Store::SweepDetail> Store::Sweep(const std::string& sweep) {
  absl::StatusOr<std::vector<SweepRow>> all = Sweeps();
  if (!all.ok()) return all.status();
  SweepDetail out;
  for (SweepRow& r : *all) {
    if (r.name == sweep) out.row = std::move(r);
  }
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT spec, fixed, version FROM sweeps WHERE name = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, sweep);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return store_internal::NoSuchSweep(*reader_, sweep);
  out.spec = st->Text(0);
  out.fixed = store_internal::FromJson(st->Text(1));
  out.version = st->Text(2);
  return out;
}

namespace {

// The id of the one job whose id starts with `prefix` (hex digits: the ids
// in [prefix, prefix + "g") by the primary key). NotFound;
// FailedPrecondition when several match.
absl::StatusOr<std::string> JobIdOf(sql::Db& db, const std::string& prefix) {
  absl::StatusOr<sql::Statement> find = db.Prepare(
      "SELECT job_id FROM jobs WHERE job_id >= ?1 AND job_id < ?1 || 'g' "
      "ORDER BY job_id LIMIT 2");
  if (!find.ok()) return find.status();
  find->Bind(1, prefix);
  std::string id;
  for (int matches = 0;; ++matches) {
    absl::StatusOr<bool> row = find->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    if (matches == 1) {
      return absl::FailedPreconditionError(
          absl::StrCat("job prefix '", prefix,
                       "' matches several jobs; give more of the id"));
    }
    id = find->Text(0);
  }
  if (id.empty()) return absl::NotFoundError(absl::StrCat("no job ", prefix));
  return id;
}

}  // namespace

absl::StatusOr<JobRow> Store::Job(const std::string& job) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<std::string> id = JobIdOf(*reader_, job);
  if (!id.ok()) return id.status();
  absl::StatusOr<sql::Statement> st = reader_->Prepare(absl::StrCat(
      "SELECT j.state, j.epoch, j.attempt, COALESCE(j.holder, ''), "
      "COALESCE(j.last_error, ''), COALESCE(r.result, ''), j.params, "
      "j.updated_ms, (SELECT sj.cell FROM sweep_jobs sj WHERE sj.job_id = "
      "j.job_id ORDER BY sj.sweep_id LIMIT 1), ",
      kBestCheckpointStep, ", ", kNotKept,
      " FROM jobs j LEFT JOIN results r USING (job_id) WHERE j.job_id = ?"));
  if (!st.ok()) return st.status();
  st->Bind(1, *id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::NotFoundError(absl::StrCat("no job ", job));
  JobRow r;
  r.job_id = *id;
  absl::StatusOr<JobState> state = ParseState(st->Text(0));
  if (!state.ok()) return state.status();
  r.state = r.job_state = *state;
  r.epoch = st->Int(1);
  r.attempt = st->Int(2);
  r.holder = st->Text(3);
  r.last_error = st->Text(4);
  r.result_json = st->Text(5);
  r.params = FromJson(st->Text(6));
  r.updated_ms = st->Int(7);
  if (!st->IsNull(8)) r.cell = FromJson(st->Text(8));
  r.best_checkpoint_step = st->Int(9);
  r.not_kept = SplitNotKept(st->Text(10));
  return r;
}

absl::StatusOr<Store::JobLogs> Store::JobLog(const std::string& job) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<std::string> id = JobIdOf(*reader_, job);
  if (!id.ok()) return id.status();
  absl::StatusOr<sql::Statement> find = reader_->Prepare(
      "SELECT state, COALESCE(last_error, '') FROM jobs WHERE job_id = ?");
  if (!find.ok()) return find.status();
  find->Bind(1, *id);
  absl::StatusOr<bool> found = find->Step();
  if (!found.ok()) return found.status();
  if (!*found) return absl::NotFoundError(absl::StrCat("no job ", job));
  JobLogs out;
  out.job_id = *id;
  absl::StatusOr<JobState> state = ParseState(find->Text(0));
  if (!state.ok()) return state.status();
  out.state = *state;
  out.last_error = find->Text(1);
  absl::StatusOr<sql::Statement> logs = reader_->Prepare(
      "SELECT epoch, outcome, stderr_tail, at_ms FROM job_logs "
      "WHERE job_id = ? ORDER BY epoch DESC");
  if (!logs.ok()) return logs.status();
  logs->Bind(1, out.job_id);
  while (true) {
    absl::StatusOr<bool> row = logs->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.logs.push_back(
        {logs->Int(0), logs->Text(1), logs->Text(2), logs->Int(3)});
  }
  return out;
}

}  // namespace tailsweep
