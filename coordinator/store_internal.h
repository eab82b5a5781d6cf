#ifndef TAILSWEEP_COORDINATOR_STORE_INTERNAL_H_
#define TAILSWEEP_COORDINATOR_STORE_INTERNAL_H_

// Pieces shared by the store's files (store.cc: mutations; store_queries.cc:
// reads). Not part of the Store's interface.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/store.h"
#include "core/schema/command_job.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_control.h"

namespace tailsweep::store_internal {

// The tables that hold rows of a job besides `jobs` itself: what goes with
// a removed job, and what a snapshot cut to one sweep keeps of its jobs.
inline constexpr const char* kPerJobTables[] = {
    "metrics",          "results",  "checkpoints", "previous_checkpoints",
    "kept_checkpoints", "job_logs", "job_files",   "events"};
// The tables that record files under the data directory (their `file`).
inline constexpr const char* kFileTables[] = {
    "checkpoints", "previous_checkpoints", "kept_checkpoints", "job_files"};

// Key/value lists as JSON objects (the params, cell and fixed columns).
std::string ToJson(const KeyValues& kv);
KeyValues FromJson(const std::string& text);
// The jobs.state column; DataLoss for a value the schema does not allow.
absl::StatusOr<JobState> ParseState(absl::string_view s);
// The jobs.kind and sweeps.kind columns; DataLoss likewise.
absl::StatusOr<JobKind> ParseKind(absl::string_view s);

// OK when `epoch` is the job's live lease held by `worker` (or, with
// allow_done, the lease that completed it, or the live lease of a job
// cancelled while `worker` held it: its metrics and result are kept);
// FailedPrecondition for a stale epoch or a job not leased,
// PermissionDenied for another worker's lease, Cancelled for a cancelled
// job, NotFound for an unknown one.
absl::Status CheckLease(sql::Db& db, const std::string& worker,
                        const std::string& job_id, int64_t epoch,
                        bool allow_done);
// NotFound for an unknown sweep name.
absl::Status CheckSweep(sql::Db& db, const std::string& sweep);
// The sweep's id; NotFound (NoSuchSweep) for an unknown name.
absl::StatusOr<int64_t> SweepId(sql::Db& db, const std::string& sweep);

// NotFound for `sweep`, an unknown name: "no sweep 'X'; sweeps: a, b" (the
// 20 newest of `sweeps`, oldest first; "none yet" when empty). The second
// form reads the names from `db`.
absl::Status NoSuchSweep(const std::string& sweep,
                         const std::vector<std::string>& sweeps);
absl::Status NoSuchSweep(sql::Db& db, const std::string& sweep);

// The summary of every metric of a job (command jobs), from its stored
// points. SQLite stores NaN as NULL: a NULL value counts as not finite.
absl::StatusOr<std::vector<MetricSummary>> MetricSummaries(
    sql::Db& db, const std::string& job_id);

// The control keys the spec sets (sweep_control.h) onto the sweep's row;
// tags merge with those it has.
absl::Status ApplyControl(sql::Db& db, int64_t sweep_id,
                          const SweepControl& control);
// Sets up, on the writer's connection, the running-job count of each sweep
// that leasing reads (temp.sweep_running: the sweep's jobs leased and not
// cancelled by it), counted once now and kept by temporary triggers on
// every change after, so a lease does not count every running job anew.
absl::Status KeepRunningCounts(sql::Db& db);
// OK when temp.sweep_running agrees with a count made afresh; Internal
// naming the first sweep that differs otherwise (for tests).
absl::Status CheckRunningCounts(sql::Db& db);

// Ends the live lease `epoch` of the job in its lease history: its time
// since leased_ms goes to gpu_ms (x lease_gpus) or cpu_ms, and also to the
// preempted columns when `preempted` (given back or expired). Nothing when
// the job's live lease is another or already ended.
absl::Status EndAttempt(sql::Db& db, const std::string& job_id, int64_t epoch,
                        int64_t now, bool preempted);
// Each row's settings, and its hours from the lease history (running
// attempts counted to `now`, Unix ms).
absl::Status FillSettingsAndHours(sql::Db& db, int64_t now,
                                  std::vector<Store::SweepRow>& rows);

}  // namespace tailsweep::store_internal

#endif  // TAILSWEEP_COORDINATOR_STORE_INTERNAL_H_
