// tailsweep-worker: one daemon per node. Leases jobs from the coordinator,
// runs each in its own child process on a device slot, heartbeats, relays
// metrics and reports results. SIGTERM (Slurm preemption) or SIGUSR1 (drain:
// Slurm's early warning, --signal=USR1@120) makes running jobs checkpoint and
// go back to the queue uncounted, then the daemon exits 0. Inside an
// allocation it uses the GPUs, CPUs and time it was given (allocation.h).
//
//   tailsweep-worker --coordinator ADDR [--devices auto|cpu|cuda:0,cuda:1]
//                    [--slots-per-device K] [--work-dir DIR]
//                    [--gpu-sample-seconds S]
//                    [--shutdown-grace S] [--end-margin S]
//                    [--token-file F] [--tls-ca CA.pem] [--log-level L]
//
// Every option can also come from a TAILSWEEP_* environment variable
// (--coordinator: TAILSWEEP_COORDINATOR, --token-file: TAILSWEEP_TOKEN_FILE,
// ...); the command line wins.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/schema/blas_core.h"
#include "core/schema/clock.h"
#include "core/schema/logging.h"
#include "core/schema/version.h"
#include "process/attempt_processes.h"
#include "process/child_process.h"
#include "proto/client_channel.h"
#include "proto/coordinator_link.h"
#include "proto/run_dir.h"
#include "worker/allocation.h"
#include "worker/gpus.h"
#include "worker/job_files.h"
#include "worker/job_launcher.h"
#include "worker/worker.h"

namespace tailsweep {
namespace {

// host-pid-RANDOM: unique per daemon start, even for containers that all
// run as PID 1 on one host name, and across PID reuse.
std::string UniqueWorkerId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::random_device random;
  const uint64_t instance =
      (static_cast<uint64_t>(random()) << 32) ^ random() ^
      static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count());
  return absl::StrCat(host, "-", getpid(), "-",
                      absl::Hex(instance & 0xffffffffffULL, absl::kZeroPad10));
}

// The signal that asked the worker to stop; 0 while it runs.
std::atomic<int> stop_signal{0};

