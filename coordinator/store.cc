#include "coordinator/store.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "coordinator/store_internal.h"

namespace tailsweep {

using store_internal::CheckSweep;
using store_internal::FromJson;
using store_internal::ToJson;

namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS sweeps (
  sweep_id    INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  kind        TEXT NOT NULL,              -- train | tails
  fixed       TEXT NOT NULL,              -- JSON object of the fixed keys
  created_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
  job_id            TEXT PRIMARY KEY,     -- SHA-256 of the full assignment
  kind              TEXT NOT NULL,
  params            TEXT NOT NULL,        -- JSON object, every key
  state             TEXT NOT NULL CHECK (state IN
                      ('queued', 'leased', 'done', 'failed', 'cancelled')),
  epoch             INTEGER NOT NULL DEFAULT 0,  -- one per lease
  attempt           INTEGER NOT NULL DEFAULT 0,
  holder            TEXT,                 -- worker of the live lease
  lease_deadline_ms INTEGER,
  not_before_ms     INTEGER NOT NULL DEFAULT 0,  -- retry backoff
  last_error        TEXT,
  lease_request     TEXT,                 -- request_id of the live lease
  created_ms        INTEGER NOT NULL,
  updated_ms        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (state, created_ms);
CREATE TABLE IF NOT EXISTS sweep_jobs (
  sweep_id  INTEGER NOT NULL REFERENCES sweeps (sweep_id),
  job_id    TEXT NOT NULL REFERENCES jobs (job_id),
  cell      TEXT NOT NULL,                -- JSON object of the grid keys
  position  INTEGER NOT NULL,             -- order in the expanded grid
  PRIMARY KEY (sweep_id, job_id)
);
CREATE TABLE IF NOT EXISTS events (
  event_id  INTEGER PRIMARY KEY,
  job_id    TEXT NOT NULL,
  epoch     INTEGER,
  kind      TEXT NOT NULL,  -- leased, expired, failed, done, cancelled, ...
  detail    TEXT,
  at_ms     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS metrics (
  job_id  TEXT NOT NULL,
  name    TEXT NOT NULL,
  step    INTEGER NOT NULL,
  value   REAL,
  PRIMARY KEY (job_id, name, step)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS results (
  job_id        TEXT PRIMARY KEY REFERENCES jobs (job_id),
  result        TEXT NOT NULL,            -- JSON, as lab train's result.json
  completed_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
  job_id       TEXT PRIMARY KEY REFERENCES jobs (job_id),
  step         INTEGER NOT NULL,          -- training steps it holds
  file         TEXT NOT NULL,             -- path under --data-dir
  bytes        INTEGER NOT NULL,
  sha256       TEXT NOT NULL,
  epoch        INTEGER NOT NULL,          -- the lease that uploaded it
  uploaded_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS lease_requests (  -- LeaseJobs calls, for retries
  worker_id   TEXT NOT NULL,
  request_id  TEXT NOT NULL,
  at_ms       INTEGER NOT NULL,
  PRIMARY KEY (worker_id, request_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS workers (
  worker_id     TEXT PRIMARY KEY,
  last_seen_ms  INTEGER NOT NULL
);
)sql";

}  // namespace

absl::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kLeased:
      return "leased";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                                   Clock* clock,
                                                   StoreOptions options) {
  absl::StatusOr<std::unique_ptr<sql::Db>> db =
      sql::Db::Open(path, options.vfs);
  if (!db.ok()) return db.status();
  TS_RETURN_IF_ERROR((*db)->Exec(kSchema));
  // Files written before jobs.lease_request existed get the column.
  absl::StatusOr<sql::Statement> has = (*db)->Prepare(
      "SELECT COUNT(*) FROM pragma_table_info('jobs') "
      "WHERE name = 'lease_request'");
  if (!has.ok()) return has.status();
  if (absl::StatusOr<bool> row = has->Step(); !row.ok()) return row.status();
  const bool migrate = has->Int(0) == 0;
  has->Reset().IgnoreError();
  if (migrate) {
    TS_RETURN_IF_ERROR(
        (*db)->Exec("ALTER TABLE jobs ADD COLUMN lease_request TEXT"));
  }
  absl::StatusOr<std::unique_ptr<sql::Db>> reader =
      sql::Db::Open(path, options.vfs);
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<Store>(
      new Store(std::make_unique<sql::BatchWriter>(std::move(*db)),
                std::move(*reader), clock, options));
}

absl::Status Store::Event(sql::Db& db, const std::string& job_id, int64_t epoch,
                          absl::string_view kind, absl::string_view detail) {
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "INSERT INTO events (job_id, epoch, kind, detail, at_ms) "
      "VALUES (?, ?, ?, ?, ?)");
  if (!st.ok()) return st.status();
  return st->Bind(1, job_id)
      .Bind(2, epoch)
      .Bind(3, kind)
      .Bind(4, detail)
      .Bind(5, clock_->NowMs())
      .Run();
}

absl::StatusOr<SubmitResult> Store::SubmitSweep(
    const SweepSpec& spec, const std::vector<JobSpec>& jobs) {
  const std::string kind = spec.kind == SweepKind::kTrain ? "train" : "tails";
  const std::string fixed = ToJson(spec.fixed);
  const int64_t now = clock_->NowMs();
  SubmitResult result;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    absl::StatusOr<sql::Statement> find =
        db.Prepare("SELECT sweep_id, kind, fixed FROM sweeps WHERE name = ?");
    if (!find.ok()) return find.status();
    find->Bind(1, spec.name);
    absl::StatusOr<bool> row = find->Step();
    if (!row.ok()) return row.status();
    int64_t sweep_id;
    if (*row) {
      sweep_id = find->Int(0);
      if (find->Text(1) != kind || find->Text(2) != fixed) {
        return absl::FailedPreconditionError(absl::StrCat(
            "sweep '", spec.name, "' exists with other kind or fixed values (",
            find->Text(1), ", ", find->Text(2),
            "); submit the changed spec under a new name"));
      }
    } else {
      absl::StatusOr<sql::Statement> add = db.Prepare(
          "INSERT INTO sweeps (name, kind, fixed, created_ms) VALUES (?, ?, ?, "
          "?)");
      if (!add.ok()) return add.status();
      TS_RETURN_IF_ERROR(add->Bind(1, spec.name)
                             .Bind(2, kind)
                             .Bind(3, fixed)
                             .Bind(4, now)
                             .Run());
      sweep_id = sqlite3_last_insert_rowid(db.raw());
    }
    absl::StatusOr<sql::Statement> job = db.Prepare(
        "INSERT OR IGNORE INTO jobs (job_id, kind, params, state, created_ms, "
        "updated_ms) VALUES (?, ?, ?, 'queued', ?, ?)");
    absl::StatusOr<sql::Statement> link = db.Prepare(
        "INSERT OR IGNORE INTO sweep_jobs (sweep_id, job_id, cell, position) "
        "VALUES (?, ?, ?, ?)");
    if (!job.ok()) return job.status();
    if (!link.ok()) return link.status();
    for (size_t i = 0; i < jobs.size(); ++i) {
      TS_RETURN_IF_ERROR(job->Bind(1, jobs[i].id)
                             .Bind(2, kind)
                             .Bind(3, ToJson(jobs[i].params))
                             .Bind(4, now)
                             .Bind(5, now)
                             .Run());
      job->Reset().IgnoreError();
      TS_RETURN_IF_ERROR(link->Bind(1, sweep_id)
                             .Bind(2, jobs[i].id)
                             .Bind(3, ToJson(jobs[i].cell))
                             .Bind(4, static_cast<int64_t>(i))
                             .Run());
      (db.Changes() > 0 ? result.added : result.existing) += 1;
      link->Reset().IgnoreError();
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<std::vector<Lease>> Store::LeaseJobs(
    const std::string& worker, int64_t max_jobs, int64_t lease_ms,
    const std::string& request_id) {
  const int64_t now = clock_->NowMs();
  std::vector<Lease> leases;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    leases.clear();
    if (!request_id.empty()) {
      // A retry of a call whose answer was lost: the same leases again.
      absl::StatusOr<sql::Statement> again = db.Prepare(
          "SELECT j.job_id, j.params, j.epoch, j.attempt, j.kind, "
          "  (SELECT s.name FROM sweep_jobs sj JOIN sweeps s USING (sweep_id) "
          "   WHERE sj.job_id = j.job_id ORDER BY s.sweep_id LIMIT 1), "
          "  j.lease_deadline_ms "
          "FROM jobs j WHERE j.state = 'leased' AND j.holder = ? AND "
          "j.lease_request = ? ORDER BY j.created_ms, j.rowid");
      if (!again.ok()) return again.status();
      again->Bind(1, worker).Bind(2, request_id);
      while (true) {
        absl::StatusOr<bool> row = again->Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        leases.push_back({again->Text(0), again->Text(5), again->Text(4),
                          again->Int(2), again->Int(3), again->Int(6),
                          FromJson(again->Text(1))});
      }
      // Seen before: the leases above (those still held), nothing new.
      absl::StatusOr<sql::Statement> seen = db.Prepare(
          "INSERT OR IGNORE INTO lease_requests (worker_id, request_id, "
          "at_ms) VALUES (?, ?, ?)");
      if (!seen.ok()) return seen.status();
      TS_RETURN_IF_ERROR(
          seen->Bind(1, worker).Bind(2, request_id).Bind(3, now).Run());
      if (db.Changes() == 0) return absl::OkStatus();
    }
    absl::StatusOr<sql::Statement> pick = db.Prepare(
        "SELECT j.job_id, j.params, j.epoch, j.attempt, j.kind, "
        "  (SELECT s.name FROM sweep_jobs sj JOIN sweeps s USING (sweep_id) "
        "   WHERE sj.job_id = j.job_id ORDER BY s.sweep_id LIMIT 1) "
        "FROM jobs j WHERE j.state = 'queued' AND j.not_before_ms <= ? "
        "ORDER BY j.created_ms, j.rowid LIMIT ?");
    if (!pick.ok()) return pick.status();
    pick->Bind(1, now).Bind(2, max_jobs);
    while (true) {
      absl::StatusOr<bool> row = pick->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      Lease l;
      l.job_id = pick->Text(0);
      l.params = FromJson(pick->Text(1));
      l.epoch = pick->Int(2) + 1;
      l.attempt = pick->Int(3) + 1;
      l.kind = pick->Text(4);
      l.sweep = pick->Text(5);
      l.deadline_ms = now + lease_ms;
      leases.push_back(std::move(l));
    }
    absl::StatusOr<sql::Statement> take = db.Prepare(
        "UPDATE jobs SET state = 'leased', epoch = ?, attempt = ?, holder = ?, "
        "lease_deadline_ms = ?, updated_ms = ?, lease_request = ? "
        "WHERE job_id = ?");
    if (!take.ok()) return take.status();
    for (const Lease& l : leases) {
      TS_RETURN_IF_ERROR(take->Bind(1, l.epoch)
                             .Bind(2, l.attempt)
                             .Bind(3, worker)
                             .Bind(4, l.deadline_ms)
                             .Bind(5, now)
                             .Bind(6, request_id)
                             .Bind(7, l.job_id)
                             .Run());
      take->Reset().IgnoreError();
      TS_RETURN_IF_ERROR(Event(db, l.job_id, l.epoch, "leased", worker));
    }
    absl::StatusOr<sql::Statement> seen = db.Prepare(
        "INSERT INTO workers (worker_id, last_seen_ms) VALUES (?, ?) "
        "ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = "
        "excluded.last_seen_ms");
    if (!seen.ok()) return seen.status();
    return seen->Bind(1, worker).Bind(2, now).Run();
  });
  if (!status.ok()) return status;
  return leases;
}

absl::StatusOr<int64_t> Store::Heartbeat(const std::string& worker,
                                         const std::string& job_id,
                                         int64_t epoch, int64_t lease_ms) {
  const int64_t now = clock_->NowMs();
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "UPDATE jobs SET lease_deadline_ms = ?, updated_ms = ? "
        "WHERE job_id = ? AND holder = ?");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, now + lease_ms)
                           .Bind(2, now)
                           .Bind(3, job_id)
                           .Bind(4, worker)
                           .Run());
    if (db.Changes() == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", job_id, " is not held by worker ", worker));
    }
    absl::StatusOr<sql::Statement> seen =
        db.Prepare("UPDATE workers SET last_seen_ms = ? WHERE worker_id = ?");
    if (!seen.ok()) return seen.status();
    return seen->Bind(1, now).Bind(2, worker).Run();
  });
  if (!status.ok()) return status;
  return now + lease_ms;
}

