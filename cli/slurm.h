#ifndef TAILSWEEP_CLI_SLURM_H_
#define TAILSWEEP_CLI_SLURM_H_

// A sweep on a Slurm cluster: `tailsweep slurm up SPEC --workers K` makes a
// run directory (proto/run_dir.h) and submits two jobs from
// deploy/slurm/: coordinator.sbatch, which runs `tailsweep slurm
// coordinator RUN` (a TLS certificate for its node, the coordinator on a
// port of its own; once it answers, the spec submitted, then RUN/address),
// and workers.sbatch, an array of K tasks, one `tailsweep-worker --run-dir
// RUN` per node, that drains on USR1 and requeues itself. `slurm up` waits
// for the address. `tailsweep slurm down RUN` drains the workers and stops
// the coordinator.
//
// Programs (sbatch, scancel, squeue, openssl) run through an injected
// ProgramRunner, so tests read the command lines and make them fail.
// Torch-free.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/command.h"

namespace tailsweep::cli {

struct ProgramResult {
  int exit_code = 0;
  std::string out;
  std::string err;
};

// Runs argv to completion; argv[0] is a name looked up in PATH, or a path.
// NotFound when the program is not there.
using ProgramRunner = std::function<absl::StatusOr<ProgramResult>(
    const std::vector<std::string>& argv)>;
ProgramRunner SystemProgramRunner();

struct SlurmUpOptions {
  std::string spec_path;
  // Applied to the spec (sweep_spec.h's ApplyOverrides); the run directory
  // keeps the changed spec, which records them.
  std::vector<std::string> overrides;
  std::string run_dir;           // created; must not exist or be empty
  std::string scripts_dir;       // holds coordinator.sbatch and workers.sbatch
  std::string bin_dir;           // tailsweep's executables, on every node
  int workers = 1;               // array tasks, one worker (node) each
  int gpus_per_node = 0;         // 0: no GRES asked for
  int cpus_per_worker = 0;       // 0: the partition's default
  std::string partition;         // empty: the default partition
  std::string time = "4:00:00";  // each worker task's
  std::string coordinator_time = "7-00:00:00";  // the coordinator's
};

struct SlurmJobIds {
  std::string coordinator;
  std::string workers;
};

// Makes the run directory (0700; token and keys 0600; the run's CA) and
// submits the coordinator job and the worker array. On a failed sbatch
// the error quotes it, and a coordinator already submitted is cancelled.
absl::StatusOr<SlurmJobIds> SlurmUp(const SlurmUpOptions& options,
                                    const ProgramRunner& run);

// The job ids `slurm up` recorded in `run_dir`.
absl::StatusOr<SlurmJobIds> ReadSlurmJobIds(const std::string& run_dir);

// `slurm up`, `slurm down` and `slurm coordinator`, for main.cc.
std::vector<Command> SlurmCommands();

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_SLURM_H_
