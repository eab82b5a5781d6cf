#ifndef TAILSWEEP_COORDINATOR_STORE_H_
#define TAILSWEEP_COORDINATOR_STORE_H_

// The coordinator's state, all of it in one SQLite file (WAL mode): sweeps,
// jobs and their leases, events, metrics and results. The schema is the
// documented, queryable artefact (docs/cli.md, "The results database").
//
// Leases and fencing (system.md): leasing a job gives (job, epoch,
// deadline); each lease has a new epoch, so every later call carrying an
// older epoch is refused with FailedPrecondition, and every call from a
// worker that does not hold the lease with PermissionDenied. A lease not
// renewed by its deadline goes back to the queue (ExpireLeases); after
// `max_attempts` attempts the job fails with its last error. Metrics are keyed
// by (job, name, step): a replayed batch changes nothing.
//
// Thread-safe. Every mutation is its own savepoint inside a transaction
// that one writer thread shares among the mutations that arrive together
// (sql::BatchWriter): an OK answer has been committed. Reads use a second
// connection.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/batch_writer.h"
#include "coordinator/sqlite_db.h"
#include "core/schema/clock.h"
#include "core/schema/disk_space.h"
#include "core/schema/job_counts.h"
#include "core/schema/job_kind.h"
#include "core/schema/job_state.h"
#include "core/schema/metric_point.h"
#include "core/schema/run_outputs.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep {

struct StoreOptions {
  // Attempts before a job fails for good. Default: 3.
  int64_t max_attempts = 3;
  // Retry backoff after a failed attempt: base * 2^(attempt-1), capped.
  int64_t backoff_base_ms = 1000;
  int64_t backoff_cap_ms = 60000;
  // A lease expires this long after its deadline, so a worker whose own
  // clock ran the lease out (it stops its job then, worker.h) has stopped
  // it before anyone else can lease the job.
  int64_t lease_grace_ms = 5000;
  // No job is leased before this steady time (ms; 0: no hold). After a
  // restore from a backup: a worker still running a job the backup does not
  // know of hears so at its next heartbeat and stops it before the job can
  // be leased again, so no job runs twice at once.
  int64_t hold_leases_until_steady_ms = 0;
  // The SQLite VFS to open the file with (tests inject storage faults);
  // empty: the default.
  std::string vfs;
  // Free space where the database lives, for storage messages; default:
  // FreeBytes (statvfs).
  FreeBytesFn free_bytes;
};

struct Lease {
  std::string job_id;
  std::string sweep;  // the sweep it was leased for
  std::string kind;   // train | tails
  int64_t epoch = 0;
  int64_t attempt = 0;
  int64_t deadline_ms = 0;
  KeyValues params;
  double timeout_s = 0;  // the sweep's timeout_s per attempt; 0: none
  // The sweep's output keys (notify aside, the worker's part).
  std::shared_ptr<const RunOutputs> outputs;
};

// How a sweep runs (core/schema/sweep_control.h), as stored: set by its
// spec's control keys and changed by UpdateSweep.
struct SweepSettings {
  int64_t priority = 0;
  int64_t max_running = 0;  // 0: no limit
  bool paused = false;
  // Why its queued jobs are held (fail-fast: max_failures reached), for
  // people; empty: not held. ResumeSweep clears it.
  std::string held;
  int64_t max_failures = 0;  // 0: never held
  int64_t failures = 0;      // failed attempts since its last resume
  double timeout_s = 0;      // 0: none
  std::vector<std::pair<std::string, std::string>> tags;  // by key
  std::string notes;
  std::string stop;  // the ASHA rule's JSON (AshaJson); empty: none
};

// A sweep as leasing reads it (Store::LeaseSweeps).
struct LeaseSweep {
  int64_t sweep_id = 0;
  std::string name;
  int64_t priority = 0;
  int64_t max_running = 0;
  double timeout_s = 0;
  std::shared_ptr<const RunOutputs> outputs;
};