absl::Status Store::AddMetrics(const std::string& worker,
                               const std::string& job_id, int64_t epoch,
                               const std::vector<MetricPoint>& points) {
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/true));
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "INSERT OR IGNORE INTO metrics (job_id, name, step, value) "
        "VALUES (?, ?, ?, ?)");
    if (!st.ok()) return st.status();
    for (const MetricPoint& p : points) {
      TS_RETURN_IF_ERROR(st->Bind(1, job_id)
                             .Bind(2, p.name)
                             .Bind(3, p.step)
                             .Bind(4, p.value)
                             .Run());
      st->Reset().IgnoreError();
    }
    return absl::OkStatus();
  });
}

absl::Status Store::Complete(const std::string& worker,
                             const std::string& job_id, int64_t epoch,
                             const std::string& result_json) {
  const int64_t now = clock_->NowMs();
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/true));
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "UPDATE jobs SET state = 'done', holder = NULL, updated_ms = ? "
        "WHERE job_id = ? AND state = 'leased'");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, now).Bind(2, job_id).Run());
    if (db.Changes() == 0) return absl::OkStatus();  // a replay
    absl::StatusOr<sql::Statement> res = db.Prepare(
        "INSERT OR REPLACE INTO results (job_id, result, completed_ms) "
        "VALUES (?, ?, ?)");
    if (!res.ok()) return res.status();
    TS_RETURN_IF_ERROR(
        res->Bind(1, job_id).Bind(2, result_json).Bind(3, now).Run());
    return Event(db, job_id, epoch, "done", "");
  });
}