// --devices: auto asks the NVIDIA driver (gpus.h: nvidia-smi, within the
// allocation's GPUs) and says why it chose what it did; otherwise cpu or
// cuda:N[,cuda:M...].
absl::StatusOr<std::vector<std::string>> ParseDevices(
    const std::string& flag, const Allocation& allocation,
    const std::string& work_dir) {
  std::vector<std::string> out;
  if (flag == "cpu") return std::vector<std::string>{"cpu"};
  if (flag == "auto") {
    const AutoDevices found =
        FindAutoDevices(allocation, RunGpuTool(work_dir + "/gpu-query"));
    spdlog::info("--devices auto: {}", found.why);
    return found.devices;
  }
  for (absl::string_view d : absl::StrSplit(flag, ',')) {
    int index = 0;
    if (!absl::StartsWith(d, "cuda:") ||
        !absl::SimpleAtoi(d.substr(5), &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", d, "'; allowed: auto, cpu, cuda:N[,cuda:M...]"));
    }
    out.emplace_back(d);
  }
  return out;
}
void OnSignal(int signal) { stop_signal = signal; }

// How often, at most, a worker that cannot reach its run directory's
// coordinator re-reads the directory's address.
constexpr int64_t kRunDirRereadMs = 5000;

// The run directory's coordinator, once its address is there: a worker job
// may start before the coordinator job. Ten minutes at most, or until a
// signal.
absl::StatusOr<ChannelOptions> WaitForRunDir(const std::string& dir) {
  const auto start = std::chrono::steady_clock::now();
  auto next_log = start;
  while (true) {
    absl::StatusOr<ChannelOptions> found =
        RunDirChannel(dir, /*as_worker=*/true);
    if (found.ok() || !absl::IsNotFound(found.status())) return found;
    const auto now = std::chrono::steady_clock::now();
    if (now - start > std::chrono::minutes(10) || stop_signal != 0) {
      return found.status();
    }
    if (now >= next_log) {
      spdlog::info("waiting for the run's coordinator ({})",
                   std::string(found.status().message()));
      next_log = now + std::chrono::seconds(30);
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// What the command line says, before it is resolved against the machine.
struct Flags {
  std::string coordinator = "127.0.0.1:50551", devices = "auto", work_dir,
              token_file, tls_ca, log_level, run_dir, cgroup = "auto";
  bool version = false;
  int64_t lease_margin_ms = -1;
  double shutdown_grace_s = 0, end_margin_s = 0;
  double gpu_sample_s = 5;
  WorkerOptions options;
};

// Where the coordinator is and how to reach it safely.
void DefineConnectionFlags(CLI::App& app, Flags& f) {
  app.add_option("--run-dir", f.run_dir,
                 "A `tailsweep slurm up` run directory: the coordinator's "
                 "address, token and CA come from it (waits for the address "
                 "to appear); overrides --coordinator, --token-file, --tls-ca")
      ->envname("TAILSWEEP_RUN_DIR");
  app.add_option("--token-file", f.token_file,
                 "Bearer token for a coordinator started with --token-file")
      ->envname("TAILSWEEP_TOKEN_FILE")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-ca", f.tls_ca, "PEM CA file: connect with TLS")
      ->envname("TAILSWEEP_TLS_CA")
      ->check(CLI::ExistingFile);
}

// How the worker ends: its grace on a signal, its allocation's end, when
// idle; what it samples and logs meanwhile.
void DefineLifetimeFlags(CLI::App& app, Flags& f) {
  app.add_option("--cgroup", f.cgroup,
                 "Where each job's processes are kept, so that all end with "
                 "the job: 'auto' (a cgroup of its own under the worker's "
                 "cgroup v2 when the worker may make one: systemd's "
                 "Delegate=yes, root; else a marker in their environment), "
                 "'off' (the marker only), or a delegated cgroup v2 "
                 "directory")
      ->capture_default_str();
  app.add_option("--shutdown-grace", f.shutdown_grace_s,
                 "Seconds that running jobs get, after SIGTERM or SIGUSR1, to "
                 "checkpoint and be given back (keep it below Slurm's "
                 "KillWait, or the --signal lead time)")
      ->envname("TAILSWEEP_SHUTDOWN_GRACE")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--end-margin", f.end_margin_s,
                 "With an allocation end (SLURM_JOB_END_TIME or "
                 "TAILSWEEP_ALLOCATION_END, Unix seconds): lease no job once "
                 "the end is nearer than this many seconds, or than the "
                 "longest a job here went without a new checkpoint")
      ->envname("TAILSWEEP_END_MARGIN")
      ->check(CLI::Range(0.0, 7.0 * 86400))
      ->capture_default_str();
  app.add_option("--gpu-sample-seconds", f.gpu_sample_s,
                 "Every this many seconds, each running job's GPUs' "
                 "utilisation and memory (nvidia-smi) become its metrics "
                 "system/gpu_util/N and system/gpu_mem_mib/N; 0: off")
      ->envname("TAILSWEEP_GPU_SAMPLE_SECONDS")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double s = 0;
            if (absl::SimpleAtod(text, &s) &&
                (s == 0 || (s >= 0.5 && s <= 3600))) {
              return "";
            }
            return "'" + text + "'; allowed: 0 (off) or 0.5 to 3600 seconds";
          },
          "0 or 0.5-3600"))
      ->capture_default_str();
  app.add_flag("--exit-when-idle", f.options.exit_when_idle,
               "Exit once no job runs here and the coordinator has none "
               "queued or leased (a job waiting out a retry's backoff, or "
               "running on another worker that may fail, keeps it waiting)")
      ->envname("TAILSWEEP_EXIT_WHEN_IDLE");
  app.add_option("--log-level", f.log_level,
                 absl::StrCat("One of ", kLogLevels,
                              " (default: SPDLOG_LEVEL, else info)"))
      ->envname("TAILSWEEP_LOG_LEVEL");
  app.add_flag("--version", f.version, "Print the version and exit");
}

