// The ends of the store's leases: renewal (heartbeats), failure, release,
// and expiry, with the lease clocks they keep.

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"

namespace tailsweep {

namespace {
// The lease period of a lease granted by a build that did not record it
// (before jobs.lease_ms): the worker's default then.
constexpr int64_t kUnrecordedLeaseMs = 30000;
// How often ExpireLeases also writes idle workers' last-seen times and
// prunes the remembered lease calls.
constexpr int64_t kUpkeepEveryMs = 60000;
}  // namespace

absl::StatusOr<int64_t> Store::Heartbeat(const std::string& worker,
                                         const std::string& job_id,
                                         int64_t epoch, int64_t lease_ms) {
  const int64_t now = clock_->WallMs();
  const int64_t steady = clock_->SteadyMs();
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "UPDATE jobs SET lease_deadline_ms = ?, updated_ms = ?, lease_ms = ? "
        "WHERE job_id = ? AND holder = ?");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, now + lease_ms)
                           .Bind(2, now)
                           .Bind(3, lease_ms)
                           .Bind(4, job_id)
                           .Bind(5, worker)
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
  if (sql::StorageFaultOf(status) == sql::StorageFault::kTransient) {
    // The disk refuses writes for now: the lease is renewed in memory,
    // where deadlines live (the row's deadline is for people), if it is
    // still this worker's. A full disk costs no worker its jobs.
    std::lock_guard<std::mutex> lock(lease_read_mu_);
    status = store_internal::CheckLease(*lease_reader_, worker, job_id, epoch,
                                        /*allow_done=*/false);
  }
  if (!status.ok()) return status;
  SetLeaseDeadline(job_id, epoch, lease_ms, steady + lease_ms);
  return now + lease_ms;
}

absl::Status Store::Fail(const std::string& worker, const std::string& job_id,
                         int64_t epoch, const std::string& error,
                         const std::string& stderr_tail, bool permanent) {
  const ChangesJobs changes{&generation_};
  const absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    absl::StatusOr<sql::Statement> st =
        db.Prepare("SELECT attempt FROM jobs WHERE job_id = ?");
    if (!st.ok()) return st.status();
    st->Bind(1, job_id);
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    const std::string why =
        permanent ? absl::StrCat(error, " (not retried: it would fail again)")
                  : error;
    TS_RETURN_IF_ERROR(RetryOrFail(db, job_id, st->Int(0), why, permanent));
    TS_RETURN_IF_ERROR(CountFailure(db, job_id));
    TS_RETURN_IF_ERROR(KeepLog(db, job_id, epoch, "failed", stderr_tail));
    return Event(db, job_id, epoch, "failed", why);
  });
  // A fail-fast hold may have begun.
  SweepsChanged();
  return status;
}

absl::Status Store::Release(const std::string& worker,
                            const std::string& job_id, int64_t epoch,
                            const std::string& reason) {
  const ChangesJobs changes{&generation_};
  const int64_t now = clock_->WallMs();
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/false));
    // A program that always says "preempted" (exit 3) would be requeued
    // forever: past kMaxReleases uncounted releases the job fails.
    absl::StatusOr<sql::Statement> count = db.Prepare(
        "SELECT COUNT(*) FROM events WHERE job_id = ? AND kind = 'preempted'");
    if (!count.ok()) return count.status();
    count->Bind(1, job_id);
    TS_RETURN_IF_ERROR(count->Step().status());
    const int64_t releases = count->Int(0);
    count->Reset().IgnoreError();
    if (releases >= kMaxReleases) {
      const std::string error = absl::StrCat(
          "given back ", releases + 1,
          " times without finishing (a program that always exits with the "
          "preempt code 3?); last: ",
          reason);
      absl::StatusOr<sql::Statement> fail = db.Prepare(
          "UPDATE jobs SET state = 'failed', holder = NULL, "
          "lease_deadline_ms = NULL, last_error = ?, updated_ms = ? "
          "WHERE job_id = ?");
      if (!fail.ok()) return fail.status();
      TS_RETURN_IF_ERROR(
          fail->Bind(1, error).Bind(2, now).Bind(3, job_id).Run());
      return Event(db, job_id, epoch, "failed", error);
    }
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "UPDATE jobs SET state = 'queued', attempt = MAX(attempt - 1, 0), "
        "holder = NULL, lease_deadline_ms = NULL, not_before_ms = 0, "
        "updated_ms = ? WHERE job_id = ?");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, now).Bind(2, job_id).Run());
    TS_RETURN_IF_ERROR(ForgetCursorsOf(db, job_id));
    return Event(db, job_id, epoch, "preempted", reason);
  });
}

