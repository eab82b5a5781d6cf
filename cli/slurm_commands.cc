// `tailsweep slurm up | down | coordinator` (slurm.h).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/connection.h"
#include "cli/slurm.h"
#include "cli/submit.h"
#include "core/schema/file_util.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"
#include "process/child_process.h"
#include "proto/client_channel.h"
#include "proto/coordinator_api.h"
#include "proto/run_dir.h"

namespace tailsweep::cli {
namespace fs = std::filesystem;
namespace {

std::atomic<int> stop_signal{0};
void OnSignal(int signal) { stop_signal = signal; }

fs::path ExeDir() { return fs::read_symlink("/proc/self/exe").parent_path(); }

// deploy/slurm/ in the source tree (build/bin/../../deploy/slurm), else
// share/tailsweep/slurm/ of an install (bin/../share/tailsweep/slurm).
std::string DefaultScriptsDir() {
  const fs::path exe = ExeDir();
  for (const fs::path& p :
       {exe / "../share/tailsweep/slurm", exe / "../../deploy/slurm"}) {
    if (fs::exists(p / "workers.sbatch")) return p.lexically_normal().string();
  }
  return (exe / "../share/tailsweep/slurm").lexically_normal().string();
}

// Whether the coordinator at `channel` answers a call.
bool Answers(const ChannelOptions& channel) {
  absl::StatusOr<std::unique_ptr<CoordinatorChannel>> coordinator =
      CoordinatorChannel::Open(channel, std::chrono::seconds(2));
  if (!coordinator.ok()) return false;
  v1::ListSweepsResponse resp;
  return (*coordinator)->api().ListSweeps({}, &resp).ok();
}

// Waits until the run directory's coordinator answers (its job writes its
// address then), saying every 10 s that it waits; DeadlineExceeded, saying
// what to look at, after `wait_s` seconds from `started`.
absl::Status WaitForCoordinator(const std::string& dir,
                                const std::string& coordinator,
                                std::chrono::steady_clock::time_point started,
                                int wait_s) {
  const auto deadline = started + std::chrono::seconds(wait_s);
  auto next_note = started + std::chrono::seconds(10);
  while (!RunDirChannel(dir).ok()) {
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the coordinator job ", coordinator, " did not answer within ",
          wait_s, " s (is it still pending? squeue -j ", coordinator,
          "; its log: ", RunPath(dir, kRunCoordinatorLog),
          "); submit later with tailsweep --run-dir ", dir, " submit ",
          RunPath(dir, kRunSpec)));
    }
    if (now > next_note) {
      std::cout << "waiting for the coordinator job ("
                << std::chrono::duration_cast<std::chrono::seconds>(now -
                                                                    started)
                       .count()
                << " s)\n"
                << std::flush;
      next_note = now + std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return absl::OkStatus();
}

RunFn DefineUp(CLI::App& app) {
  auto o = std::make_shared<SlurmUpOptions>();
  auto wait_s = std::make_shared<int>(600);
  app.add_option("SPEC", o->spec_path, "Sweep spec (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("OVERRIDES", o->overrides,
                 "KEY=VALUE, KEY=V1,V2, name=NAME: as for tailsweep submit");
  app.add_option("--workers", o->workers,
                 "Worker tasks (a job array, one node and one worker each)")
      ->required()
      ->check(CLI::Range(1, 100000));
  app.add_option("--gpus-per-node", o->gpus_per_node,
                 "GPUs per worker (--gres=gpu:G); 0: none asked for")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--cpus-per-worker", o->cpus_per_worker,
                 "CPUs per worker (--cpus-per-task); 0: the partition's "
                 "default")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--partition", o->partition, "Slurm partition of both jobs");
  app.add_option("--time", o->time, "Walltime of each worker task")
      ->capture_default_str();
  app.add_option("--coordinator-time", o->coordinator_time,
                 "Walltime of the coordinator job")
      ->capture_default_str();
  app.add_option("--run-dir", o->run_dir,
                 "Run directory on a file system every node sees (default: "
                 "./tailsweep-run-NAME-YYYYMMDD-HHMMSS); must be new or empty");
  app.add_option("--scripts", o->scripts_dir,
                 "Where coordinator.sbatch and workers.sbatch are (default: "
                 "deploy/slurm of the source tree or share/tailsweep/slurm)");
  app.add_option("--wait", *wait_s,
                 "Seconds to wait for the coordinator job to answer")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  return [o, wait_s]() -> absl::Status {
    const auto started = std::chrono::steady_clock::now();
    if (o->scripts_dir.empty()) o->scripts_dir = DefaultScriptsDir();
    const char* bin = std::getenv("TAILSWEEP_BIN_DIR");
    o->bin_dir = bin != nullptr ? bin : ExeDir().string();
    if (o->run_dir.empty()) {
      absl::StatusOr<SweepSpec> spec = LoadSweepSpec(o->spec_path);
      if (!spec.ok()) return spec.status();
      char stamp[32];
      const std::time_t now = std::time(nullptr);
      std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S",
                    std::localtime(&now));
      o->run_dir = absl::StrCat("tailsweep-run-", spec->name, "-", stamp);
    }
    absl::StatusOr<SlurmJobIds> ids = SlurmUp(*o, SystemProgramRunner());
    if (!ids.ok()) return ids.status();
    const std::string dir = fs::absolute(o->run_dir).string();
    std::cout << "run directory " << dir << "\ncoordinator job "
              << ids->coordinator << ", worker array " << ids->workers << " ("
              << o->workers << " task(s))\n"
              << std::flush;
    // The coordinator job writes its address once it answers.
    TS_RETURN_IF_ERROR(
        WaitForCoordinator(dir, ids->coordinator, started, *wait_s));
    // The coordinator job submitted the spec before writing its address.
    absl::StatusOr<SweepSpec> spec = LoadSweepSpec(RunPath(dir, kRunSpec));
    if (!spec.ok()) return spec.status();
    const std::string name = spec->name;
    std::cout << "coordinator at " << RunDirChannel(dir)->address << " after "
              << std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::steady_clock::now() - started)
                     .count()
              << " s, sweep " << name << " submitted\n";
    std::cout << "watch: tailsweep --run-dir " << dir << " watch " << name
              << "\nstop:  tailsweep slurm down " << dir << "\n";
    if (absl::StatusOr<std::string> http =
            ReadFile(RunPath(dir, kRunHttpAddress));
        http.ok()) {
      std::cout << "HTTP API and dashboard: "
                << absl::StripAsciiWhitespace(*http)
                << " (Python: tailsweep.Client.from_run_dir(\"" << dir
                << "\"))\n";
    }
    return absl::OkStatus();
  };
}

