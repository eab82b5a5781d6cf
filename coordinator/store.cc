// The store: its schema, opening (and migrating) a file, and the helpers
// every mutation shares (events, retry or fail).

#include "coordinator/store.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "coordinator/store_internal.h"

namespace tailsweep {

namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS sweeps (
  sweep_id    INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  kind        TEXT NOT NULL,              -- train | tails
  fixed       TEXT NOT NULL,              -- JSON object of the fixed keys
  created_ms  INTEGER NOT NULL,
  spec        TEXT NOT NULL DEFAULT '',   -- the spec's text, first submit
  version     TEXT NOT NULL DEFAULT '',   -- the build that expanded it
  -- How it runs (SweepSettings): leased by priority, then fair share.
  priority     INTEGER NOT NULL DEFAULT 0,
  max_running  INTEGER NOT NULL DEFAULT 0,   -- 0: no limit
  paused       INTEGER NOT NULL DEFAULT 0,
  held         TEXT NOT NULL DEFAULT '',     -- why its queue is held
  max_failures INTEGER NOT NULL DEFAULT 0,
  failures     INTEGER NOT NULL DEFAULT 0,   -- failed attempts since resume
  timeout_s    REAL NOT NULL DEFAULT 0,
  tags         TEXT NOT NULL DEFAULT '{}',   -- JSON object
  notes        TEXT NOT NULL DEFAULT '',
  stop_rule    TEXT NOT NULL DEFAULT '',     -- JSON (AshaJson)
  outputs      TEXT NOT NULL DEFAULT ''      -- JSON (RunOutputsJson)
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
  lease_ms          INTEGER,              -- period of the live lease
  created_ms        INTEGER NOT NULL,
  updated_ms        INTEGER NOT NULL,
  -- The lease history's device time (store_sql's sweep_hours): the live
  -- lease's start and GPUs (0: a CPU-only worker's slot), and the time
  -- its ended attempts used, the preempted and expired ones also apart.
  leased_ms         INTEGER,
  lease_gpus        INTEGER NOT NULL DEFAULT 0,
  gpu_ms            INTEGER NOT NULL DEFAULT 0,
  cpu_ms            INTEGER NOT NULL DEFAULT 0,
  preempted_gpu_ms  INTEGER NOT NULL DEFAULT 0,
  preempted_cpu_ms  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (state, created_ms);
