#ifndef TAILSWEEP_WORKER_ALLOCATION_H_
#define TAILSWEEP_WORKER_ALLOCATION_H_

// What a worker was given on its node, read once at start: inside a Slurm
// allocation (or any cpuset or container) the GPUs and CPUs it may use and
// when its time ends. Never the node's raw hardware: a worker started by
// srun on a shared node must not touch another job's GPUs or cores.
//
// - GPUs: the entries of the inherited CUDA_VISIBLE_DEVICES (ordinals or
//   GPU-UUIDs), else of SLURM_STEP_GPUS, else SLURM_JOB_GPUS (Slurm's GRES
//   indices). A slot's device cuda:N is the worker's N-th GPU, so its
//   child gets entry N as its only visible device. No variable set: cuda:N
//   is the machine's GPU N. CUDA_VISIBLE_DEVICES set but empty (or
//   "NoDevFiles", as Slurm writes): no GPU.
// - CPUs: SLURM_CPUS_PER_TASK when set, never more than the process's CPU
//   affinity (sched_getaffinity), which is what a cpuset gives.
// - The end: TAILSWEEP_ALLOCATION_END, else SLURM_JOB_END_TIME, Unix
//   seconds (deploy/slurm/workers.sbatch sets the first from squeue, which
//   Slurm before 23.02 needs).
// Pure but for ReadAllocationFromProcess; torch-free.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tailsweep {

struct Allocation {
  // The GPUs as the worker's environment names them; nullopt: none named
  // (cuda:N is the machine's GPU N).
  std::optional<std::vector<std::string>> gpus;
  std::string gpus_from;  // the variable that named them, for messages
  int cpus = 1;
  std::string cpus_from;  // "SLURM_CPUS_PER_TASK" or "CPU affinity"
  // The allocation's end, milliseconds since the Unix epoch; 0: none.
  int64_t end_wall_ms = 0;
};

// Reads a variable of the environment; nullopt when unset.
using GetEnv = std::function<std::optional<std::string>(const std::string&)>;

// `affinity_cpus`: the CPUs the process may run on (at least 1).
// InvalidArgument, naming the variable and its value, for a malformed
// SLURM_CPUS_PER_TASK or end time.
absl::StatusOr<Allocation> ReadAllocation(const GetEnv& env, int affinity_cpus);

// The same from this process's environment and sched_getaffinity.
absl::StatusOr<Allocation> ReadAllocationFromProcess();

// The CUDA_VISIBLE_DEVICES value that makes `device` ("cuda:N") its
// child's only GPU. OutOfRange when the allocation names fewer than N + 1
// GPUs (the message says which it has); InvalidArgument for a device that
// is not cuda:N.
absl::StatusOr<std::string> VisibleDeviceFor(const Allocation& allocation,
                                             const std::string& device);

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_ALLOCATION_H_
