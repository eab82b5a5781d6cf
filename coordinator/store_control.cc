// The store's sweep control: settings from the spec and the commands,
// fail-fast holds, removal, and the device hours of the lease history.

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"
#include "coordinator/store_sql.h"
#include "core/schema/sweep_control.h"

namespace tailsweep {
namespace {

using Tags = std::vector<std::pair<std::string, std::string>>;

Tags TagsFromJson(const std::string& text) {
  Tags out;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return out;
  for (const auto& [k, v] : doc.items()) {
    out.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;  // nlohmann's objects are ordered by key
}

// `tags` merged into the JSON object `text`; an empty value removes a key.
std::string MergeTags(const std::string& text, const Tags& tags) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) doc = nlohmann::json::object();
  for (const auto& [k, v] : tags) {
    if (v.empty()) {
      doc.erase(k);
    } else {
      doc[k] = v;
    }
  }
  return doc.dump();
}

constexpr char kSettingsColumns[] =
    "priority, max_running, paused, held, max_failures, failures, "
    "timeout_s, tags, notes, stop_rule";

// The settings from the 10 columns of kSettingsColumns from `first` on.
SweepSettings SettingsAt(const sql::Statement& st, int first) {
  SweepSettings s;
  s.priority = st.Int(first);
  s.max_running = st.Int(first + 1);
  s.paused = st.Int(first + 2) != 0;
  s.held = st.Text(first + 3);
  s.max_failures = st.Int(first + 4);
  s.failures = st.Int(first + 5);
  s.timeout_s = st.Real(first + 6);
  s.tags = TagsFromJson(st.Text(first + 7));
  s.notes = st.Text(first + 8);
  s.stop = st.Text(first + 9);
  return s;
}

absl::StatusOr<SweepSettings> StoredSettings(sql::Db& db, int64_t sweep_id) {
  absl::StatusOr<sql::Statement> st = db.Prepare(absl::StrCat(
      "SELECT ", kSettingsColumns, " FROM sweeps WHERE sweep_id = ?"));
  if (!st.ok()) return st.status();
  st->Bind(1, sweep_id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::NotFoundError("the sweep is gone");
  return SettingsAt(*st, 0);
}

}  // namespace

namespace store_internal {

absl::Status ApplyControl(sql::Db& db, int64_t sweep_id,
                          const SweepControl& control) {
  std::vector<std::string> sets;
  std::vector<std::function<void(sql::Statement&, int)>> binds;
  auto set_int = [&](const char* column, const std::optional<int64_t>& v) {
    if (!v) return;
    sets.push_back(absl::StrCat(column, " = ?"));
    binds.push_back([x = *v](sql::Statement& st, int i) { st.Bind(i, x); });
  };
  set_int("priority", control.priority);
  set_int("max_running", control.max_running);
  set_int("max_failures", control.max_failures);
  if (control.timeout_s) {
    sets.push_back("timeout_s = ?");
    binds.push_back(
        [x = *control.timeout_s](sql::Statement& st, int i) { st.Bind(i, x); });
  }
  if (control.notes) {
    sets.push_back("notes = ?");
    binds.push_back(
        [x = *control.notes](sql::Statement& st, int i) { st.Bind(i, x); });
  }
  if (control.asha) {
    sets.push_back("stop_rule = ?");
    binds.push_back([x = AshaJson(control.asha)](sql::Statement& st, int i) {
      st.Bind(i, x);
    });
  }
  if (!control.tags.empty()) {
    absl::StatusOr<SweepSettings> now = StoredSettings(db, sweep_id);
    if (!now.ok()) return now.status();
    nlohmann::json tags = nlohmann::json::object();
    for (const auto& [k, v] : now->tags) tags[k] = v;
    sets.push_back("tags = ?");
    binds.push_back([x = MergeTags(tags.dump(), control.tags)](
                        sql::Statement& st, int i) { st.Bind(i, x); });
  }
  if (sets.empty()) return absl::OkStatus();
  absl::StatusOr<sql::Statement> st = db.Prepare(absl::StrCat(
      "UPDATE sweeps SET ", absl::StrJoin(sets, ", "), " WHERE sweep_id = ?"));
  if (!st.ok()) return st.status();
  int i = 1;
  for (const auto& bind : binds) bind(*st, i++);
  st->Bind(i, sweep_id);
  return st->Run();
}

absl::Status FillSettingsAndHours(sql::Db& db, int64_t now,
                                  std::vector<Store::SweepRow>& rows) {
  absl::flat_hash_map<std::string, Store::SweepRow*> by_name;
  for (Store::SweepRow& r : rows) by_name[r.name] = &r;
  // One sweep's rows only, when there is one.
  const std::string only = rows.size() == 1 ? rows[0].name : "";
  absl::StatusOr<sql::Statement> st =
      db.Prepare(absl::StrCat("SELECT name, ", kSettingsColumns,
                              " FROM sweeps WHERE ?1 = '' OR name = ?1"));
  if (!st.ok()) return st.status();
  st->Bind(1, only);
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    auto it = by_name.find(st->Text(0));
    if (it != by_name.end()) it->second->settings = SettingsAt(*st, 1);
  }
  absl::StatusOr<sql::Statement> hours =
      db.Prepare(std::string(StoreSql("sweep_hours")));
  if (!hours.ok()) return hours.status();
  hours->Bind(1, now).Bind(2, only);
  constexpr double kMsPerHour = 3600.0 * 1000.0;
  while (true) {
    absl::StatusOr<bool> row = hours->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    auto it = by_name.find(hours->Text(0));
    if (it == by_name.end()) continue;
    SweepHours& h = it->second->hours;
    h.gpu_hours = hours->Real(1) / kMsPerHour;
    h.cpu_hours = hours->Real(2) / kMsPerHour;
    h.preempted_gpu_hours = hours->Real(3) / kMsPerHour;
    h.preempted_cpu_hours = hours->Real(4) / kMsPerHour;
  }
  return absl::OkStatus();
}

absl::Status EndAttempt(sql::Db& db, const std::string& job_id, int64_t epoch,
                        int64_t now, bool preempted) {
  absl::StatusOr<sql::Statement> end = db.Prepare(
      "UPDATE jobs SET "
      "gpu_ms = gpu_ms + CASE WHEN lease_gpus > 0 THEN "
      "  MAX(?1 - leased_ms, 0) * lease_gpus ELSE 0 END, "
      "cpu_ms = cpu_ms + CASE WHEN lease_gpus = 0 THEN "
      "  MAX(?1 - leased_ms, 0) ELSE 0 END, "
      "preempted_gpu_ms = preempted_gpu_ms + CASE WHEN ?2 AND lease_gpus > 0 "
      "  THEN MAX(?1 - leased_ms, 0) * lease_gpus ELSE 0 END, "
      "preempted_cpu_ms = preempted_cpu_ms + CASE WHEN ?2 AND lease_gpus = 0 "
      "  THEN MAX(?1 - leased_ms, 0) ELSE 0 END, "
      "leased_ms = NULL "
      "WHERE job_id = ?3 AND epoch = ?4 AND leased_ms IS NOT NULL");
  if (!end.ok()) return end.status();
  return end->Bind(1, now)
      .Bind(2, int64_t{preempted ? 1 : 0})
      .Bind(3, job_id)
      .Bind(4, epoch)
      .Run();
}

}  // namespace store_internal