void DefineFlags(CLI::App& app, Flags& f) {
  f.shutdown_grace_s = f.options.shutdown_grace_ms / 1000.0;
  f.end_margin_s = f.options.end_margin_ms / 1000.0;
  app.add_option("--coordinator", f.coordinator, "Coordinator address")
      ->envname("TAILSWEEP_COORDINATOR")
      ->capture_default_str();
  app.add_option("--devices", f.devices,
                 "auto (the GPUs nvidia-smi lists, within CUDA_VISIBLE_DEVICES "
                 "or Slurm's allocation; cpu when none, saying why), cpu, or "
                 "cuda:0,cuda:1,...")
      ->envname("TAILSWEEP_DEVICES")
      ->capture_default_str();
  app.add_option("--slots-per-device", f.options.slots_per_device,
                 "Jobs per device")
      ->envname("TAILSWEEP_SLOTS_PER_DEVICE")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--work-dir", f.work_dir,
                 "Job directories (default: ./tailsweep-work)")
      ->envname("TAILSWEEP_WORK_DIR");
  app.add_option("--lease-ms", f.options.lease_ms, "Lease length to ask for")
      ->envname("TAILSWEEP_LEASE_MS")
      ->check(CLI::Range(int64_t{1000}, int64_t{3600000}))
      ->capture_default_str();
  app.add_option("--lease-margin-ms", f.lease_margin_ms,
                 "How long before the lease runs out on this worker's clock "
                 "a job that could not renew it stops itself (default: a "
                 "sixth of --lease-ms, at most 5000)")
      ->envname("TAILSWEEP_LEASE_MARGIN_MS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--poll-ms", f.options.poll_ms,
                 "Pause between rounds (lease, relay, report)")
      ->envname("TAILSWEEP_POLL_MS")
      ->check(CLI::Range(int64_t{10}, int64_t{60000}))
      ->capture_default_str();
  app.add_option("--rpc-timeout-ms", f.options.rpc_timeout_ms,
                 "Deadline of each call to the coordinator")
      ->envname("TAILSWEEP_RPC_TIMEOUT_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{600000}))
      ->capture_default_str();
  app.add_option("--threads-per-slot", f.options.threads_per_slot,
                 "Torch threads per job (default: cores / slots)")
      ->envname("TAILSWEEP_THREADS_PER_SLOT");
  // --tailsweep-bin and TAILSWEEP_BIN: the names before tailsweep-lab
  // existed (tailsweep hands `lab` over to it, so either still works).
  app.add_option("--lab-bin,--tailsweep-bin", f.options.lab_bin,
                 "The executable that runs jobs: tailsweep-lab (default: "
                 "next to this one; TAILSWEEP_BIN also read)")
      ->envname("TAILSWEEP_LAB_BIN");
  DefineConnectionFlags(app, f);
  DefineLifetimeFlags(app, f);
}