absl::Status Store::RetryOrFail(sql::Db& db, const std::string& job_id,
                                int64_t attempt, const std::string& error) {
  const int64_t now = clock_->NowMs();
  const bool final = attempt >= options_.max_attempts;
  const int64_t backoff = std::min(
      options_.backoff_cap_ms, options_.backoff_base_ms << std::min<int64_t>(
                                   std::max<int64_t>(attempt - 1, 0), 20));
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "UPDATE jobs SET state = ?, holder = NULL, lease_deadline_ms = NULL, "
      "not_before_ms = ?, last_error = ?, updated_ms = ? WHERE job_id = ?");
  if (!st.ok()) return st.status();
  return st->Bind(1, absl::string_view(final ? "failed" : "queued"))
      .Bind(2, final ? int64_t{0} : now + backoff)
      .Bind(3, error)
      .Bind(4, now)
      .Bind(5, job_id)
      .Run();
}

absl::Status Store::Fail(const std::string& worker, const std::string& job_id,
                         int64_t epoch, const std::string& error) {
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    absl::StatusOr<sql::Statement> st =
        db.Prepare("SELECT attempt FROM jobs WHERE job_id = ?");
    if (!st.ok()) return st.status();
    st->Bind(1, job_id);
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    TS_RETURN_IF_ERROR(RetryOrFail(db, job_id, st->Int(0), error));
    return Event(db, job_id, epoch, "failed", error);
  });
}

