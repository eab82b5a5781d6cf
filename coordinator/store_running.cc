// Each sweep's running count (jobs leased and not cancelled by it), kept
// by temporary triggers on the writer's connection so a lease need not
// count them (issue 50); and the recount tests compare it with.

#include "absl/strings/str_cat.h"
#include "coordinator/store.h"
#include "coordinator/store_internal.h"

namespace tailsweep {

absl::Status Store::CheckRunningCounts() {
  return writer_->Run(
      [](sql::Db& db) { return store_internal::CheckRunningCounts(db); });
}

namespace store_internal {
namespace {

// Each sweep's jobs leased and not cancelled by it, counted afresh.
constexpr char kCountRunning[] =
    "SELECT sj.sweep_id, COUNT(*) FROM sweep_jobs sj JOIN jobs j "
    "ON j.job_id = sj.job_id WHERE j.state = 'leased' AND sj.cancelled = 0 "
    "GROUP BY sj.sweep_id";

}  // namespace

absl::Status KeepRunningCounts(sql::Db& db) {
  // Temporary: on this connection only (every write goes through it), made
  // afresh on each open, never in the file. Each change to a job's state,
  // to a sweep's hold on a job, or to which sweeps hold it moves the count.
  return db.Exec(absl::StrCat(
      "PRAGMA temp_store = MEMORY; "
      "DROP TABLE IF EXISTS temp.sweep_running; "
      "CREATE TEMP TABLE sweep_running (sweep_id INTEGER PRIMARY KEY, "
      "  running INTEGER NOT NULL); "
      "INSERT INTO temp.sweep_running ",
      kCountRunning,
      "; "
      "CREATE TEMP TRIGGER running_by_state AFTER UPDATE OF state ON main.jobs "
      "WHEN (old.state = 'leased') != (new.state = 'leased') BEGIN "
      "  INSERT INTO sweep_running (sweep_id, running) "
      "  SELECT sweep_id, CASE WHEN new.state = 'leased' THEN 1 ELSE -1 END "
      "  FROM sweep_jobs WHERE job_id = new.job_id AND cancelled = 0 "
      "  ON CONFLICT (sweep_id) DO UPDATE SET "
      "  running = running + excluded.running; "
      "END; "
      "CREATE TEMP TRIGGER running_by_removal AFTER DELETE ON main.jobs "
      "WHEN old.state = 'leased' BEGIN "
      "  UPDATE sweep_running SET running = running - 1 WHERE sweep_id IN "
      "  (SELECT sweep_id FROM sweep_jobs WHERE job_id = old.job_id "
      "  AND cancelled = 0); "
      "END; "
      "CREATE TEMP TRIGGER running_by_cancel AFTER UPDATE OF cancelled ON "
      "main.sweep_jobs WHEN (old.cancelled = 0) != (new.cancelled = 0) AND "
      "(SELECT state FROM jobs WHERE job_id = new.job_id) = 'leased' BEGIN "
      "  INSERT INTO sweep_running (sweep_id, running) VALUES (new.sweep_id, "
      "  CASE WHEN new.cancelled = 0 THEN 1 ELSE -1 END) "
      "  ON CONFLICT (sweep_id) DO UPDATE SET "
      "  running = running + excluded.running; "
      "END; "
      "CREATE TEMP TRIGGER running_by_join AFTER INSERT ON main.sweep_jobs "
      "WHEN new.cancelled = 0 AND "
      "(SELECT state FROM jobs WHERE job_id = new.job_id) = 'leased' BEGIN "
      "  INSERT INTO sweep_running (sweep_id, running) VALUES (new.sweep_id, "
      "1) "
      "  ON CONFLICT (sweep_id) DO UPDATE SET running = running + 1; "
      "END; "
      "CREATE TEMP TRIGGER running_by_leave AFTER DELETE ON main.sweep_jobs "
      "WHEN old.cancelled = 0 AND "
      "(SELECT state FROM jobs WHERE job_id = old.job_id) = 'leased' BEGIN "
      "  UPDATE sweep_running SET running = running - 1 "
      "  WHERE sweep_id = old.sweep_id; "
      "END; "
      "CREATE TEMP TRIGGER running_of_removed AFTER DELETE ON main.sweeps "
      "BEGIN DELETE FROM sweep_running WHERE sweep_id = old.sweep_id; END;"));
}

absl::Status CheckRunningCounts(sql::Db& db) {
  absl::StatusOr<sql::Statement> st = db.Prepare(absl::StrCat(
      "WITH fresh (sweep_id, n) AS (", kCountRunning,
      ") SELECT s.sweep_id, COALESCE(f.n, 0), COALESCE(r.running, 0) "
      "FROM sweeps s LEFT JOIN fresh f USING (sweep_id) "
      "LEFT JOIN temp.sweep_running r USING (sweep_id) "
      "WHERE COALESCE(f.n, 0) != COALESCE(r.running, 0) "
      "UNION ALL SELECT r.sweep_id, 0, r.running FROM temp.sweep_running r "
      "WHERE r.running != 0 AND r.sweep_id NOT IN (SELECT sweep_id FROM "
      "sweeps) LIMIT 1"));
  if (!st.ok()) return st.status();
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("sweep ", st->Int(0), " runs ",
                                          st->Int(1), " jobs; its count says ",
                                          st->Int(2)));
}

}  // namespace store_internal
}  // namespace tailsweep
