// tailsweep-worker: one daemon per node. Leases jobs from the coordinator,
// runs each in its own child process on a device slot, heartbeats, relays
// metrics and reports results. SIGTERM (Slurm preemption) makes running jobs
// checkpoint and exit, then the daemon exits.
//
//   tailsweep-worker --coordinator ADDR [--devices auto|cpu|cuda:0,cuda:1]
//                    [--slots-per-device K] [--work-dir DIR]

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "absl/strings/str_split.h"
#include "worker/worker.h"

namespace tailsweep {
namespace {

std::atomic<bool> stop_requested{false};
void OnSignal(int) { stop_requested = true; }

int Main(int argc, char** argv) {
  CLI::App app{"tailsweep-worker: runs sweep jobs leased from the coordinator"};
  std::string coordinator = "127.0.0.1:50551", devices = "auto", work_dir;
  WorkerOptions options;
  if (const char* env = std::getenv("TAILSWEEP_COORDINATOR")) coordinator = env;
  app.add_option("--coordinator", coordinator,
                 "Coordinator address (also TAILSWEEP_COORDINATOR)")
      ->capture_default_str();
  app.add_option("--devices", devices, "auto, cpu, or cuda:0,cuda:1,...")
      ->capture_default_str();
  app.add_option("--slots-per-device", options.slots_per_device,
                 "Jobs per device")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--work-dir", work_dir,
                 "Job directories (default: ./tailsweep-work)");
  app.add_option("--lease-ms", options.lease_ms, "Lease length to ask for")
      ->check(CLI::Range(int64_t{1000}, int64_t{3600000}))
      ->capture_default_str();
  app.add_option("--threads-per-slot", options.threads_per_slot,
                 "Torch threads per job (default: cores / slots)");
  app.add_option("--tailsweep-bin", options.tailsweep_bin,
                 "The tailsweep executable (default: next to this one)");
  app.add_flag("--exit-when-idle", options.exit_when_idle,
               "Exit once no job runs and none is ready");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "tailsweep-worker: %s (see --help)\n", e.what());
    return 2;
  }
  // This build's LibTorch is CPU-only unless built with CUDA; auto finds CPU.
  options.devices.clear();
  if (devices == "auto" || devices == "cpu") {
    options.devices.push_back("cpu");
  } else {
    for (absl::string_view d : absl::StrSplit(devices, ',')) {
      if (d != "cpu" && !absl::StartsWith(d, "cuda:")) {
        std::fprintf(stderr,
                     "tailsweep-worker: --devices: '%s'; allowed: auto, "
                     "cpu, cuda:N[,cuda:M...]\n",
                     std::string(d).c_str());
        return 2;
      }
      options.devices.emplace_back(d);
    }
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (options.threads_per_slot < 1) {
    options.threads_per_slot =
        std::max(1, cores / static_cast<int>(options.devices.size() *
                                             options.slots_per_device));
  }
  if (options.tailsweep_bin.empty()) {
    options.tailsweep_bin =
        (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
         "tailsweep")
            .string();
  }
  options.work_dir = work_dir.empty() ? "tailsweep-work" : work_dir;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  options.worker_id = std::string(host) + "-" + std::to_string(getpid());
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(coordinator, grpc::InsecureChannelCredentials()));
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::fprintf(
      stderr,
      "tailsweep-worker %s: coordinator %s, %zu device(s) x %d slot(s)\n",
      options.worker_id.c_str(), coordinator.c_str(), options.devices.size(),
      options.slots_per_device);
  Worker worker(stub.get(), options);
  worker.Run(stop_requested);
  std::fprintf(stderr, "tailsweep-worker: exiting (%lld done, %lld failed)\n",
               static_cast<long long>(worker.jobs_completed()),
               static_cast<long long>(worker.jobs_failed()));
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
