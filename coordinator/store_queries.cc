// The store's reads: they run on their own connection (WAL lets them go on
// while the writer commits), one at a time.

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"

namespace tailsweep {

using store_internal::CheckSweep;
using store_internal::FromJson;
using store_internal::ParseState;

absl::StatusOr<SweepCounts> Store::Counts(const std::string& sweep) {
  absl::StatusOr<std::vector<JobRow>> jobs = Jobs(sweep);
  if (!jobs.ok()) return jobs.status();
  SweepCounts c;
  for (const JobRow& j : *jobs) {
    switch (j.state) {
      case JobState::kQueued:
        ++c.queued;
        break;
      case JobState::kLeased:
        ++c.leased;
        break;
      case JobState::kDone:
        ++c.done;
        break;
      case JobState::kFailed:
        ++c.failed;
        break;
      case JobState::kCancelled:
        ++c.cancelled;
        break;
    }
  }
  return c;
}

absl::StatusOr<std::vector<JobRow>> Store::Jobs(const std::string& sweep) {
  std::lock_guard<std::mutex> lock(read_mu_);
  TS_RETURN_IF_ERROR(CheckSweep(*reader_, sweep));
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT j.job_id, sj.cell, j.state, j.epoch, j.attempt, "
      "COALESCE(j.holder, ''), COALESCE(j.last_error, ''), "
      "COALESCE(r.result, '') "
      "FROM sweeps s JOIN sweep_jobs sj USING (sweep_id) "
      "JOIN jobs j USING (job_id) LEFT JOIN results r USING (job_id) "
      "WHERE s.name = ? ORDER BY sj.position");
  if (!st.ok()) return st.status();
  st->Bind(1, sweep);
  std::vector<JobRow> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    JobRow r;
    r.job_id = st->Text(0);
    r.cell = FromJson(st->Text(1));
    absl::StatusOr<JobState> state = ParseState(st->Text(2));
    if (!state.ok()) return state.status();
    r.state = *state;
    r.epoch = st->Int(3);
    r.attempt = st->Int(4);
    r.holder = st->Text(5);
    r.last_error = st->Text(6);
    r.result_json = st->Text(7);
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
    out.push_back({st->Text(0), st->Int(1), st->Int(2)});
  }
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
  std::lock_guard<std::mutex> lock(read_mu_);
  return store_internal::CheckLease(*reader_, worker, job_id, epoch,
                                    /*allow_done=*/false);
}

absl::StatusOr<CheckpointRow> Store::Checkpoint(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  absl::StatusOr<sql::Statement> st = reader_->Prepare(
      "SELECT step, file, bytes, sha256 FROM checkpoints WHERE job_id = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, job_id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    return absl::NotFoundError(absl::StrCat("no checkpoint for job ", job_id));
  }
  return CheckpointRow{st->Int(0), st->Text(1), st->Int(2), st->Text(3)};
}

}  // namespace tailsweep
