// The store's sweep mutations: submit, cancel, resume. Cancels are per
// sweep (sweep_jobs.cancelled): a job stops only when every sweep that has
// it cancelled it, and a resume brings back only the sweep's own jobs.

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"
#include "coordinator/store_sql.h"
#include "core/schema/version.h"

namespace tailsweep {

using store_internal::ToJson;

absl::StatusOr<SubmitResult> Store::SubmitSweep(
    const SweepSpec& spec, const std::vector<JobSpec>& jobs,
    int64_t first_position) {
  const ChangesJobs changes{&generation_};
  const std::string kind(JobKindName(spec.kind));
  const std::string fixed = ToJson(spec.fixed);
  const int64_t now = clock_->WallMs();
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
          "INSERT INTO sweeps (name, kind, fixed, created_ms, spec, version) "
          "VALUES (?, ?, ?, ?, ?, ?)");
      if (!add.ok()) return add.status();
      TS_RETURN_IF_ERROR(add->Bind(1, spec.name)
                             .Bind(2, kind)
                             .Bind(3, fixed)
                             .Bind(4, now)
                             .Bind(5, spec.text)
                             .Bind(6, std::string(Version()))
                             .Run());
      sweep_id = sqlite3_last_insert_rowid(db.raw());
    }
    TS_RETURN_IF_ERROR(
        store_internal::ApplyControl(db, sweep_id, spec.control));
    // The spec says all its outputs (defaults for what it leaves out): a
    // resubmit's replace the stored ones.
    absl::StatusOr<sql::Statement> outputs =
        db.Prepare("UPDATE sweeps SET outputs = ? WHERE sweep_id = ?");
    if (!outputs.ok()) return outputs.status();
    TS_RETURN_IF_ERROR(
        outputs->Bind(1, RunOutputsJson(spec.outputs)).Bind(2, sweep_id).Run());
    ForgetCursor(sweep_id);  // a new cell may come before the finished ones
    int64_t first = first_position;
    if (first < 0) {  // after the sweep's last job
      absl::StatusOr<sql::Statement> last = db.Prepare(
          "SELECT COALESCE(MAX(position) + 1, 0) FROM sweep_jobs "
          "WHERE sweep_id = ?");
      if (!last.ok()) return last.status();
      last->Bind(1, sweep_id);
      TS_RETURN_IF_ERROR(last->Step().status());
      first = last->Int(0);
      last->Reset().IgnoreError();
    }
    absl::StatusOr<sql::Statement> job = db.Prepare(
        "INSERT OR IGNORE INTO jobs (job_id, kind, params, state, created_ms, "
        "updated_ms) VALUES (?, ?, ?, 'queued', ?, ?)");
    absl::StatusOr<sql::Statement> link = db.Prepare(
        "INSERT OR IGNORE INTO sweep_jobs (sweep_id, job_id, cell, position) "
        "VALUES (?, ?, ?, ?)");
    // A job every other sweep of it cancelled is wanted again by this one.
    absl::StatusOr<sql::Statement> revive = db.Prepare(
        "UPDATE jobs SET state = 'queued', attempt = 0, not_before_ms = 0, "
        "holder = NULL, lease_deadline_ms = NULL, updated_ms = ? "
        "WHERE job_id = ? AND state = 'cancelled'");
    if (!job.ok()) return job.status();
    if (!link.ok()) return link.status();
    if (!revive.ok()) return revive.status();
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
                             .Bind(4, first + static_cast<int64_t>(i))
                             .Run());
      const bool linked = db.Changes() > 0;
      (linked ? result.added : result.existing) += 1;
      link->Reset().IgnoreError();
      if (linked) {
        TS_RETURN_IF_ERROR(revive->Bind(1, now).Bind(2, jobs[i].id).Run());
        revive->Reset().IgnoreError();
      }
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  SweepsChanged();
  return result;
}

namespace {

// Runs `sql` binding ?1 = sweep id and, when it has it, ?2 = now; returns
// the rows changed.
absl::StatusOr<int64_t> RunOnSweep(sql::Db& db, absl::string_view sql,
                                   int64_t sweep_id, int64_t now,
                                   const std::string& job = "") {
  absl::StatusOr<sql::Statement> st = db.Prepare(sql);
  if (!st.ok()) return st.status();
  st->Bind(1, sweep_id);
  if (absl::StrContains(sql, "?2")) st->Bind(2, now);
  if (absl::StrContains(sql, "?3")) st->Bind(3, job);
  TS_RETURN_IF_ERROR(st->Run());
  return db.Changes();
}

// No sweep wants the job any more: each of its sweeps cancelled it.
constexpr char kNoLiveSweep[] =
    "NOT EXISTS (SELECT 1 FROM sweep_jobs o WHERE o.job_id = j.job_id AND "
    "o.cancelled = 0)";

}  // namespace

