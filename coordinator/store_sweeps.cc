// The store's sweep mutations: submit, cancel, resume.

#include "absl/strings/str_cat.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"

namespace tailsweep {

using store_internal::CheckSweep;
using store_internal::ToJson;

absl::StatusOr<SubmitResult> Store::SubmitSweep(
    const SweepSpec& spec, const std::vector<JobSpec>& jobs) {
  const std::string kind = spec.kind == SweepKind::kTrain ? "train" : "tails";
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
    TS_RETURN_IF_ERROR(st->Bind(1, clock_->WallMs()).Bind(2, sweep).Run());
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

}  // namespace tailsweep