absl::StatusOr<Store::SweepRow> Store::SettingsOf(const std::string& sweep) {
  std::lock_guard<std::mutex> lock(read_mu_);
  TS_RETURN_IF_ERROR(store_internal::CheckSweep(*reader_, sweep));
  std::vector<SweepRow> rows(1);
  rows[0].name = sweep;
  TS_RETURN_IF_ERROR(
      store_internal::FillSettingsAndHours(*reader_, clock_->WallMs(), rows));
  return rows[0];
}

absl::Status Store::CountFailure(sql::Db& db, const std::string& job_id) {
  absl::StatusOr<sql::Statement> count = db.Prepare(
      "UPDATE sweeps SET failures = failures + 1 WHERE max_failures > 0 AND "
      "sweep_id IN (SELECT sweep_id FROM sweep_jobs WHERE job_id = ? AND "
      "cancelled = 0)");
  if (!count.ok()) return count.status();
  TS_RETURN_IF_ERROR(count->Bind(1, job_id).Run());
  absl::StatusOr<sql::Statement> hold = db.Prepare(
      "UPDATE sweeps SET held = 'held after ' || failures || "
      "CASE WHEN failures = 1 THEN ' failed attempt' ELSE ' failed attempts' "
      "END || ' (max_failures: ' || max_failures || "
      "'); fix the cause, then `tailsweep resume ' || name || "
      "'` releases its queued jobs' "
      "WHERE max_failures > 0 AND failures >= max_failures AND held = ''");
  if (!hold.ok()) return hold.status();
  return hold->Run();
}