// Fills in what the flags leave to the machine (the lab binary, the
// devices, the allocation, threads and margins); InvalidArgument, naming
// the flag, for what cannot be.
absl::Status ResolveOptions(Flags& f) {
  WorkerOptions& options = f.options;
  if (options.lab_bin.empty() && std::getenv("TAILSWEEP_BIN") != nullptr) {
    options.lab_bin = std::getenv("TAILSWEEP_BIN");
  }
  if (options.lab_bin.empty()) {
    options.lab_bin =
        (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
         "tailsweep-lab")
            .string();
  }
  options.work_dir = f.work_dir.empty() ? "tailsweep-work" : f.work_dir;
  // Said now, not at the first job: a release unpacked read-only, or
  // started from a folder the user may not write.
  std::error_code made;
  std::filesystem::create_directories(options.work_dir, made);
  if (made || access(options.work_dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--work-dir ", options.work_dir, ": ",
        made ? made.message() : std::strerror(errno),
        "; give the worker a folder it may write (--work-dir DIR)"));
  }
  absl::StatusOr<Allocation> allocation = ReadAllocationFromProcess();
  if (!allocation.ok()) return allocation.status();
  options.allocation = *allocation;
  absl::StatusOr<std::vector<std::string>> found =
      ParseDevices(f.devices, options.allocation, options.work_dir);
  if (!found.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices: ", found.status().message()));
  }
  options.devices = *found;
  for (const std::string& device : options.devices) {
    if (device == "cpu") continue;
    absl::StatusOr<std::string> visible =
        VisibleDeviceFor(options.allocation, device);
    if (!visible.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--devices: ", visible.status().message()));
    }
  }
  const int slots =
      static_cast<int>(options.devices.size()) * options.slots_per_device;
  if (options.threads_per_slot < 1) {
    options.threads_per_slot = std::max(1, options.allocation.cpus / slots);
  } else if (options.threads_per_slot * slots > options.allocation.cpus) {
    spdlog::warn(
        "--threads-per-slot {} x {} slot(s) is more than the {} CPU(s) "
        "this worker was given ({})",
        options.threads_per_slot, slots, options.allocation.cpus,
        options.allocation.cpus_from);
  }
  options.shutdown_grace_ms = static_cast<int64_t>(f.shutdown_grace_s * 1000);
  options.end_margin_ms = static_cast<int64_t>(f.end_margin_s * 1000);
  options.lease_margin_ms = f.lease_margin_ms >= 0
                                ? f.lease_margin_ms
                                : std::min<int64_t>(5000, options.lease_ms / 6);
  if (options.lease_margin_ms >= options.lease_ms / 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lease-margin-ms ", options.lease_margin_ms,
                     " must be below half of --lease-ms ", options.lease_ms));
  }
  return absl::OkStatus();
}

// Dials the coordinator and reads the token: the link the worker calls
// through. A run directory's coordinator may come back elsewhere after a
// requeue: the worker then follows its address file
// (proto/coordinator_link.h).
absl::StatusOr<std::unique_ptr<CoordinatorLink>> Connect(Flags& f,
                                                         Clock* clock) {
  const DialCoordinator dial =
      GrpcDial(std::min<int64_t>(4000, f.options.lease_ms / 4));
  const ChannelOptions at{f.coordinator, f.token_file, f.tls_ca};
  absl::StatusOr<std::shared_ptr<const CoordinatorStubs>> stubs = dial(at);
  if (!stubs.ok()) return stubs.status();
  absl::StatusOr<std::string> token =
      f.token_file.empty() ? std::string() : ReadTokenFile(f.token_file);
  if (!token.ok()) return token.status();
  f.options.token = *token;
  if (f.run_dir.empty()) return std::make_unique<FixedLink>(*std::move(stubs));
  return std::make_unique<RunDirLink>(f.run_dir, f.coordinator,
                                      *std::move(stubs), dial, clock,
                                      kRunDirRereadMs);
}

void LogStart(const Flags& f) {
  const WorkerOptions& options = f.options;
  spdlog::info(
      "tailsweep-worker {} ({}): coordinator {}, devices {} x {} slot(s), "
      "{} thread(s) per slot of {} CPU(s) ({}){}",
      options.worker_id, Version(), f.coordinator,
      absl::StrJoin(options.devices, ","), options.slots_per_device,
      options.threads_per_slot, options.allocation.cpus,
      options.allocation.cpus_from,
      options.allocation.gpus
          ? absl::StrCat(", GPUs from ", options.allocation.gpus_from)
          : "");
  if (options.allocation.end_wall_ms > 0) {
    spdlog::info(
        "the allocation ends in {} s",
        (options.allocation.end_wall_ms - SystemClock().WallMs()) / 1000);
  }
}