RunFn DefineDown(CLI::App& app) {
  struct Flags {
    std::string run_dir;
    bool now = false;
    int wait_s = 300;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("RUN_DIR", f->run_dir, "The run directory of `slurm up`")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_flag("--now", f->now,
               "Cancel at once (scancel) instead of draining the workers "
               "first");
  app.add_option("--wait", f->wait_s,
                 "Seconds to wait for drained workers before cancelling "
                 "the coordinator")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  return [f]() -> absl::Status {
    absl::StatusOr<SlurmJobIds> ids = ReadSlurmJobIds(f->run_dir);
    if (!ids.ok()) return ids.status();
    // No worker requeues itself from here on.
    if (absl::Status s = WriteFileAtomic(RunPath(f->run_dir, kRunDown), "");
        !s.ok()) {
      return s;
    }
    ProgramRunner run = SystemProgramRunner();
    auto scancel = [&](std::vector<std::string> argv) -> absl::Status {
      argv.insert(argv.begin(), "scancel");
      absl::StatusOr<ProgramResult> r = run(argv);
      if (!r.ok()) return r.status();
      // A job that has ended already is what down wants.
      if (r->exit_code != 0 &&
          !absl::StrContains(r->err, "Invalid job id specified")) {
        return absl::InternalError(
            absl::StrCat("scancel exited with ", r->exit_code, ": ",
                         absl::StripAsciiWhitespace(r->err)));
      }
      return absl::OkStatus();
    };
    if (!f->now) {
      // Drain: running jobs checkpoint and go back to the queue.
      if (absl::Status s = scancel({"--full", "--signal=USR1", ids->workers});
          !s.ok()) {
        return s;
      }
      std::cout << "draining worker array " << ids->workers << "\n"
                << std::flush;
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(f->wait_s);
      while (std::chrono::steady_clock::now() < deadline) {
        absl::StatusOr<ProgramResult> q =
            run({"squeue", "-h", "-j", ids->workers, "-o", "%i"});
        if (!q.ok() || q->exit_code != 0 ||
            absl::StripAsciiWhitespace(q->out).empty()) {
          break;
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
    if (absl::Status s = scancel({ids->workers}); !s.ok()) return s;
    if (absl::Status s = scancel({ids->coordinator}); !s.ok()) return s;
    std::cout << "cancelled worker array " << ids->workers
              << " and coordinator job " << ids->coordinator
              << "; the database stays in " << f->run_dir << "\n";
    return absl::OkStatus();
  };
}

// A port nobody listens on now (the kernel's pick).
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) return absl::InternalError("cannot find a free port");
  return ntohs(addr.sin_port);
}

// The port to serve on: `requested`, else the run's last one when it was on
// this host (a requeued job on the same host keeps its port: workers
// reconnect to the address they have), else a free one.
absl::StatusOr<int> CoordinatorPort(const std::string& dir,
                                    const std::string& host, int requested) {
  int port = requested;
  if (port == 0) {
    absl::StatusOr<ChannelOptions> last = RunDirChannel(dir);
    if (last.ok() && absl::StartsWith(last->address, host + ":")) {
      (void)absl::SimpleAtoi(last->address.substr(last->address.rfind(':') + 1),
                             &port);
    }
  }
  if (port == 0) return FreePort();
  return port;
}

// The HTTP API's port, the same way: the run's last one on this host (a
// notebook's URL stays valid across a requeue there), else a free one.
absl::StatusOr<int> HttpPort(const std::string& dir, const std::string& host,
                             int grpc_port) {
  absl::StatusOr<std::string> last = ReadFile(RunPath(dir, kRunHttpAddress));
  const std::string prefix = absl::StrCat("https://", host, ":");
  int port = 0;
  if (last.ok() && absl::StartsWith(*last, prefix)) {
    (void)absl::SimpleAtoi(
        absl::StripAsciiWhitespace(last->substr(prefix.size())), &port);
  }
  while (port == 0 || port == grpc_port) {
    absl::StatusOr<int> free = FreePort();
    if (!free.ok()) return free.status();
    port = *free;
  }
  return port;
}

// This node's certificate, signed by the run's CA; kept while the
// coordinator stays on this host: a worker's channel that saw one
// certificate does not reconnect to a restarted coordinator with another
// (gRPC 1.51, measured), though the CA is the same.
absl::Status EnsureServerCertificate(const std::string& dir,
                                     const std::string& host) {
  ProgramRunner run = SystemProgramRunner();
  const std::string ext = RunPath(dir, "server.ext");
  const std::string names = absl::StrCat("subjectAltName=DNS:", host,
                                         ",DNS:localhost,IP:127.0.0.1\n");
  const bool reuse = fs::exists(RunPath(dir, kRunServerCert)) &&
                     fs::exists(RunPath(dir, kRunServerKey)) &&
                     ReadFile(ext).value_or("") == names;
  if (reuse) return absl::OkStatus();
  if (absl::Status s = WriteFileAtomic(ext, names); !s.ok()) return s;
  const std::string csr = RunPath(dir, "server.csr");
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"openssl", "req", "-newkey", "rsa:2048",
                                 "-nodes", "-keyout",
                                 RunPath(dir, kRunServerKey), "-out", csr,
                                 "-subj", absl::StrCat("/CN=", host)},
        std::vector<std::string>{
            "openssl", "x509", "-req", "-in", csr, "-CA",
            RunPath(dir, kRunCaCert), "-CAkey", RunPath(dir, kRunCaKey),
            "-CAcreateserial", "-CAserial", RunPath(dir, "ca.srl"), "-out",
            RunPath(dir, kRunServerCert), "-days", "365", "-extfile", ext}}) {
    absl::StatusOr<ProgramResult> r = run(argv);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) {
      return absl::InternalError(
          absl::StrCat("openssl ", argv[1], ": ", r->err));
    }
  }
  return absl::OkStatus();
}