absl::StatusOr<SweepSettings> Store::UpdateSweep(const std::string& sweep,
                                                 const SweepUpdate& update) {
  if (update.priority) TS_RETURN_IF_ERROR(CheckPriority(*update.priority));
  if (update.max_running && *update.max_running < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_running ", *update.max_running,
                     ": allowed: 0 (no limit) or more"));
  }
  for (const auto& [k, v] : update.tags) TS_RETURN_IF_ERROR(CheckTag(k, v));
  if (update.notes && update.notes->size() > kMaxNotesBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a note holds at most ", kMaxNotesBytes, " bytes (got ",
                     update.notes->size(), ")"));
  }
  const ChangesJobs changes{&generation_};
  SweepSettings out;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    absl::StatusOr<int64_t> id = store_internal::SweepId(db, sweep);
    if (!id.ok()) return id.status();
    SweepControl control;
    control.priority = update.priority;
    control.max_running = update.max_running;
    control.tags = update.tags;
    control.notes = update.notes;
    TS_RETURN_IF_ERROR(store_internal::ApplyControl(db, *id, control));
    if (update.paused) {
      absl::StatusOr<sql::Statement> st =
          db.Prepare("UPDATE sweeps SET paused = ? WHERE sweep_id = ?");
      if (!st.ok()) return st.status();
      TS_RETURN_IF_ERROR(
          st->Bind(1, int64_t{*update.paused ? 1 : 0}).Bind(2, *id).Run());
    }
    absl::StatusOr<SweepSettings> now = StoredSettings(db, *id);
    if (!now.ok()) return now.status();
    out = *std::move(now);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  SweepsChanged();
  return out;
}