absl::StatusOr<Store::CancelResult> Store::CancelSweep(const std::string& sweep,
                                                       const std::string& job) {
  const ChangesJobs changes{&generation_};
  const int64_t now = clock_->WallMs();
  CancelResult result;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    result = {};
    absl::StatusOr<int64_t> id = store_internal::SweepId(db, sweep);
    if (!id.ok()) return id.status();
    if (!job.empty()) {
      absl::StatusOr<sql::Statement> has = db.Prepare(
          "SELECT 1 FROM sweep_jobs WHERE sweep_id = ? AND job_id = ?");
      if (!has.ok()) return has.status();
      has->Bind(1, *id).Bind(2, job);
      absl::StatusOr<bool> row = has->Step();
      has->Reset().IgnoreError();
      if (!row.ok()) return row.status();
      if (!*row) {
        return absl::NotFoundError(
            absl::StrCat("sweep '", sweep, "' has no job ", job));
      }
    }
    // ?3: the one job, or '' for all of them.
    absl::StatusOr<int64_t> n = RunOnSweep(
        db,
        "UPDATE sweep_jobs SET cancelled = 1 WHERE sweep_id = ?1 AND "
        "(?3 = '' OR job_id = ?3) AND cancelled = 0 AND job_id IN (SELECT "
        "job_id FROM jobs j WHERE j.state IN ('queued', 'leased'))",
        *id, now, job);
    if (!n.ok()) return n.status();
    result.cancelled = *n;
    // The jobs no other live sweep shares stop (holders hear it on their
    // next heartbeat); the others run on for the sweeps that want them.
    const std::string stopping = absl::StrCat(
        "j.state IN ('queued', 'leased') AND j.job_id IN (SELECT job_id FROM "
        "sweep_jobs WHERE sweep_id = ?1 AND (?3 = '' OR job_id = ?3)) AND ",
        kNoLiveSweep);
    absl::StatusOr<sql::Statement> event = db.Prepare(absl::StrCat(
        "INSERT INTO events (job_id, epoch, kind, detail, at_ms) "
        "SELECT j.job_id, j.epoch, 'cancelled', ?4, ?2 FROM jobs j WHERE ",
        stopping));
    if (!event.ok()) return event.status();
    TS_RETURN_IF_ERROR(event->Bind(1, *id)
                           .Bind(2, now)
                           .Bind(3, job)
                           .Bind(4, absl::StrCat("sweep ", sweep))
                           .Run());
    // Their running attempts end now in the lease history.
    absl::StatusOr<int64_t> ended = RunOnSweep(
        db,
        absl::StrCat(
            "UPDATE jobs AS j SET gpu_ms = gpu_ms + CASE WHEN lease_gpus > 0 "
            "THEN MAX(?2 - leased_ms, 0) * lease_gpus ELSE 0 END, cpu_ms = "
            "cpu_ms + CASE WHEN lease_gpus = 0 THEN MAX(?2 - leased_ms, 0) "
            "ELSE 0 END, leased_ms = NULL WHERE leased_ms IS NOT NULL AND ",
            stopping),
        *id, now, job);
    if (!ended.ok()) return ended.status();
    absl::StatusOr<int64_t> stopped = RunOnSweep(
        db,
        absl::StrCat("UPDATE jobs AS j SET state = 'cancelled', updated_ms = "
                     "?2 WHERE ",
                     stopping),
        *id, now, job);
    if (!stopped.ok()) return stopped.status();
    result.kept = result.cancelled - *stopped;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<int64_t> Store::JobsInSweep(const std::string& sweep,
                                           const std::vector<JobSpec>& jobs) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> has = reader_->Prepare(
      "SELECT 1 FROM sweeps s JOIN sweep_jobs sj USING (sweep_id) "
      "WHERE s.name = ? AND sj.job_id = ?");
  if (!has.ok()) return has.status();
  int64_t n = 0;
  for (const JobSpec& j : jobs) {
    has->Reset().IgnoreError();
    has->Bind(1, sweep).Bind(2, j.id);
    absl::StatusOr<bool> row = has->Step();
    if (!row.ok()) return row.status();
    n += *row ? 1 : 0;
  }
  has->Reset().IgnoreError();
  return n;
}

absl::StatusOr<int64_t> Store::ResumeSweep(const std::string& sweep) {
  const ChangesJobs changes{&generation_};
  const int64_t now = clock_->WallMs();
  int64_t requeued = 0;
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    absl::StatusOr<int64_t> id = store_internal::SweepId(db, sweep);
    if (!id.ok()) return id.status();
    // What the sweep shows as failed or cancelled comes back to it: jobs
    // that stopped are queued again; those another sweep kept running are
    // simply the sweep's again.
    absl::StatusOr<sql::Statement> count = db.Prepare(absl::StrCat(
        "SELECT COUNT(*) FROM sweep_jobs sj JOIN jobs j USING (job_id) "
        "WHERE sj.sweep_id = ? AND ",
        StoreSql("sweep_job_state"), " IN ('failed', 'cancelled')"));
    if (!count.ok()) return count.status();
    count->Bind(1, *id);
    TS_RETURN_IF_ERROR(count->Step().status());
    requeued = count->Int(0);
    count->Reset().IgnoreError();
    absl::StatusOr<int64_t> n = RunOnSweep(
        db,
        "UPDATE sweep_jobs SET cancelled = 0 WHERE sweep_id = ?1 AND "
        "cancelled <> 0",
        *id, now);
    if (!n.ok()) return n.status();
    n = RunOnSweep(
        db,
        "UPDATE jobs AS j SET state = 'queued', attempt = 0, not_before_ms = "
        "0, holder = NULL, lease_deadline_ms = NULL, updated_ms = ?2 WHERE "
        "j.state IN ('failed', 'cancelled') AND j.job_id IN (SELECT job_id "
        "FROM sweep_jobs WHERE sweep_id = ?1)",
        *id, now);
    if (!n.ok()) return n.status();
    // A fail-fast hold ends; its count starts again.
    n = RunOnSweep(db,
                   "UPDATE sweeps SET held = '', failures = 0 WHERE sweep_id "
                   "= ?1",
                   *id, now);
    ForgetCursor(*id);
    return n.status();
  });
  if (!status.ok()) return status;
  SweepsChanged();  // a fail-fast hold ended
  return requeued;
}

}  // namespace tailsweep