int Main(int argc, char** argv) {
  CLI::App app{"tailsweep-worker: runs sweep jobs leased from the coordinator"};
  Flags f;
  DefineFlags(app, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "tailsweep-worker: %s (see --help)\n", e.what());
    return 2;
  }
  if (f.version) {
    std::printf("tailsweep-worker %s\n", Version());
    return 0;
  }
  if (absl::Status s = InitLogging("worker", f.log_level); !s.ok()) {
    std::fprintf(stderr, "tailsweep-worker: %s\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  if (absl::Status s = ResolveOptions(f); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGUSR1, OnSignal);
  if (!f.run_dir.empty()) {
    absl::StatusOr<ChannelOptions> from = WaitForRunDir(f.run_dir);
    if (!from.ok()) {
      spdlog::error("--run-dir: {}", std::string(from.status().message()));
      return 1;
    }
    f.coordinator = from->address;
    f.token_file = from->token_file;
    f.tls_ca = from->tls_ca;
  }
  f.options.worker_id = UniqueWorkerId();
  SystemClock clock;
  absl::StatusOr<std::unique_ptr<CoordinatorLink>> link = Connect(f, &clock);
  if (!link.ok()) {
    spdlog::error("{}", std::string(link.status().message()));
    return 2;
  }
  LogStart(f);
  // Orphans of jobs (double-forked, setsid) come back to the worker, not to
  // init: reaped, and ended with their job (process/attempt_processes.h).
  if (absl::Status s = BecomeSubreaper(); !s.ok()) {
    spdlog::warn("{}", std::string(s.message()));
  }
  std::string no_cgroup;
  absl::StatusOr<std::string> cgroup_root =
      AttemptCgroupRoot(f.cgroup, &no_cgroup);
  if (!cgroup_root.ok()) {
    spdlog::error("--cgroup {}: {}", f.cgroup,
                  std::string(cgroup_root.status().message()));
    return 2;
  }
  if (cgroup_root->empty()) {
    spdlog::info(
        "each job's processes are found by a marker in their environment "
        "(no cgroup: {})",
        no_cgroup.empty() ? "--cgroup off" : no_cgroup);
  } else {
    spdlog::info("each job's processes run in a cgroup of their own under {}",
                 *cgroup_root);
  }
  if (const std::string core = CorrectBlasCoreForChildren(); !core.empty()) {
    spdlog::info(
        "OpenBLAS does not know this CPU and would run its pre-AVX2 kernels: "
        "jobs run with OPENBLAS_CORETYPE={} (set it to choose another)",
        core);
  }
  if (const int stale = EndStaleAttempts(*cgroup_root); stale > 0) {
    spdlog::warn(
        "ended {} process(es) or cgroup(s) of jobs of a worker that is gone",
        stale);
  }
  ChildProcessLauncher launcher(*cgroup_root);
  LocalJobFiles files;
  ThreadTaskRunner tasks;
  std::unique_ptr<GpuSampler> sampler;
  const bool on_gpus =
      std::any_of(f.options.devices.begin(), f.options.devices.end(),
                  [](const std::string& d) { return d != "cpu"; });
  if (on_gpus && f.gpu_sample_s > 0) {
    sampler = std::make_unique<GpuSampler>(
        RunGpuTool(f.options.work_dir + "/gpu-query"),
        static_cast<int64_t>(f.gpu_sample_s * 1000));
    f.options.gpu_samples = [s = sampler.get()](std::vector<GpuSample>* out) {
      return s->Latest(out);
    };
  }
  Worker worker(link->get(), &clock, &launcher, &files, &tasks, f.options);
  worker.Run(stop_signal);
  spdlog::info("exiting ({} done, {} failed)", worker.jobs_completed(),
               worker.jobs_failed());
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) {
  // gRPC's synchronous calls fail fast while the channel is down, so only
  // its backup poller (every 5 s by default) sees a reconnect attempt
  // finish: a coordinator back from a restart was found ~10 s late, past
  // an 8 s lease (tests/faults/lease_faults_test.cc, CoordinatorAbsence).
  // Read once, when gRPC starts: set before any channel exists. A value
  // the user set is kept.
  setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100", 0);
  return tailsweep::Main(argc, argv);
}
