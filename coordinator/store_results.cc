// The store's metric and result mutations.

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"

namespace tailsweep {

absl::Status Store::AddMetrics(const std::string& worker,
                               const std::string& job_id, int64_t epoch,
                               const std::vector<MetricPoint>& points) {
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/true));
    // A point of a later attempt replaces an earlier attempt's at the same
    // step (a resumed run need not repeat the first one bit for bit); the
    // same attempt's again is a resend and changes nothing.
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "INSERT INTO metrics (job_id, name, step, value, epoch) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_id, name, step) DO UPDATE "
        "SET value = excluded.value, epoch = excluded.epoch "
        "WHERE excluded.epoch > metrics.epoch");
    if (!st.ok()) return st.status();
    for (const MetricPoint& p : points) {
      TS_RETURN_IF_ERROR(st->Bind(1, job_id)
                             .Bind(2, p.name)
                             .Bind(3, p.step)
                             .Bind(4, p.value)
                             .Bind(5, epoch)
                             .Run());
      st->Reset().IgnoreError();
    }
    return absl::OkStatus();
  });
}

absl::Status Store::Complete(const std::string& worker,
                             const std::string& job_id, int64_t epoch,
                             const std::string& result_json,
                             const std::string& stderr_tail) {
  const ChangesJobs changes{&generation_};
  const int64_t now = clock_->WallMs();
  return writer_->Run([&](sql::Db& db) -> absl::Status {
    TS_RETURN_IF_ERROR(store_internal::CheckLease(db, worker, job_id, epoch,
                                                  /*allow_done=*/true));
    // Only a result of the job's own kind is stored: aggregation reads it.
    absl::StatusOr<sql::Statement> kind =
        db.Prepare("SELECT kind, params FROM jobs WHERE job_id = ?");
    if (!kind.ok()) return kind.status();
    kind->Bind(1, job_id);
    TS_RETURN_IF_ERROR(kind->Step().status());
    const absl::StatusOr<JobKind> job_kind =
        store_internal::ParseKind(kind->Text(0));
    if (!job_kind.ok()) return job_kind.status();
    const JobKindDef& def = KindDef(*job_kind);
    const std::string params_json = kind->Text(1);
    kind->Reset().IgnoreError();
    const absl::StatusOr<int64_t> resumed_from = def.check_result(result_json);
    if (!resumed_from.ok()) return resumed_from.status();
    // Stored compact, one line per result (sqlite3 and pandas read it so).
    std::string compact = nlohmann::json::parse(result_json).dump();
    // A job cancelled while this lease ran is done all the same: the
    // result exists (done wins). An earlier attempt's error is history
    // (events), not this job's state.
    absl::StatusOr<sql::Statement> st = db.Prepare(
        "UPDATE jobs SET state = 'done', holder = NULL, last_error = NULL, "
        "updated_ms = ? "
        "WHERE job_id = ? AND state IN ('leased', 'cancelled')");
    if (!st.ok()) return st.status();
    TS_RETURN_IF_ERROR(st->Bind(1, now).Bind(2, job_id).Run());
    if (db.Changes() == 0) return absl::OkStatus();  // a replay
    // One run per stored curve: past the step this attempt resumed from,
    // only its own points stay (an earlier attempt may have gone further).
    absl::StatusOr<sql::Statement> splice = db.Prepare(
        "DELETE FROM metrics WHERE job_id = ? AND epoch < ? AND step > ?");
    if (!splice.ok()) return splice.status();
    TS_RETURN_IF_ERROR(
        splice->Bind(1, job_id).Bind(2, epoch).Bind(3, *resumed_from).Run());
    if (def.contract != nullptr) {
      // Judged here, on every attempt's points: a resumed attempt's host
      // never saw the earlier ones.
      absl::StatusOr<std::vector<MetricSummary>> summary =
          store_internal::MetricSummaries(db, job_id);
      if (!summary.ok()) return summary.status();
      const std::vector<OutcomeRule> rules =
          def.contract->metric_outcomes(store_internal::FromJson(params_json));
      compact = CommandResultWithSummary(compact, *summary,
                                         JudgeOutcomes(rules, *summary));
    }
    absl::StatusOr<sql::Statement> res = db.Prepare(
        "INSERT OR REPLACE INTO results (job_id, result, completed_ms) "
        "VALUES (?, ?, ?)");
    if (!res.ok()) return res.status();
    TS_RETURN_IF_ERROR(
        res->Bind(1, job_id).Bind(2, compact).Bind(3, now).Run());
    TS_RETURN_IF_ERROR(KeepLog(db, job_id, epoch, "done", stderr_tail));
    return Event(db, job_id, epoch, "done", "");
  });
}

}  // namespace tailsweep