absl::StatusOr<Store::RemoveResult> Store::RemoveSweep(const std::string& sweep,
                                                       bool force,
                                                       bool dry_run) {
  const ChangesJobs changes{&generation_};
  RemoveResult out;
  int64_t removed_id = -1;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    out = {};
    absl::StatusOr<int64_t> id = store_internal::SweepId(db, sweep);
    if (!id.ok()) return id.status();
    removed_id = *id;
    // Its own jobs: no other sweep has them.
    const std::string own =
        "SELECT job_id FROM sweep_jobs sj WHERE sj.sweep_id = ?1 AND NOT "
        "EXISTS (SELECT 1 FROM sweep_jobs o WHERE o.job_id = sj.job_id AND "
        "o.sweep_id <> sj.sweep_id)";
    auto count = [&](const std::string& sql) -> absl::StatusOr<int64_t> {
      absl::StatusOr<sql::Statement> st = db.Prepare(sql);
      if (!st.ok()) return st.status();
      st->Bind(1, *id);
      TS_RETURN_IF_ERROR(st->Step().status());
      return st->Int(0);
    };
    absl::StatusOr<int64_t> all =
        count("SELECT COUNT(*) FROM sweep_jobs WHERE sweep_id = ?1");
    if (!all.ok()) return all.status();
    absl::StatusOr<int64_t> mine =
        count(absl::StrCat("SELECT COUNT(*) FROM (", own, ")"));
    if (!mine.ok()) return mine.status();
    absl::StatusOr<int64_t> running = count(
        "SELECT COUNT(*) FROM sweep_jobs sj JOIN jobs j USING (job_id) WHERE "
        "sj.sweep_id = ?1 AND sj.cancelled = 0 AND j.state = 'leased'");
    if (!running.ok()) return running.status();
    absl::StatusOr<int64_t> points = count(absl::StrCat(
        "SELECT COUNT(*) FROM metrics WHERE job_id IN (", own, ")"));
    if (!points.ok()) return points.status();
    out.jobs = *mine;
    out.shared_jobs = *all - *mine;
    out.running = *running;
    out.metric_points = *points;
    std::string files_sql;
    for (const char* table : store_internal::kFileTables) {
      absl::StrAppend(&files_sql,
                      files_sql.empty() ? "SELECT" : " UNION SELECT",
                      " file FROM ", table, " WHERE job_id IN (", own, ")");
    }
    absl::StatusOr<sql::Statement> files = db.Prepare(files_sql);
    if (!files.ok()) return files.status();
    files->Bind(1, *id);
    while (true) {
      absl::StatusOr<bool> row = files->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      out.files.push_back(files->Text(0));
    }
    if (out.running > 0 && !force) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sweep '", sweep, "' has ", out.running,
          " running job(s); cancel it and wait, or remove it with --force "
          "(its running jobs are stopped)"));
    }
    if (dry_run) return absl::OkStatus();
    // The shared jobs' other sweeps keep them; its own go with everything
    // stored of them. A holder of a removed job hears NotFound on its next
    // heartbeat and stops it.
    TS_RETURN_IF_ERROR(db.Exec(
        "CREATE TEMP TABLE IF NOT EXISTS removing (job_id TEXT PRIMARY KEY); "
        "DELETE FROM temp.removing"));
    absl::StatusOr<sql::Statement> mark =
        db.Prepare(absl::StrCat("INSERT INTO temp.removing (job_id) ", own));
    if (!mark.ok()) return mark.status();
    TS_RETURN_IF_ERROR(mark->Bind(1, *id).Run());
    for (const char* table : store_internal::kPerJobTables) {
      TS_RETURN_IF_ERROR(db.Exec(
          absl::StrCat("DELETE FROM ", table,
                       " WHERE job_id IN (SELECT job_id FROM temp.removing)")));
    }
    for (const char* sql : {"DELETE FROM sweep_jobs WHERE sweep_id = ?1",
                            "DELETE FROM sweeps WHERE sweep_id = ?1"}) {
      absl::StatusOr<sql::Statement> st = db.Prepare(sql);
      if (!st.ok()) return st.status();
      TS_RETURN_IF_ERROR(st->Bind(1, *id).Run());
    }
    return db.Exec(
        "DELETE FROM jobs WHERE job_id IN (SELECT job_id FROM "
        "temp.removing); DELETE FROM temp.removing");
  });
  if (!status.ok()) return status;
  if (!dry_run) {
    ForgetCursor(removed_id);
    SweepsChanged();
  }
  return out;
}

absl::StatusOr<std::vector<Store::StopRuleOf>> Store::StopRulesOf(
    const std::string& job_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT s.name, s.stop_rule FROM sweep_jobs sj JOIN sweeps s USING "
      "(sweep_id) WHERE sj.job_id = ? AND sj.cancelled = 0 AND "
      "s.stop_rule <> ''");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  std::vector<StopRuleOf> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.push_back({st->Text(0), st->Text(1)});
  }
  return out;
}

absl::StatusOr<int64_t> Store::MaxStep(const std::string& job_id,
                                       const std::string& name) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT COALESCE(MAX(step), -1) FROM metrics WHERE job_id = ? AND "
      "name = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id).Bind(2, name);
  TS_RETURN_IF_ERROR(st->Step().status());
  return st->Int(0);
}

absl::StatusOr<std::vector<double>> Store::ValuesAtStep(
    const std::string& sweep, const std::string& name, int64_t step,
    const std::string& job) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT (SELECT m.value FROM metrics m WHERE m.job_id = sj.job_id AND "
      "        m.name = ?2 AND m.step <= ?3 ORDER BY m.step DESC LIMIT 1) "
      "FROM sweeps s JOIN sweep_jobs sj USING (sweep_id) "
      "WHERE s.name = ?1 AND (?4 = '' OR sj.job_id = ?4) AND EXISTS (SELECT "
      "  1 FROM metrics m WHERE m.job_id = sj.job_id AND m.name = ?2 AND "
      "  m.step >= ?3)");
  if (!st.ok()) return st.status();
  st->Bind(1, sweep).Bind(2, name).Bind(3, step).Bind(4, job);
  std::vector<double> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.push_back(st->IsNull(0) ? std::nan("") : st->Real(0));
  }
  return out;
}

}  // namespace tailsweep
