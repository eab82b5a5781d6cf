#ifndef TAILSWEEP_CORE_SCHEMA_JOB_PROTOCOL_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_PROTOCOL_H_

// The child-job protocol: how a worker runs one leased job as a child
// process `tailsweep-lab lab train|tails` (cli/lab_main.cc), and what the
// child leaves behind.
//
// - Command line and environment: ChildCommandFor (job_kinds.h). A train job
// gets every
//   job key as --set KEY=VALUE, --out-dir, --device (cpu or cuda; the
//   job's GPUs are made the only visible ones: CUDA_VISIBLE_DEVICES is set
//   to ChildJob::visible_devices, worker/allocation.h says which entries)
//   and --resume when DIR/checkpoints holds a checkpoint; a tails job gets
//   its keys as lab tails' flags. Both get --threads and OMP_NUM_THREADS.
// - Files in the job directory DIR: metrics.jsonl (train: one line per
//   logged step, metrics_line.h; appended and flushed line by line, so the
//   last line may be half written while the job runs; rewritten through a
//   rename on resume), checkpoints/step-N.pt (checkpoint_name.h, written
//   atomically), result.json (job_result.h, written atomically once the
//   job ends), stdout.txt and stderr.txt (the child's output; progress on
//   stderr), and lease, which the worker writes: the lease watchdog
//   (lease_file.h), after which a train child stops as on SIGTERM.
// - Exit: status 0 with result.json means done, or, for a train result
//   with "stopped": true, stopped. Stopped also: status kExitStopped (a
//   child that stops on SIGTERM without a checkpoint, e.g. lab tails), and
//   death by SIGTERM or SIGUSR1 itself (a child signalled, or drained by
//   Slurm, before it installed its handler). Stopped means the job was asked to
//   stop (preemption), is not a failure, and is resumed from its newest
//   checkpoint, if any, or run again. Status 2: the job's input was refused (it
//   will fail again). Any other status or signal, or 0 without a readable
//   result: failed.
// Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tailsweep {

inline constexpr char kMetricsFileName[] = "metrics.jsonl";
inline constexpr char kResultFileName[] = "result.json";
inline constexpr char kCheckpointDirName[] = "checkpoints";
inline constexpr char kStdoutFileName[] = "stdout.txt";
inline constexpr char kStderrFileName[] = "stderr.txt";
// The worker's own: packed checkpoint directories waiting for their upload.
inline constexpr char kCheckpointBundleDirName[] = "checkpoint-bundles";

// DIR/NAME: a file of the job directory (one of the names above), or a job
// directory under a work directory.
std::string JobPath(const std::string& dir, const std::string& name);

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitStopped = 3;  // stopped on SIGTERM, nothing kept

struct ChildJob {
  // tailsweep-lab, or tailsweep (which hands `lab` to tailsweep-lab)
  std::string lab_bin;
  std::string kind;  // its kind's name (job_kinds.h)
  std::vector<std::pair<std::string, std::string>> params;  // job keys
  std::string device = "cpu";                               // cpu or cuda:N
  int threads = 1;                                          // torch threads
  std::string dir;                                          // the job directory
  // For a cuda device: the child's CUDA_VISIBLE_DEVICES (e.g. "5", "5,7"
  // for a job of two GPUs, or GPU-UUIDs); empty: N of cuda:N.
  std::string visible_devices = {};
  // For command jobs (core/schema/command_job.h): the job's id, its attempt
  // (1, 2, ...) and the step of the checkpoint it resumes from (0: none).
  std::string job_id = {};
  int64_t attempt = 1;
  int64_t resume_step = 0;
};

struct ChildCommand {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // NAME=VALUE, added to the worker's own
  std::string workdir;            // "": the worker's own
  // The child and its descendants form their own process group, which
  // signals reach as a whole (command jobs).
  bool process_group = false;
  // Files the launcher writes (atomically) before it starts the child.
  std::vector<std::pair<std::string, std::string>> files = {};
};

// The start of a `tailsweep-lab lab KIND` child's command: argv up to
// `lab`, and the thread count in its environment (train and tails jobs).
ChildCommand LabChildCommand(const ChildJob& job);

enum class JobOutcome { kDone, kStopped, kFailed };

struct FinishedJob {
  JobOutcome outcome = JobOutcome::kFailed;
  std::string result_json;  // kDone: the result, as the child wrote it
  // kFailed: what went wrong (exit status, ...); kStopped: how it stopped.
  std::string error;
  // kStopped by the child's lease watchdog (a train result with
  // "lease_ran_out"), not by a signal.
  bool lease_ran_out = false;
  // kFailed for a reason a retry would meet again (a limit, a program that
  // cannot be run, input refused): the job fails now, its other attempts
  // unspent (FailJobRequest.permanent).
  bool permanent = false;
};

// The most a job's result may hold (its result.json, as the worker sends
// it in CompleteJob): larger outputs are artifacts.
inline constexpr int64_t kMaxResultFileBytes = 1 << 20;
// Why a result of `bytes` is over kMaxResultFileBytes, for the job's error.
std::string ResultTooLarge(int64_t bytes);

// The outcome every kind reads the same from a child's exit status
// (`exit_code`, 128 + S when killed by signal S): stopped (kExitStopped,
// SIGTERM, SIGUSR1) or failed (any other status but 0; kExitBadInput says
// "input refused" when `bad_input_code`). nullopt for status 0: the kind
// reads its result.
std::optional<FinishedJob> ReadExit(int exit_code, bool bad_input_code);

// The child's result file, or a failure that says why there is none.
absl::StatusOr<std::string> ReadResultFile(const std::string& dir);

// The end of a child whose result file is its whole outcome: ReadExit's,
// else done with the result file when `check` (nullptr: none) accepts it,
// else failed saying why.
FinishedJob ReadDoneResult(const std::string& dir, int exit_code,
                           bool bad_input_code,
                           absl::Status (*check)(absl::string_view result));

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_PROTOCOL_H_