CREATE TABLE IF NOT EXISTS sweep_jobs (
  sweep_id  INTEGER NOT NULL REFERENCES sweeps (sweep_id),
  job_id    TEXT NOT NULL REFERENCES jobs (job_id),
  cell      TEXT NOT NULL,                -- JSON object of the grid keys
  position  INTEGER NOT NULL,             -- order in the expanded grid
  cancelled INTEGER NOT NULL DEFAULT 0,   -- 1: this sweep cancelled the job
  PRIMARY KEY (sweep_id, job_id)
);
CREATE INDEX IF NOT EXISTS sweep_jobs_by_job ON sweep_jobs (job_id);
CREATE INDEX IF NOT EXISTS sweep_jobs_in_order ON sweep_jobs (sweep_id, position);
CREATE TABLE IF NOT EXISTS events (
  event_id  INTEGER PRIMARY KEY,
  job_id    TEXT NOT NULL,
  epoch     INTEGER,
  kind      TEXT NOT NULL,  -- leased, expired, failed, done, cancelled, ...
  detail    TEXT,
  at_ms     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_job ON events (job_id, kind);
CREATE TABLE IF NOT EXISTS metrics (
  job_id  TEXT NOT NULL,
  name    TEXT NOT NULL,
  step    INTEGER NOT NULL,
  value   REAL,
  epoch   INTEGER NOT NULL DEFAULT 0,       -- the lease that sent it
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
-- The checkpoint a job had before its newest: its fallback when the
-- newest file is found damaged (CheckpointStore::Download).
CREATE TABLE IF NOT EXISTS previous_checkpoints (
  job_id       TEXT PRIMARY KEY REFERENCES jobs (job_id),
  step         INTEGER NOT NULL,
  file         TEXT NOT NULL,
  bytes        INTEGER NOT NULL,
  sha256       TEXT NOT NULL,
  epoch        INTEGER NOT NULL,
  uploaded_ms  INTEGER NOT NULL
);
-- Checkpoints kept for their metric (a spec's `checkpoints: {keep: best
-- | all}`): the best `at_most` of a job. A row may share its file with the
-- job's newest checkpoint.
CREATE TABLE IF NOT EXISTS kept_checkpoints (
  job_id       TEXT NOT NULL REFERENCES jobs (job_id),
  step         INTEGER NOT NULL,
  file         TEXT NOT NULL,
  bytes        INTEGER NOT NULL,
  sha256       TEXT NOT NULL,
  epoch        INTEGER NOT NULL,
  uploaded_ms  INTEGER NOT NULL,
  metric       REAL NOT NULL,             -- its step's value of the metric
  rank_key     REAL NOT NULL,             -- lower is better (metric, or
                                          -- -metric when maximized)
  PRIMARY KEY (job_id, step)
) WITHOUT ROWID;
-- Files attempts made (JobFileStore): logs (gzip) and artifacts.
CREATE TABLE IF NOT EXISTS job_files (
  job_id          TEXT NOT NULL REFERENCES jobs (job_id),
  kind            TEXT NOT NULL,          -- log | artifact
  name            TEXT NOT NULL,          -- stdout | stderr | a path
  epoch           INTEGER NOT NULL,
  file            TEXT NOT NULL,          -- path under --data-dir
  bytes           INTEGER NOT NULL,
  sha256          TEXT NOT NULL,
  original_bytes  INTEGER NOT NULL,
  cut             INTEGER NOT NULL,
  gzip            INTEGER NOT NULL,
  uploaded_ms     INTEGER NOT NULL,
  PRIMARY KEY (job_id, kind, name, epoch)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lease_requests (  -- LeaseJobs calls, for retries
  worker_id   TEXT NOT NULL,
  request_id  TEXT NOT NULL,
  at_ms       INTEGER NOT NULL,
  PRIMARY KEY (worker_id, request_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lease_requests_age ON lease_requests (at_ms);
CREATE TABLE IF NOT EXISTS job_logs (   -- stderr tails sent with outcomes
  job_id       TEXT NOT NULL,
  epoch        INTEGER NOT NULL,
  outcome      TEXT NOT NULL,             -- done | failed
  stderr_tail  TEXT NOT NULL,
  at_ms        INTEGER NOT NULL,
  PRIMARY KEY (job_id, epoch)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS workers (
  worker_id     TEXT PRIMARY KEY,
  last_seen_ms  INTEGER NOT NULL
);
)sql";

// " (N MB free)", or nothing when the free space is unknown.
std::string SpaceNote(const absl::StatusOr<int64_t>& free) {
  return free.ok() ? absl::StrCat(" (", Megabytes(*free), " free)") : "";
}

// Columns and indexes of later schemas that files written before them lack:
// `add_column(table, column, type, backfill)` adds one when missing.
template <typename AddColumn>
absl::Status Migrate(sql::Db& db, AddColumn& add_column) {
  TS_RETURN_IF_ERROR(add_column("jobs", "lease_request", "TEXT", ""));
  TS_RETURN_IF_ERROR(add_column("jobs", "lease_ms", "INTEGER", ""));
  TS_RETURN_IF_ERROR(
      add_column("metrics", "epoch", "INTEGER NOT NULL DEFAULT 0", ""));
  TS_RETURN_IF_ERROR(
      add_column("sweeps", "spec", "TEXT NOT NULL DEFAULT ''", ""));
  TS_RETURN_IF_ERROR(
      add_column("sweeps", "version", "TEXT NOT NULL DEFAULT ''", ""));
  for (const auto& [column, type] :
       std::vector<std::pair<const char*, const char*>>{
           {"priority", "INTEGER NOT NULL DEFAULT 0"},
           {"max_running", "INTEGER NOT NULL DEFAULT 0"},
           {"paused", "INTEGER NOT NULL DEFAULT 0"},
           {"held", "TEXT NOT NULL DEFAULT ''"},
           {"max_failures", "INTEGER NOT NULL DEFAULT 0"},
           {"failures", "INTEGER NOT NULL DEFAULT 0"},
           {"timeout_s", "REAL NOT NULL DEFAULT 0"},
           {"tags", "TEXT NOT NULL DEFAULT '{}'"},
           {"notes", "TEXT NOT NULL DEFAULT ''"},
           {"stop_rule", "TEXT NOT NULL DEFAULT ''"},
           {"outputs", "TEXT NOT NULL DEFAULT ''"}}) {
    TS_RETURN_IF_ERROR(add_column("sweeps", column, type, ""));
  }
  for (const auto& [column, type] :
       std::vector<std::pair<const char*, const char*>>{
           {"leased_ms", "INTEGER"},
           {"lease_gpus", "INTEGER NOT NULL DEFAULT 0"},
           {"gpu_ms", "INTEGER NOT NULL DEFAULT 0"},
           {"cpu_ms", "INTEGER NOT NULL DEFAULT 0"},
           {"preempted_gpu_ms", "INTEGER NOT NULL DEFAULT 0"},
           {"preempted_cpu_ms", "INTEGER NOT NULL DEFAULT 0"}}) {
    TS_RETURN_IF_ERROR(add_column("jobs", column, type, ""));
  }
  // What leasing reads of every sweep, without the rows' spec text (which
  // may span overflow pages).
  TS_RETURN_IF_ERROR(db.Exec(
      "DROP INDEX IF EXISTS sweeps_leasing; "
      "CREATE INDEX IF NOT EXISTS sweeps_leasing_9 ON sweeps (paused, held, "
      "sweep_id, name, priority, max_running, timeout_s, outputs)"));
  // A job cancelled before cancels were per sweep: every sweep of it
  // cancelled it.
  TS_RETURN_IF_ERROR(
      add_column("sweep_jobs", "cancelled", "INTEGER NOT NULL DEFAULT 0",
                 "UPDATE sweep_jobs SET cancelled = 1 WHERE job_id IN "
                 "(SELECT job_id FROM jobs WHERE state = 'cancelled')"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                                   Clock* clock,
                                                   StoreOptions options) {
  absl::StatusOr<std::unique_ptr<sql::Db>> db =
      sql::Db::Open(path, options.vfs);
  if (!db.ok()) return db.status();
  // Files written before a column existed get it (the schema's CREATE
  // TABLE does not change an existing table), then `backfill` runs.
  auto add_column = [&](absl::string_view table, absl::string_view column,
                        absl::string_view type,
                        absl::string_view backfill) -> absl::Status {
    absl::StatusOr<sql::Statement> has =
        (*db)->Prepare(absl::StrCat("SELECT COUNT(*) FROM pragma_table_info('",
                                    table, "') WHERE name = '", column, "'"));
    if (!has.ok()) return has.status();
    if (absl::StatusOr<bool> row = has->Step(); !row.ok()) return row.status();
    const bool missing = has->Int(0) == 0;
    has->Reset().IgnoreError();
    if (!missing) return absl::OkStatus();
    TS_RETURN_IF_ERROR((*db)->Exec(absl::StrCat(
        "ALTER TABLE ", table, " ADD COLUMN ", column, " ", type)));
    return backfill.empty() ? absl::OkStatus() : (*db)->Exec(backfill);
  };
  auto pragma = [&](absl::string_view name) -> absl::StatusOr<int64_t> {
    absl::StatusOr<sql::Statement> st =
        (*db)->Prepare(absl::StrCat("PRAGMA ", name));
    if (!st.ok()) return st.status();
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    return *row ? st->Int(0) : 0;
  };
  absl::StatusOr<int64_t> app = pragma("application_id");
  if (!app.ok()) return app.status();
  absl::StatusOr<int64_t> version = pragma("user_version");
  if (!version.ok()) return version.status();
  if (*app != 0 && *app != kStoreApplicationId) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not a tailsweep database (SQLite application_id ",
                     *app, "); give --db a file of its own"));
  }
  if (*version > kStoreSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": its schema version is ", *version,
        ", newer than this "
        "build's ",
        kStoreSchemaVersion, "; run a newer tailsweep-coordinator"));
  }
  TS_RETURN_IF_ERROR((*db)->Exec(kSchema));
  TS_RETURN_IF_ERROR(Migrate(**db, add_column));
  TS_RETURN_IF_ERROR(store_internal::KeepRunningCounts(**db));
  TS_RETURN_IF_ERROR((*db)->Exec(
      absl::StrCat("PRAGMA application_id = ", kStoreApplicationId,
                   "; PRAGMA user_version = ", kStoreSchemaVersion)));
  absl::StatusOr<std::unique_ptr<sql::Db>> reader =
      sql::Db::Open(path, options.vfs);
  if (!reader.ok()) return reader.status();
  absl::StatusOr<std::unique_ptr<sql::Db>> lease_reader =
      sql::Db::Open(path, options.vfs);
  if (!lease_reader.ok()) return lease_reader.status();
  if (!options.free_bytes) options.free_bytes = FreeBytes;
  std::string dir = std::filesystem::absolute(path).parent_path().string();
  auto where = [dir, free_bytes = options.free_bytes] {
    return absl::StrCat(" at ", dir, SpaceNote(free_bytes(dir)));
  };
  return std::unique_ptr<Store>(new Store(
      std::make_unique<sql::BatchWriter>(std::move(*db), clock, where),
      std::move(*reader), std::move(*lease_reader), clock, std::move(options),
      std::move(dir)));
}

absl::Status Store::Healthy() const {
  const sql::BatchWriter::Health health = writer_->health();
  if (health.failure.ok()) return absl::OkStatus();
  const std::string space = SpaceNote(DirFreeBytes());
  if (health.corrupt) {
    return absl::DataLossError(
        absl::StrCat("the coordinator cannot write: the database in ", dir_,
                     " is damaged (", health.failure.message(),
                     "); restore it, then restart the coordinator"));
  }
  const int64_t for_s = (clock_->SteadyMs() - health.since_ms) / 1000;
  if (sql::IsDiskFull(health.failure)) {
    return absl::UnavailableError(
        absl::StrCat("the coordinator cannot write: disk full at ", dir_, space,
                     " for ", for_s, " s; it retries by itself"));
  }
  return absl::UnavailableError(absl::StrCat(
      "the coordinator cannot write: ", health.failure.message(), " at ", dir_,
      space, " for ", for_s, " s; it retries by itself"));
}

absl::Status Store::Event(sql::Db& db, const std::string& job_id, int64_t epoch,
                          absl::string_view kind, absl::string_view detail) {
  if (kind == "done" || kind == "failed" || kind == "preempted" ||
      kind == "expired") {
    TS_RETURN_IF_ERROR(
        store_internal::EndAttempt(db, job_id, epoch, clock_->WallMs(),
                                   kind == "preempted" || kind == "expired"));
  }
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "INSERT INTO events (job_id, epoch, kind, detail, at_ms) "
      "VALUES (?, ?, ?, ?, ?)");
  if (!st.ok()) return st.status();
  return st->Bind(1, job_id)
      .Bind(2, epoch)
      .Bind(3, kind)
      .Bind(4, detail)
      .Bind(5, clock_->WallMs())
      .Run();
}

absl::Status Store::KeepLog(sql::Db& db, const std::string& job_id,
                            int64_t epoch, absl::string_view outcome,
                            const std::string& stderr_tail) {
  if (stderr_tail.empty()) return absl::OkStatus();
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "INSERT OR REPLACE INTO job_logs (job_id, epoch, outcome, stderr_tail, "
      "at_ms) VALUES (?, ?, ?, ?, ?)");
  if (!st.ok()) return st.status();
  return st->Bind(1, job_id)
      .Bind(2, epoch)
      .Bind(3, outcome)
      .Bind(4, stderr_tail)
      .Bind(5, clock_->WallMs())
      .Run();
}

absl::Status Store::RetryOrFail(sql::Db& db, const std::string& job_id,
                                int64_t attempt, const std::string& error,
                                bool permanent) {
  const int64_t now = clock_->WallMs();
  const bool final = permanent || attempt >= options_.max_attempts;
  const int64_t backoff = std::min(
      options_.backoff_cap_ms, options_.backoff_base_ms << std::min<int64_t>(
                                   std::max<int64_t>(attempt - 1, 0), 20));
  absl::StatusOr<sql::Statement> st = db.Prepare(
      "UPDATE jobs SET state = ?, holder = NULL, lease_deadline_ms = NULL, "
      "not_before_ms = ?, last_error = ?, updated_ms = ? WHERE job_id = ?");
  if (!st.ok()) return st.status();
  TS_RETURN_IF_ERROR(
      st->Bind(1, JobStateName(final ? JobState::kFailed : JobState::kQueued))
          .Bind(2, final ? int64_t{0} : now + backoff)
          .Bind(3, error)
          .Bind(4, now)
          .Bind(5, job_id)
          .Run());
  return final ? absl::OkStatus() : ForgetCursorsOf(db, job_id);
}

}  // namespace tailsweep