RunFn DefineCoordinator(CLI::App& app) {
  struct Flags {
    std::string run_dir;
    int port = 0;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("RUN_DIR", f->run_dir, "The run directory of `slurm up`")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--port", f->port,
                 "Port to serve on (default: the run's last one on this "
                 "host, else a free one)")
      ->check(CLI::Range(1, 65535));
  return [f]() -> absl::Status {
    const std::string dir = fs::absolute(f->run_dir).string();
    char host_buf[256] = {0};
    gethostname(host_buf, sizeof(host_buf) - 1);
    const std::string host = host_buf;
    const std::string address_file = RunPath(dir, kRunAddress);
    absl::StatusOr<int> port = CoordinatorPort(dir, host, f->port);
    if (!port.ok()) return port.status();
    absl::StatusOr<int> http_port = HttpPort(dir, host, *port);
    if (!http_port.ok()) return http_port.status();
    std::error_code ec;
    fs::remove(address_file, ec);
    fs::remove(RunPath(dir, kRunHttpAddress), ec);
    if (absl::Status s = EnsureServerCertificate(dir, host); !s.ok()) return s;
    fs::permissions(RunPath(dir, kRunServerKey),
                    fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace, ec);
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGINT, OnSignal);
    std::signal(SIGUSR1, OnSignal);
    const std::string listen = absl::StrCat("0.0.0.0:", *port);
    std::vector<std::string> argv = {
        (ExeDir() / "tailsweep-coordinator").string(),
        "--db",
        RunPath(dir, kRunDatabase),
        "--data-dir",
        RunPath(dir, kRunDataDir),
        "--listen",
        listen,
        "--token-file",
        RunPath(dir, kRunToken),
        "--tls-cert",
        RunPath(dir, kRunServerCert),
        "--tls-key",
        RunPath(dir, kRunServerKey),
        "--http-listen",
        absl::StrCat("0.0.0.0:", *http_port)};
    // Workers hold the worker role only (a run made before it: the token).
    if (fs::exists(RunPath(dir, kRunWorkerToken), ec)) {
      argv.insert(argv.end(),
                  {"--worker-token-file", RunPath(dir, kRunWorkerToken)});
    }
    absl::StatusOr<ChildProcess> child = ChildProcess::Start(argv, {}, "", "");
    if (!child.ok()) return child.status();
    ChannelOptions self{absl::StrCat(host, ":", *port), RunPath(dir, kRunToken),
                        RunPath(dir, kRunCaCert)};
    bool announced = false;
    bool stopping = false;
    std::optional<int> code;
    while (!(code = child->Poll())) {
      if (stop_signal != 0 && !stopping) {
        std::cerr << "tailsweep slurm coordinator: signal " << stop_signal
                  << ": stopping the coordinator\n";
        child->Signal(SIGTERM);
        stopping = true;
      }
      if (!announced && !stopping && Answers(self)) {
        // The spec first (again after a requeue: nothing is added), so that
        // no worker finds the address and an empty queue.
        UseChannel(self);
        Connection c;
        absl::Status s = SubmitSpecFile(c, RunPath(dir, kRunSpec), std::cerr);
        if (s.ok()) {
          s = WriteFileAtomic(
              RunPath(dir, kRunHttpAddress),
              absl::StrCat("https://", host, ":", *http_port, "\n"));
        }
        if (s.ok()) s = WriteFileAtomic(address_file, self.address + "\n");
        if (!s.ok()) {
          child->Signal(SIGTERM);
          return s;
        }
        std::cerr << "tailsweep slurm coordinator: serving at " << self.address
                  << " (" << address_file << ")\n";
        announced = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (*code != 0 && !stopping) {
      return absl::InternalError(
          absl::StrCat("tailsweep-coordinator exited with ", *code));
    }
    return absl::OkStatus();
  };
}

}  // namespace

std::vector<Command> SlurmCommands() {
  return {
      {"up",
       "Start a sweep on Slurm: a run directory, a coordinator job, an "
       "array of worker jobs; then submit SPEC",
       DefineUp},
      {"down",
       "Drain a `slurm up` run's workers (their jobs go back to the queue), "
       "then cancel its jobs",
       DefineDown},
      {"coordinator",
       "Run a `slurm up` run's coordinator on this node (what "
       "coordinator.sbatch runs)",
       DefineCoordinator},
  };
}

}  // namespace tailsweep::cli