// Device time a sweep's attempts used, from the lease history (each
// attempt from its lease to its outcome, or now while it runs): GPU hours
// are hours times the job's GPUs on a GPU worker, CPU hours hours of a slot
// on a CPU-only worker. Attempts that were given back (preempted) or whose
// lease expired count as spent and are also shown apart.
struct SweepHours {
  double gpu_hours = 0, cpu_hours = 0;
  double preempted_gpu_hours = 0, preempted_cpu_hours = 0;
};

struct SubmitResult {
  int64_t added = 0;     // new jobs
  int64_t existing = 0;  // jobs the sweep already had
};

// A job as one sweep sees it.
struct JobRow {
  std::string job_id;
  KeyValues cell;
  int64_t position = 0;  // in the sweep's grid order
  // The sweep's view: done and failed as the job is; cancelled when this
  // sweep cancelled it; else the job's own state.
  JobState state = JobState::kQueued;
  // The job's own state: differs from `state` when the sweep cancelled a
  // job that another sweep sharing it still runs (queued or leased).
  JobState job_state = JobState::kQueued;
  int64_t epoch = 0, attempt = 0;
  std::string holder;
  std::string last_error;
  std::string result_json;  // empty unless done
  KeyValues params;         // the full assignment, by key
  int64_t updated_ms = 0;   // the job's last change (Unix ms)
  // Device time its attempts used, to now (SweepHours says how).
  double gpu_hours = 0, cpu_hours = 0;
  // The step of its best checkpoint kept for its metric; 0: none.
  int64_t best_checkpoint_step = 0;
  // What its attempts made that was not stored, and why (RecordNotKept):
  // the newest 8, oldest first.
  std::vector<std::string> not_kept;
};

// A stored checkpoint: the file (relative to the data directory) and what
// it must hash to.
struct CheckpointRow {
  int64_t step = 0;
  std::string file;
  int64_t bytes = 0;
  std::string sha256;
  int64_t uploaded_ms = 0;
  bool best = false;  // kept for its metric (kept_checkpoints)
  double metric = 0;  // when best
};

// A file an attempt made, stored under the data directory (job_files):
// a log (stdout, stderr: gzip) or an artifact (its path in the job
// directory).
struct JobFileRow {
  std::string kind;  // log | artifact
  std::string name;
  int64_t epoch = 0;
  std::string file;   // relative to the data directory
  int64_t bytes = 0;  // as stored
  std::string sha256;
  int64_t original_bytes = 0;
  bool cut = false;
  bool gzip = false;
  int64_t uploaded_ms = 0;
};

// The database file's own marks: SQLite's application_id says it is a
// tailsweep store, user_version which schema it has (each migration of
// Store::Open adds one). A file marked newer than this build is refused;
// one with no marks (0) is an older store and is migrated. Readers of the
// file (python/tailsweep/_database.py) check the same numbers.
inline constexpr int64_t kStoreApplicationId = 0x54535750;  // "TSWP"
inline constexpr int64_t kStoreSchemaVersion = 9;