absl::Status Store::Release(const std::string& worker,
                            const std::string& job_id, int64_t epoch,
                            const std::string& reason) {
  const int64_t now = clock_->NowMs();
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "UPDATE jobs SET state = 'queued', attempt = MAX(attempt - 1, 0), "
        "holder = NULL, lease_deadline_ms = NULL, not_before_ms = 0, "
        "updated_ms = ? WHERE job_id = ?");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, now).Bind(2, job_id).Run());
    return Event(db, job_id, epoch, "preempted", reason);
  });
}

absl::StatusOr<int64_t> Store::ExpireLeases() {
  const int64_t now = clock_->NowMs();
  int64_t expired = 0;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "SELECT job_id, attempt, epoch, holder FROM jobs "
        "WHERE state = 'leased' AND lease_deadline_ms < ?");
    if (!st.ok()) return st.status();
    st->Bind(1, now);
    std::vector<std::tuple<std::string, int64_t, int64_t, std::string>> rows;
    while (true) {
      absl::StatusOr<bool> row = st->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      rows.emplace_back(st->Text(0), st->Int(1), st->Int(2), st->Text(3));
    }
    for (const auto& [job, attempt, epoch, holder] : rows) {
      const std::string error =
          absl::StrCat("lease of worker ", holder, " expired");
      TS_RETURN_IF_ERROR(RetryOrFail(db, job, attempt, error));
      TS_RETURN_IF_ERROR(Event(db, job, epoch, "expired", error));
    }
    expired = static_cast<int64_t>(rows.size());
    // Retries come within seconds; a day of lease calls is plenty.
    absl::StatusOr<sql::Statement> prune =
        db.Prepare("DELETE FROM lease_requests WHERE at_ms < ?");
    if (!prune.ok()) return prune.status();
    return prune->Bind(1, now - 24 * 3600 * 1000).Run();
  });
  if (!status.ok()) return status;
  return expired;
}