void Store::SetLeaseDeadline(const std::string& job_id, int64_t epoch,
                             int64_t lease_ms, int64_t deadline_steady) {
  absl::MutexLock lock(&lease_mu_);
  LeaseClock& c = lease_clocks_[job_id];
  if (c.epoch > epoch) return;  // a newer lease was set meanwhile
  c = {epoch, lease_ms,
       std::max(deadline_steady,
                c.epoch == epoch ? c.deadline : deadline_steady)};
}

void Store::RestartLeaseClocks(int64_t now_steady) {
  absl::MutexLock lock(&lease_mu_);
  for (auto& [job, c] : lease_clocks_) {
    c.deadline = std::max(c.deadline, now_steady + c.lease_ms);
  }
}

absl::StatusOr<int64_t> Store::ExpireLeases(int64_t now_steady,
                                            std::vector<ExpiredLease>* which) {
  const ChangesJobs changes{&generation_};
  const int64_t now = clock_->WallMs();
  int64_t expired = 0;
  std::vector<std::string> gone;  // expired here: their clocks go
  absl::Status status = writer_->Run([&](sql::Db& db) -> absl::Status {
    gone.clear();
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "SELECT job_id, attempt, epoch, holder, lease_ms FROM jobs "
        "WHERE state = 'leased'");
    if (!st.ok()) return st.status();
    struct Live {
      std::string job;
      int64_t attempt, epoch;
      std::string holder;
      int64_t lease_ms;
    };
    std::vector<Live> rows;
    while (true) {
      absl::StatusOr<bool> row = st->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      rows.push_back({st->Text(0), st->Int(1), st->Int(2), st->Text(3),
                      st->IsNull(4) ? kUnrecordedLeaseMs : st->Int(4)});
    }
    std::vector<Live> due;
    {
      absl::MutexLock lock(&lease_mu_);
      absl::flat_hash_map<std::string, LeaseClock> live;
      for (const Live& r : rows) {
        auto it = lease_clocks_.find(r.job);
        LeaseClock c =
            it != lease_clocks_.end() && it->second.epoch == r.epoch
                ? it->second
                : LeaseClock{r.epoch, r.lease_ms, now_steady + r.lease_ms};
        if (now_steady > c.deadline + options_.lease_grace_ms) {
          due.push_back(r);
        } else {
          live[r.job] = c;
        }
      }
      // Jobs no longer leased drop out. A lease committed after the SELECT
      // sets its clock after its commit, so after this round.
      lease_clocks_ = std::move(live);
    }
    if (which != nullptr) which->clear();
    for (const Live& r : due) {
      const std::string error =
          absl::StrCat("lease of worker ", r.holder, " expired");
      TS_RETURN_IF_ERROR(RetryOrFail(db, r.job, r.attempt, error));
      TS_RETURN_IF_ERROR(Event(db, r.job, r.epoch, "expired", error));
      if (which != nullptr) {
        which->push_back(
            {r.job, r.epoch, r.holder, r.attempt >= options_.max_attempts});
      }
    }
    expired = static_cast<int64_t>(due.size());
    if (now_steady < next_upkeep_steady_) return absl::OkStatus();
    // Once a minute: when idle workers were last seen, and pruning the
    // remembered lease calls (retries come within seconds; a day is
    // plenty), by their index.
    absl::flat_hash_map<std::string, int64_t> seen;
    {
      absl::MutexLock lock(&lease_mu_);
      seen.swap(idle_seen_);
      absl::erase_if(worker_devices_, [&](const auto& entry) {
        return entry.second.seen_ms < now - 24 * 3600 * 1000;
      });
    }
    absl::StatusOr<sql::Statement> mark = db.Prepare(
        "INSERT INTO workers (worker_id, last_seen_ms) VALUES (?, ?) "
        "ON CONFLICT (worker_id) DO UPDATE SET last_seen_ms = "
        "MAX(last_seen_ms, excluded.last_seen_ms)");
    if (!mark.ok()) return mark.status();
    for (const auto& [worker, at] : seen) {
      TS_RETURN_IF_ERROR(mark->Bind(1, worker).Bind(2, at).Run());
      mark->Reset().IgnoreError();
    }
    absl::StatusOr<sql::Statement> prune =
        db.Prepare("DELETE FROM lease_requests WHERE at_ms < ?");
    if (!prune.ok()) return prune.status();
    TS_RETURN_IF_ERROR(prune->Bind(1, now - 24 * 3600 * 1000).Run());
    next_upkeep_steady_ = now_steady + kUpkeepEveryMs;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return expired;
}

}  // namespace tailsweep