class Store {
 public:
  // Opens or creates the database and its schema.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     Clock* clock,
                                                     StoreOptions options = {});

  // Adds the sweep and its jobs; jobs it already has are left alone, so
  // submitting twice changes nothing and an extended grid adds only new
  // cells. FailedPrecondition when a sweep of that name exists with other
  // `fixed` values or another kind (submit under a new name instead). New
  // jobs take grid positions from `first_position` on (a boundary search's
  // later rounds come after its earlier ones); -1: after the sweep's last.
  absl::StatusOr<SubmitResult> SubmitSweep(const SweepSpec& spec,
                                           const std::vector<JobSpec>& jobs,
                                           int64_t first_position = 0);

  // Leases up to `max_jobs` queued jobs past their backoff, one at a time
  // from the best sweep: the highest priority, then the fewest of its jobs
  // leased (fair share), then the oldest; none from a sweep paused, held
  // (fail-fast) or at its max_running; within a sweep, in grid order. Each
  // lease carries its sweep's timeout_s. Jobs are leased
  // to `worker` until now + lease_ms (steady clock; the deadline returned is
  // on the wall clock, for people). Empty when none is ready. A repeated
  // call with the same non-empty `request_id` returns the jobs the first
  // one leased (those still held, maybe none) and leases nothing more;
  // request ids are kept for a day. A call that finds nothing queued (and
  // is no repeat) writes nothing: it is answered from the read connection.
  // `free_slots`: the worker's free slots per placement unit
  // (core/schema/device_placement.h); only jobs that fit are leased, placed
  // in order as PlaceJob does, and jobs that do not fit are passed over for
  // later ones. Empty: only jobs whose "gpus" is 1. `kinds`: only jobs of
  // these kinds (job_kind.h names) are leased; empty: every kind.
  // `devices`: the worker's ("cpu", "cuda:N"), kept in memory for Workers();
  // when all are "cpu", no job that names "gpus" is leased (those need a
  // GPU); empty: no such rule.
  absl::StatusOr<std::vector<Lease>> LeaseJobs(
      const std::string& worker, int64_t max_jobs, int64_t lease_ms,
      const std::string& request_id = "",
      const std::vector<int>& free_slots = {},
      const std::vector<std::string>& kinds = {},
      const std::vector<std::string>& devices = {});

  // Whether any job is queued (ready or waiting out a retry's backoff) or
  // leased: more work may come to an idle worker. On the read connection.
  absl::StatusOr<bool> HasUnfinishedJobs();

  // Renews a lease to now + lease_ms and returns the new deadline (wall
  // clock, for people).
  // FailedPrecondition when `epoch` is not the job's live lease held by
  // `worker`; Cancelled when the job was cancelled (the worker must stop it).
  absl::StatusOr<int64_t> Heartbeat(const std::string& worker,
                                    const std::string& job_id, int64_t epoch,
                                    int64_t lease_ms);

  // Stores metric points under the lease's epoch. A point at an existing
  // (job, name, step) replaces it when it comes from a later lease (a
  // resumed attempt), and is ignored otherwise (a resend). FailedPrecondition
  // for a stale epoch.
  absl::Status AddMetrics(const std::string& worker, const std::string& job_id,
                          int64_t epoch,
                          const std::vector<MetricPoint>& points);

  // Marks the job done with its result, a result.json of the job's kind
  // (core/schema/job_result.h; InvalidArgument, naming the field, for any
  // other shape), and keeps the job's stderr tail (JobLog). Points of
  // earlier leases past the step the result resumed from are deleted, so
  // the stored curve is one run's. Repeating the same call is OK; a stale
  // epoch is FailedPrecondition.
  absl::Status Complete(const std::string& worker, const std::string& job_id,
                        int64_t epoch, const std::string& result_json,
                        const std::string& stderr_tail = "");

  // Records a failed attempt: back to the queue after a capped backoff, or
  // failed for good after max_attempts. Keeps the stderr tail. Stale epoch:
  // FailedPrecondition.
  // `permanent`: it would fail again; no attempt is left for it.
  absl::Status Fail(const std::string& worker, const std::string& job_id,
                    int64_t epoch, const std::string& error,
                    const std::string& stderr_tail = "",
                    bool permanent = false);

  // Gives the lease back without counting the attempt (preemption): the job
  // is queued again at once; past kMaxReleases such give-backs it fails
  // instead (a program that always exits with the preempt code would loop).
  // Stale epoch: FailedPrecondition.
  static constexpr int64_t kMaxReleases = 100;
  absl::Status Release(const std::string& worker, const std::string& job_id,
                       int64_t epoch, const std::string& reason);

  // Lease deadlines run on the steady clock and live in memory: a live
  // lease the store has no deadline for (granted before this process
  // started, or a moment ago) gets a full lease period from `now_steady`.
  // So a coordinator that was down expires nothing for its absence, and a
  // dead worker's job is requeued a lease period (plus the grace) after the
  // coordinator is back.
  //
  // Once a minute it also records when idle workers last polled and prunes
  // the lease calls remembered for retries.
  //
  // Returns to the queue (or fails at the attempt limit) the leases whose
  // deadline plus lease_grace_ms is before `now_steady` (the caller's
  // reading: a pause after it cannot make the round expire what it should
  // not). Returns how many expired; when `expired` is given, also which.
  struct ExpiredLease {
    std::string job_id;
    int64_t epoch = 0;
    std::string holder;
    bool failed = false;  // the attempt limit was reached
  };
  absl::StatusOr<int64_t> ExpireLeases(
      int64_t now_steady, std::vector<ExpiredLease>* expired = nullptr);
  // Gives every live lease at least a full lease period from `now_steady`:
  // after a pause of this process (SIGSTOP, a VM frozen) that no worker
  // could have renewed through.
  void RestartLeaseClocks(int64_t now_steady);

  // Cancels the sweep's queued and leased jobs, for this sweep: a job stops
  // (state cancelled; its holder is told on its next heartbeat) only when
  // no other sweep that has it is live for it; otherwise it runs on for
  // those sweeps (`kept`) and this one shows it cancelled. A result that
  // arrives later under the live lease is still taken (done wins). With
  // `job`, only that job of the sweep. NotFound for an unknown sweep, or a
  // job the sweep does not have.
  struct CancelResult {
    int64_t cancelled = 0;  // the sweep's jobs it cancelled now
    int64_t kept = 0;       // of those, still wanted by another sweep
  };
  absl::StatusOr<CancelResult> CancelSweep(const std::string& sweep,
                                           const std::string& job = "");
  // How many of `jobs` the sweep has (0 for a sweep not there): a dry
  // run's "already there".
  absl::StatusOr<int64_t> JobsInSweep(const std::string& sweep,
                                      const std::vector<JobSpec>& jobs);
  // Brings back what the sweep shows as failed or cancelled (never done
  // jobs): stopped jobs are requeued with a fresh attempt count; jobs
  // another sweep kept running are the sweep's again. Other sweeps'
  // cancels stand. Returns how many. NotFound for an unknown sweep.
  absl::StatusOr<int64_t> ResumeSweep(const std::string& sweep);

  // Changes a live sweep's settings: each field that is set. Tags in
  // `tags` are set (an empty value removes the tag). NotFound for an
  // unknown sweep; InvalidArgument for a priority out of range or a bad
  // tag. Returns the settings now.
  struct SweepUpdate {
    std::optional<int64_t> priority;
    std::optional<int64_t> max_running;  // 0: no limit
    std::optional<bool> paused;
    std::vector<std::pair<std::string, std::string>> tags;
    std::optional<std::string> notes;
  };
  absl::StatusOr<SweepSettings> UpdateSweep(const std::string& sweep,
                                            const SweepUpdate& update);
  // Removes a sweep: its row, its grid rows, and the jobs no other sweep
  // has with their metrics, results, checkpoints' records, logs and
  // events. FailedPrecondition while any of its jobs is leased, unless
  // `force` (those are cancelled first; their holders stop them). With
  // `dry_run` nothing changes. `files`: the checkpoint files (relative to
  // the data directory) the caller deletes after a real run.
  struct RemoveResult {
    int64_t jobs = 0;         // removed with the sweep
    int64_t shared_jobs = 0;  // kept: another sweep has them
    int64_t running = 0;      // of the removed, leased when it began
    int64_t metric_points = 0;
    std::vector<std::string> files;
  };
  absl::StatusOr<RemoveResult> RemoveSweep(const std::string& sweep, bool force,
                                           bool dry_run);

  // Stop rules (coordinator/stop_rules.h): the sweeps live for `job_id`
  // with a stop rule, and that rule's JSON (AshaJson).
  struct StopRuleOf {
    std::string sweep;
    std::string rule;
  };
  absl::StatusOr<std::vector<StopRuleOf>> StopRulesOf(
      const std::string& job_id);
  // The job's highest step of metric `name`; -1 when it has none.
  absl::StatusOr<int64_t> MaxStep(const std::string& job_id,
                                  const std::string& name);
  // For each job of `sweep` (only `job` when given) with a point of `name`
  // at `step` or later: its last value at or before `step` (NaN for a
  // non-finite one, or none). On the read connection.
  absl::StatusOr<std::vector<double>> ValuesAtStep(const std::string& sweep,
                                                   const std::string& name,
                                                   int64_t step,
                                                   const std::string& job = "");

  // OK when `epoch` is the job's live lease; the statuses of Heartbeat.
  absl::Status CheckLease(const std::string& worker, const std::string& job_id,
                          int64_t epoch);
  // Records a checkpoint uploaded under the live lease `epoch` when it is
  // newer than the stored one, which becomes the previous one; returns the
  // one stored now (the caller deletes the files that are neither).
  // Stale epoch: FailedPrecondition.
  absl::StatusOr<CheckpointRow> RecordCheckpoint(const std::string& worker,
                                                 const std::string& job_id,
                                                 int64_t epoch,
                                                 const CheckpointRow& row);
  // The sweeps that hold a job, with their output keys (notices).
  struct SweepOutputs {
    std::string sweep;
    RunOutputs outputs;
  };
  absl::StatusOr<std::vector<SweepOutputs>> SweepsOfJob(
      const std::string& job_id);
  // Keeps the checkpoint `row` (recorded already as the job's newest) for
  // its metric as well, then keeps only the job's best `keep.at_most` (all
  // when 0) by it. Returns the files no longer kept for their metric (the
  // caller removes those no other record points to).
  absl::StatusOr<std::vector<std::string>> KeepCheckpoint(
      const std::string& job_id, int64_t epoch, const CheckpointRow& row,
      double metric, const CheckpointKeep& keep);
  // The job's stored checkpoints, newest first: the newest and the one
  // before it (kept as its fallback), and with `with_kept` those kept for
  // their metric (one row a step). NotFound when it has none.
  absl::StatusOr<std::vector<CheckpointRow>> Checkpoints(
      const std::string& job_id, bool with_kept = false);
  // Checkpoints no job can need, to prune when room is short, in the
  // order to prune them: the older (fallback) ones of jobs neither queued
  // nor leased, then the newest ones of done jobs.
  struct SpareCheckpoint {
    std::string job_id;
    std::string file;
    bool previous = false;  // in previous_checkpoints, else checkpoints
    std::string why;        // for the log
  };
  absl::StatusOr<std::vector<SpareCheckpoint>> SpareCheckpoints();
  // Drops the record of `c` (the caller removes its file).
  absl::Status ForgetCheckpoint(const SpareCheckpoint& c);
  // Records a file of the attempt `epoch` (its live lease, or the lease
  // that ended it) and returns the files it replaces: the same name of the
  // same attempt, and for an artifact the same name of older attempts
  // (the caller removes them). The statuses of CheckLease.
  absl::StatusOr<std::vector<std::string>> RecordJobFile(
      const std::string& worker, const std::string& job_id, int64_t epoch,
      const JobFileRow& row);
  // The job's stored files: logs by epoch (newest first), then artifacts
  // by name.
  absl::StatusOr<std::vector<JobFileRow>> JobFiles(const std::string& job_id);

  // Records an event of a job (a damaged checkpoint, ...).
  // Records what an attempt made but did not store, and why (a checkpoint
  // or an artifact over its cap: the end report's not_kept, the
  // coordinator's refusals), as "not_kept" events: JobRow::not_kept.
  absl::Status RecordNotKept(const std::string& job_id, int64_t epoch,
                             const std::vector<std::string>& notes);
  absl::Status RecordEvent(const std::string& job_id, int64_t epoch,
                           absl::string_view kind, absl::string_view detail);

  // Counts by the sweep's view of its jobs (JobRow::state). NotFound for
  // an unknown sweep.
  absl::StatusOr<JobCounts> Counts(const std::string& sweep);

  // The sweep's done runs that ended before their last step by themselves
  // (job_result.h's early_stop), and the training steps they did not run
  // (their config's steps less steps_done; aggregate.cc counts the same per
  // cell). NotFound for an unknown sweep.
  struct EarlyStops {
    int64_t runs = 0;
    int64_t steps_saved = 0;
  };
  absl::StatusOr<EarlyStops> EarlyStopsOf(const std::string& sweep);
  // The sweep's jobs in grid order: only those in `state` (the sweep's
  // view) when given, only those after grid position `after_position`, at
  // most `limit` (0: all). NotFound for an unknown sweep.
  // `where`: only jobs whose parameter KEY is one of its values (as
  // text), every key; `updated_since_ms`: only jobs changed after it.
  struct JobsQuery {
    std::string sweep;
    std::optional<JobState> state;
    int64_t after_position = -1;
    int64_t limit = 0;
    std::vector<std::pair<std::string, std::vector<std::string>>> where;
    int64_t updated_since_ms = 0;
    // > 0: stop after the row whose results and parameters take the rows
    // read past this many bytes (a page's budget: rows beyond it would be
    // read for nothing).
    int64_t max_bytes = 0;
  };
  absl::StatusOr<std::vector<JobRow>> Jobs(const JobsQuery& query);
  absl::StatusOr<std::vector<JobRow>> Jobs(
      const std::string& sweep, std::optional<JobState> state = std::nullopt) {
    JobsQuery query;
    query.sweep = sweep;
    query.state = state;
    return Jobs(query);
  }
  // NotFound for an unknown sweep.
  absl::StatusOr<JobKind> Kind(const std::string& sweep);
  struct SweepRow {
    std::string name;
    JobKind kind;  // train unless set
    int64_t created_ms = 0;
    JobCounts counts;
    SweepSettings settings;
    SweepHours hours;
  };
  // Every sweep, oldest first.
  absl::StatusOr<std::vector<SweepRow>> Sweeps();
  // One sweep's settings and hours (the rest of the row is not filled).
  // NotFound for an unknown sweep.
  absl::StatusOr<SweepRow> SettingsOf(const std::string& sweep);
  // One sweep with what it was made from. NotFound naming the sweeps that
  // exist for an unknown one.
  struct SweepDetail {
    SweepRow row;
    std::string spec;  // as first submitted; empty for older files
    KeyValues fixed;
    std::string version;  // the build that expanded it; empty for older
  };
  absl::StatusOr<SweepDetail> Sweep(const std::string& sweep);
  // A page of a job's metric points, ordered by (name, step): those named
  // in `names` (all when empty), with step_min <= step <= step_max (0: no
  // bound), after the point (after_name, after_step) when after_name is
  // set, at most `limit`. NaN values read back as NaN. NotFound for an
  // unknown job.
  struct MetricsQuery {
    std::string job_id;
    std::vector<std::string> names;
    int64_t step_min = 0, step_max = 0;
    std::string after_name;
    int64_t after_step = 0;
    int64_t limit = 5000;
  };
  absl::StatusOr<std::vector<MetricPoint>> Metrics(const MetricsQuery& query);
  // A page of a sweep's metric points: its jobs in grid order, each job's
  // points by (name, step) as Metrics reads them, from just after the point
  // `after` (position -1: the start), at most `limit` points, as one series
  // per (job, name) (a series a page cuts goes on in the next page).
  // NotFound for an unknown sweep.
  struct SweepMetricsQuery {
    std::string sweep;
    std::vector<std::string> names;  // empty: every name
    int64_t step_min = 0, step_max = 0;
    struct After {
      int64_t position = -1;
      std::string name;
      int64_t step = 0;
    } after;
    int64_t limit = 50000;
  };
  struct MetricSeries {
    int64_t position = 0;  // the job's grid position in the sweep
    std::string job_id;
    std::string name;
    std::vector<int64_t> steps;
    std::vector<double> values;  // NaN where the point was NaN
  };
  absl::StatusOr<std::vector<MetricSeries>> SweepMetrics(
      const SweepMetricsQuery& query);
  // The stderr tails kept for a job, newest first. `job` is its id or a
  // unique prefix of it; NotFound when none matches, FailedPrecondition
  // when several do.
  struct JobLogEntry {
    int64_t epoch = 0;
    std::string outcome;  // done | failed
    std::string stderr_tail;
    int64_t at_ms = 0;
  };
  struct JobLogs {
    std::string job_id;
    JobState state = JobState::kQueued;
    std::string last_error;
    std::vector<JobLogEntry> logs;
  };
  absl::StatusOr<JobLogs> JobLog(const std::string& job);
  // The job whose id is or starts with `job` (ids are hex digits): its own
  // state as both state and job_state, its grid values in the first sweep
  // that holds it. NotFound; FailedPrecondition when several match.
  absl::StatusOr<JobRow> Job(const std::string& job);
  struct WorkerRow {
    std::string worker_id;
    int64_t last_seen_ms = 0;
    int64_t jobs_held = 0;
    std::string devices;  // "cpu", "cuda:0,cuda:1"; "": not known
  };
  absl::StatusOr<std::vector<WorkerRow>> Workers();
  absl::StatusOr<int64_t> MetricCount(const std::string& job_id);
  // The result JSON of a done job; NotFound otherwise.
  absl::StatusOr<std::string> Result(const std::string& job_id);
  // Transactions the writer has committed (or tried to): for benchmarks.
  int64_t WriterTransactions() const { return writer_->transactions(); }
  // OK while writes work. Otherwise why not, in words for people that
  // name the database's directory and its free space: "the coordinator
  // cannot write: disk full at DIR (N MB free)", an I/O error there, or a
  // damaged database (then until a restart). A full disk or an I/O error
  // heals by itself once a write works again (BatchWriter).
  absl::Status Healthy() const;

  // OK when the running-job counts leasing keeps (KeepRunningCounts in
  // store_internal.h) agree with a count made afresh; Internal naming the
  // first sweep that differs otherwise. For tests.
  absl::Status CheckRunningCounts();
  // Times writes healed, and writes refused while they did not work.
  int64_t StorageHeals() const { return writer_->heals(); }
  int64_t StorageRefused() const { return writer_->refused(); }
  // The database file's directory, and the free space there
  // (StoreOptions::free_bytes).
  const std::string& dir() const { return dir_; }
  absl::StatusOr<int64_t> DirFreeBytes() const {
    return options_.free_bytes(dir_);
  }
  // Changes whenever a call that may change jobs' states, results or a
  // sweep's jobs has returned (leases, completions, failures, releases,
  // expiries, submits, cancels, resumes; not metrics, heartbeats or
  // checkpoints). Equal generations read the same results, so a reader may
  // reuse what it computed at one (ResultPages).
  uint64_t Generation() const { return generation_.load(); }
  // "ok" when PRAGMA integrity_check passes.
  absl::StatusOr<std::string> IntegrityCheck();

 private:
  Store(std::unique_ptr<sql::BatchWriter> writer,
        std::unique_ptr<sql::Db> reader, std::unique_ptr<sql::Db> lease_reader,
        Clock* clock, StoreOptions options, std::string dir)
      : writer_(std::move(writer)),
        reader_(std::move(reader)),
        lease_reader_(std::move(lease_reader)),
        clock_(clock),
        options_(std::move(options)),
        dir_(std::move(dir)) {}
  // Helpers for mutations; `db` is the writer's connection.
  // Fails the job for good when `attempt` is its last or `permanent`.
  absl::Status RetryOrFail(sql::Db& db, const std::string& job_id,
                           int64_t attempt, const std::string& error,
                           bool permanent = false);
  // Records an event of the job; an outcome (done, failed, preempted,
  // expired) also ends the lease `epoch` in the lease history (EndAttempt).
  absl::Status Event(sql::Db& db, const std::string& job_id, int64_t epoch,
                     absl::string_view kind, absl::string_view detail);
  // Counts a failed attempt of `job_id` against each sweep of it with a
  // max_failures, holding those that reach it.
  absl::Status CountFailure(sql::Db& db, const std::string& job_id);
  absl::Status KeepLog(sql::Db& db, const std::string& job_id, int64_t epoch,
                       absl::string_view outcome,
                       const std::string& stderr_tail);
  // True when LeaseJobs may lease something or must answer again: a job is
  // ready or (worker, request_id) is remembered. On the lease reader.
  absl::StatusOr<bool> MayLease(const std::string& worker,
                                const std::string& request_id, int64_t now);
  // Picks the jobs a lease call grants (store_leases.cc), into *granted;
  // how far each sweep has nothing queued into *cursors (scan_from_).
  absl::Status PickQueued(sql::Db& db, int64_t now, int64_t lease_ms,
                          int64_t max_jobs, const std::vector<int>& free_slots,
                          const std::vector<std::string>& kinds, bool cpu_only,
                          std::vector<Lease>* granted,
                          std::vector<std::pair<int64_t, int64_t>>* cursors);
  // The sweeps that may lease (not paused, not held), as leasing reads
  // them: kept in memory from the committed state until SweepsChanged().
  using LeaseSweepList = std::shared_ptr<const std::vector<LeaseSweep>>;
  absl::StatusOr<LeaseSweepList> LeaseSweeps();
  // A sweep's settings, held state or existence changed and committed.
  void SweepsChanged();
  // Forgets how far the sweep has nothing queued: its jobs may be queued
  // again (a submit, a resume, a removal).
  void ForgetCursor(int64_t sweep_id);
  // The same for every sweep of a job that goes back to the queue (a
  // retry, a release, an expired lease). In the writer's transaction.
  absl::Status ForgetCursorsOf(sql::Db& db, const std::string& job_id);
  // Keeps what a lease call found of how far sweeps are finished, unless a
  // ForgetCursor came after `generation` (cursor_generation_ then).
  void KeepCursors(const std::vector<std::pair<int64_t, int64_t>>& cursors,
                   uint64_t generation);
  // The steady deadline of the live lease (job, epoch).
  void SetLeaseDeadline(const std::string& job_id, int64_t epoch,
                        int64_t lease_ms, int64_t deadline_steady);

  // Every mutation runs on the writer's thread, batched with others.
  std::unique_ptr<sql::BatchWriter> writer_;
  // Bumped when a call that can change what results show (a job's state,
  // a result, a sweep's jobs) returns: Generation().
  struct ChangesJobs {
    std::atomic<uint64_t>* generation;
    ~ChangesJobs() { generation->fetch_add(1); }
  };
  std::atomic<uint64_t> generation_{0};
  // Reads: their own connection, one at a time.
  std::mutex read_mu_;
  std::unique_ptr<sql::Db> reader_;  // guarded by read_mu_
  // The workers' reads (may a lease be granted, is a lease live, is work
  // left) on a connection of their own: a page of a bulk read or a report
  // holds read_mu_ for tens of ms, and no lease waits behind it.
  std::mutex lease_read_mu_;
  std::unique_ptr<sql::Db> lease_reader_;  // guarded by lease_read_mu_
  Clock* clock_;
  StoreOptions options_;
  std::string dir_;  // the directory of the database file
  // Live leases' deadlines on the steady clock, by job (ExpireLeases).
  struct LeaseClock {
    int64_t epoch = 0;
    int64_t lease_ms = 0;
    int64_t deadline = 0;  // steady ms
  };
  absl::Mutex lease_mu_;
  absl::flat_hash_map<std::string, LeaseClock> lease_clocks_
      ABSL_GUARDED_BY(lease_mu_);
  // When idle workers last polled (wall ms), not yet in `workers`.
  absl::flat_hash_map<std::string, int64_t> idle_seen_
      ABSL_GUARDED_BY(lease_mu_);
  // Each worker's devices as its newest lease call named them, and when
  // (wall ms; forgotten a day after).
  struct WorkerDevices {
    std::string devices;
    int64_t seen_ms = 0;
  };
  absl::flat_hash_map<std::string, WorkerDevices> worker_devices_
      ABSL_GUARDED_BY(lease_mu_);
  int64_t next_upkeep_steady_ = 0;  // the writer thread's only
  // Per sweep, the grid position before which no job is queued for it
  // (each is leased, finished, or cancelled by it): a lease's scan starts
  // there, so it does not step over every running job each time. Whatever
  // puts a job before it back in the queue (a submit, a resume, a retry, a
  // release, an expired lease) forgets the entry and bumps the generation.
  absl::flat_hash_map<int64_t, int64_t> scan_from_ ABSL_GUARDED_BY(lease_mu_);
  uint64_t cursor_generation_ ABSL_GUARDED_BY(lease_mu_) = 0;
  // LeaseSweeps' copy, valid while lease_sweeps_of_ == sweeps_generation_.
  LeaseSweepList lease_sweeps_ ABSL_GUARDED_BY(lease_mu_);
  uint64_t lease_sweeps_of_ ABSL_GUARDED_BY(lease_mu_) = 0;
  uint64_t sweeps_generation_ ABSL_GUARDED_BY(lease_mu_) = 1;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_STORE_H_