namespace {

constexpr char kSweepJobs[] =
    "job_id IN (SELECT job_id FROM sweep_jobs JOIN sweeps USING (sweep_id) "
    "WHERE sweeps.name = ?)";

}  // namespace

absl::StatusOr<int64_t> Store::UpdateSweepJobs(const std::string& sweep,
                                               absl::string_view update) {
  int64_t changed = 0;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(CheckSweep(db, sweep));
    absl::StatusOr<sql::Statement> st =
        db.Prepare(absl::StrCat(update, " AND ", kSweepJobs));
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, clock_->NowMs()).Bind(2, sweep).Run());
    changed = db.Changes();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return changed;
}

absl::StatusOr<int64_t> Store::CancelSweep(const std::string& sweep) {
  return UpdateSweepJobs(sweep,
                         "UPDATE jobs SET state = 'cancelled', updated_ms = ? "
                         "WHERE state IN ('queued', 'leased')");
}

absl::StatusOr<int64_t> Store::ResumeSweep(const std::string& sweep) {
  return UpdateSweepJobs(
      sweep,
      "UPDATE jobs SET state = 'queued', attempt = 0, not_before_ms = 0, "
      "holder = NULL, updated_ms = ? WHERE state IN ('failed', 'cancelled')");
}

absl::StatusOr<CheckpointRow> Store::RecordCheckpoint(
    const std::string& worker, const std::string& job_id, int64_t epoch,
    const CheckpointRow& row) {
  CheckpointRow stored = row;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "INSERT INTO checkpoints (job_id, step, file, bytes, sha256, epoch, "
        "uploaded_ms) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (job_id) DO UPDATE SET step = excluded.step, "
        "file = excluded.file, bytes = excluded.bytes, "
        "sha256 = excluded.sha256, epoch = excluded.epoch, "
        "uploaded_ms = excluded.uploaded_ms WHERE excluded.step > step");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, job_id)
                           .Bind(2, row.step)
                           .Bind(3, row.file)
                           .Bind(4, row.bytes)
                           .Bind(5, row.sha256)
                           .Bind(6, epoch)
                           .Bind(7, clock_->NowMs())
                           .Run());
    if (db.Changes() > 0) return absl::OkStatus();
    // An older (or the same) step than the stored one: keep the stored one.
    absl::StatusOr<sql::Statement> q = db.Prepare(
        "SELECT step, file, bytes, sha256 FROM checkpoints WHERE job_id = ?");
    if (!q.ok()) return q.status();
    q->Bind(1, job_id);
    absl::StatusOr<bool> found = q->Step();
    if (!found.ok()) return found.status();
    stored = {q->Int(0), q->Text(1), q->Int(2), q->Text(3)};
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return stored;
}

}  // namespace tailsweep
