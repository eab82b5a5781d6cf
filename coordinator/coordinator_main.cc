// tailsweep-coordinator: serves the Coordinator API (proto/tailsweep.proto)
// over gRPC from one SQLite file, plus grpc.health.v1.Health and server
// reflection. Expires leases once a second. SIGTERM or SIGINT shut it down
// cleanly; all state is in the database, so a restart continues where it
// stopped.
//
//   tailsweep-coordinator --db PATH [--listen 127.0.0.1:50551] --data-dir DIR
//       [--token-file F] [--tls-cert C --tls-key K]

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "coordinator/backup.h"
#include "coordinator/http_gateway.h"
#include "coordinator/lease_expiry.h"
#include "coordinator/service.h"
#include "coordinator/serving_process.h"
#include "core/schema/job_protocol.h"
#include "core/schema/logging.h"
#include "core/schema/run_outputs.h"
#include "core/schema/version.h"
#include "proto/client_channel.h"

namespace tailsweep {
namespace {

std::atomic<bool> stop_requested{false};
void OnSignal(int) { stop_requested = true; }
std::atomic<bool> reload_requested{false};
void OnReload(int) { reload_requested = true; }

// The smallest --max-message-bytes: the largest request a worker sends
// within the protocol's own limits (a result of kMaxResultFileBytes with its
// stderr tail and notes; chunks and metrics batches are smaller) fits, so a
// job the worker let through is never refused for its size.
constexpr int kMinMessageBytes = 2 << 20;
static_assert(kMinMessageBytes >= kMaxResultFileBytes +
                                      kMaxNotKeptNotes * kMaxNotKeptBytes +
                                      (64 << 10));

// What the command line says.
struct Flags {
  std::string db_path, listen = "127.0.0.1:50551", data_dir;
  int64_t max_attempts = 3, max_checkpoint_bytes = int64_t{4} << 30;
  int64_t lease_grace_ms = StoreOptions{}.lease_grace_ms;
  int max_message_bytes = 4 << 20;
  CheckpointBudget budget;
  std::string token_file, read_token_file, worker_token_file, tls_cert, tls_key,
      log_level, http_listen;
  std::vector<std::string> notify_urls;
  std::string notify_format = "json", notify_on = "failed,sweep_done,stalled";
  std::string public_url;
  double notify_stall_after_s = 1800;
  int64_t max_job_file_bytes = JobFileLimits{}.max_file_bytes;
  std::vector<std::string> http_trusted_proxies;
  int http_nice = HttpGatewayOptions{}.connection_nice;
  int read_lane_nice = ServiceOptions{}.read_lane_nice;
  std::string backup_dir, restore_from;
  double backup_every_s = 60, restore_hold_s = 30;
  int backup_keep = 24;
};

// --backup-* and --restore-from (backup.h).
void DefineBackupFlags(CLI::App& app, Flags& f) {
  app.add_option("--backup-dir", f.backup_dir,
                 "Back the database up into DIR (another disk or file "
                 "system) every --backup-every seconds, each checked with "
                 "PRAGMA integrity_check; off by default");
  app.add_option("--backup-every", f.backup_every_s,
                 "Seconds between backups (one at start too)")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  app.add_option("--backup-keep", f.backup_keep,
                 "Backups kept in --backup-dir (the newest)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--restore-hold", f.restore_hold_s,
                 "After --restore-from, seconds in which no job is leased, so "
                 "that every worker's next heartbeat stops what the backup "
                 "does not know (at least your workers' --lease-ms / 3)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--restore-from", f.restore_from,
                 "Start from the newest good backup in DIR, copied to --db "
                 "(which must not exist: a lost or damaged database's new "
                 "path); jobs that finished after that backup run again");
}

// --notify-* and --public-url (notices.h).
void AddNotifyFlags(CLI::App& app, Flags& f) {
  app.add_option("--notify-url", f.notify_urls,
                 "Webhook for every sweep's notices (repeatable; beside each "
                 "spec's notify:)");
  app.add_option("--notify-format", f.notify_format,
                 "Body of --notify-url's notices")
      ->check(CLI::IsMember({"json", "slack"}))
      ->capture_default_str();
  app.add_option("--notify-on", f.notify_on,
                 "Events --notify-url hears, comma-separated: failed, done, "
                 "sweep_done, stalled (preemptions never)")
      ->capture_default_str();
  app.add_option("--notify-stall-after-s", f.notify_stall_after_s,
                 "For --notify-url: a running job without a metric point "
                 "this long is stalled")
      ->check(CLI::Range(60.0, 604800.0))
      ->capture_default_str();
  app.add_option("--public-url", f.public_url,
                 "The dashboard's address as people reach it, for links in "
                 "notices (default: http://--http-listen)");
}

// Who may call what (coordinator/auth.h).
void DefineTokenFlags(CLI::App& app, Flags& f) {
  app.add_option("--token-file", f.token_file,
                 "The admin's tokens, one a line: every call then needs "
                 "'authorization: Bearer TOKEN' of some role; turns "
                 "reflection off. SIGHUP reads the token files again");
  app.add_option("--read-token-file", f.read_token_file,
                 "Read tokens, one a line: the dashboard, the API's reads, "
                 "/metrics; no writes, no worker calls");
  app.add_option("--worker-token-file", f.worker_token_file,
                 "Worker tokens, one a line: lease, heartbeat, metrics, "
                 "results, checkpoints and files of the jobs a worker holds; "
                 "no submit, cancel or resume, no reads of sweeps");
}

void DefineFlags(CLI::App& app, Flags& f) {
  app.set_version_flag("--version",
                       std::string("tailsweep-coordinator ") + Version());
  app.add_option("--db", f.db_path, "SQLite database file (created if missing)")
      ->required();
  app.add_option("--listen", f.listen,
                 "Address to serve on (default: loopback)")
      ->capture_default_str();
  app.add_option(
         "--data-dir", f.data_dir,
         "Directory for checkpoints (DIR/checkpoints/JOB/EPOCH/step-N.pt)")
      ->required();
  app.add_option("--max-attempts", f.max_attempts,
                 "Attempts before a job fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lease-grace-ms", f.lease_grace_ms,
                 "How long past its deadline a lease expires (covers a "
                 "worker's longest training step plus a checkpoint write, so "
                 "a frozen worker's job has stopped itself first)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-checkpoint-bytes", f.max_checkpoint_bytes,
                 "Largest checkpoint accepted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-job-file-bytes", f.max_job_file_bytes,
                 "Largest log (compressed) or artifact accepted from a job")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddNotifyFlags(app, f);
  app.add_option("--max-data-bytes", f.budget.max_data_bytes,
                 "Most bytes of checkpoints kept under --data-dir; to make "
                 "room, those no job needs are pruned first, then uploads "
                 "are refused (0: no budget)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-job-checkpoint-bytes", f.budget.max_job_bytes,
                 "Most bytes of checkpoints one job keeps at once (its "
                 "newest, the one before it, those kept for their metric); "
                 "an upload past it is refused and the job goes on (0: no "
                 "cap)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--min-free-bytes", f.budget.min_free_bytes,
                 "Free space kept on --data-dir's filesystem (for the "
                 "database): checkpoints that would leave less are refused")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-message-bytes", f.max_message_bytes,
                 "Largest request accepted (RESOURCE_EXHAUSTED above); at "
                 "least 2 MiB, the largest a worker sends (a 1 MiB result "
                 "and its notes)")
      ->check(CLI::Range(kMinMessageBytes, 1 << 30))
      ->capture_default_str();
  DefineTokenFlags(app, f);
  DefineBackupFlags(app, f);
  app.add_option("--tls-cert", f.tls_cert, "PEM certificate chain: serve TLS");
  app.add_option("--tls-key", f.tls_key, "PEM private key of --tls-cert");
  app.add_option("--http-listen", f.http_listen,
                 "Also serve the live dashboard, the JSON API under /api/ and "
                 "Prometheus' /metrics on HOST:PORT (the same tokens and "
                 "roles, and TLS when gRPC has it; off by default)");
  app.add_option("--http-trusted-proxy", f.http_trusted_proxies,
                 "IP address of a front proxy (deploy/haproxy): its requests' "
                 "X-Forwarded-For names the peer that the HTTP rate limits "
                 "and refusal logs count (repeatable; default: none)");
  app.add_option("--http-nice", f.http_nice,
                 "How much lower the HTTP gateway's connection threads run "
                 "(nice): people's reads yield the cores to the workers' "
                 "calls; machine-wide, so where workers train on this "
                 "machine 0 keeps the dashboard at full speed")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  app.add_option("--read-lane-nice", f.read_lane_nice,
                 "How much lower the thread that serves people's bulk reads "
                 "(histories, reports, job and result pages) runs (nice): "
                 "10 keeps leases fastest under a read storm, but where "
                 "workers or other busy processes share the cores those "
                 "reads then wait for them (docs/operations.md)")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  app.add_option("--log-level", f.log_level,
                 std::string("Log level: ") + kLogLevels +
                     " (default: SPDLOG_LEVEL, else info)");
  // Every option also from the environment: --data-dir from
  // TAILSWEEP_DATA_DIR, and so on.
  for (CLI::Option* option : app.get_options()) {
    const std::string name = option->get_name(false, true);
    if (name.rfind("--", 0) != 0 || name == "--help" || name == "--version") {
      continue;
    }
    std::string env = "TAILSWEEP_" + name.substr(2);
    for (char& c : env) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
    option->envname(env);
  }
}

// Plain, or TLS with --tls-cert and --tls-key.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const Flags& f) {
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (f.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  for (auto [path, out] : {std::pair{&f.tls_cert, &pair.cert_chain},
                           std::pair{&f.tls_key, &pair.private_key}}) {
    std::ifstream in(*path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot read ", *path));
    }
    *out = text.str();
  }
  ssl.pem_key_cert_pairs.push_back(pair);
  return grpc::SslServerCredentials(ssl);
}

// Expires leases once a second until SIGTERM or SIGINT. A job that fails
// for good there is a finished probe point to a boundary sweep.
// The notifier's defaults, its outcomes counted in /metrics.
NotifierOptions NotifierCounting(Telemetry& telemetry) {
  NotifierOptions o;
  o.on_outcome = [&telemetry](const std::string& outcome) {
    telemetry.Notice(outcome);
  };
  return o;
}

ServiceOptions ServiceOptionsFrom(const Flags& f,
                                  std::shared_ptr<const TokenAuth> auth,
                                  Telemetry* telemetry, Notices* notices) {
  ServiceOptions o;
  o.notices = notices;
  o.job_files.max_file_bytes = f.max_job_file_bytes;
  o.job_files.min_free_bytes = f.budget.min_free_bytes;
  o.max_checkpoint_bytes = f.max_checkpoint_bytes;
  o.auth = std::move(auth);
  o.telemetry = telemetry;
  o.read_lane_nice = f.read_lane_nice;
  return o;
}

// --notify-url's targets; InvalidArgument naming the flag when one is
// wrong.
absl::StatusOr<NoticesOptions> NoticesFrom(const Flags& f) {
  NoticesOptions o;
  o.stall_after_s = f.notify_stall_after_s;
  o.report_base = f.public_url.empty() && !f.http_listen.empty()
                      ? absl::StrCat("http://", f.http_listen)
                      : f.public_url;
  while (!o.report_base.empty() && o.report_base.back() == '/') {
    o.report_base.pop_back();
  }
  std::vector<std::string> on =
      absl::StrSplit(f.notify_on, ',', absl::SkipEmpty());
  for (const std::string& e : on) {
    if (!IsNotifyEvent(e)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--notify-on: event '", e, "'; allowed: ", kNotifyEvents,
                       " (preemptions never notify)"));
    }
  }
  for (const std::string& url : f.notify_urls) {
    if (absl::Status s = ValidateNotifyUrl(url); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--notify-url: ", s.message()));
    }
    o.everywhere.push_back({url, f.notify_format, on});
  }
  return o;
}

// ", TLS, tokens: 1 admin, 2 read, 1 worker" for the serving line.
std::string ServingNote(const Flags& f, const TokenAuth& auth) {
  const std::vector<int> n = auth.counts();
  return absl::StrCat(f.tls_cert.empty() ? "" : ", TLS",
                      auth.enabled()
                          ? absl::StrCat(", tokens: ", n[0], " admin, ", n[1],
                                         " read, ", n[2], " worker")
                          : "");
}

// --data-dir made; with --restore-from, the newest good backup becomes --db
// (said in the log). False once an error is logged.
bool PrepareFiles(const Flags& f) {
  std::error_code ec;
  std::filesystem::create_directories(f.data_dir, ec);
  if (ec) {
    spdlog::error("--data-dir {}: {}", f.data_dir, ec.message());
    return false;
  }
  if (f.restore_from.empty()) return true;
  absl::StatusOr<std::string> from = RestoreNewest(f.restore_from, f.db_path);
  if (!from.ok()) {
    spdlog::error("{}", std::string(from.status().message()));
    return false;
  }
  spdlog::warn(
      "restored {} from the backup {}; jobs that finished after it run again, "
      "none leased for {} s (--restore-hold)",
      f.db_path, *from, f.restore_hold_s);
  return true;
}

// Backs the database up (backup.h) at start, then every --backup-every
// seconds until SIGTERM; each failure is said, and the next one tries again.
std::thread StartBackups(const Flags& f, Clock* clock, Telemetry* telemetry) {
  if (f.backup_dir.empty()) return std::thread();
  return std::thread([&f, clock, telemetry] {
    const int64_t every_ms = static_cast<int64_t>(f.backup_every_s * 1000);
    int64_t next = clock->SteadyMs();
    bool first = true;
    while (!stop_requested) {
      if (clock->SteadyMs() >= next) {
        const int64_t started = clock->SteadyMs();
        next = started + every_ms;
        const int64_t wall_ms = clock->WallMs();
        absl::StatusOr<BackupResult> done =
            WriteBackup(f.db_path, f.backup_dir, f.backup_keep, wall_ms);
        const double seconds =
            static_cast<double>(clock->SteadyMs() - started) / 1000;
        telemetry->Backup(done.ok(), wall_ms, done.ok() ? done->bytes : 0,
                          seconds);
        if (!done.ok()) {
          spdlog::warn("backup into {} failed: {}; next in {} s", f.backup_dir,
                       std::string(done.status().message()), f.backup_every_s);
        } else if (first) {
          spdlog::info(
              "backups: {} ({} bytes, {:.2f} s), then every {} s, {} kept",
              done->path, done->bytes, seconds, f.backup_every_s,
              f.backup_keep);
          first = false;
        } else {
          spdlog::debug("backup {} ({} bytes, {:.2f} s)", done->path,
                        done->bytes, seconds);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

// Reads the token files again after a SIGHUP.
void ReloadIfAsked(TokenAuth& auth) {
  if (!reload_requested.exchange(false)) return;
  if (absl::Status s = auth.Reload(); !s.ok()) {
    spdlog::error(
        "SIGHUP: the token files were not reloaded ({}); the "
        "tokens before stay in force",
        std::string(s.message()));
    return;
  }
  const std::vector<int> n = auth.counts();
  spdlog::info("SIGHUP: token files reloaded: {} admin, {} read, {} worker",
               n[0], n[1], n[2]);
}

void ExpireLeasesUntilStopped(Store& store, Telemetry& telemetry,
                              SearchDriver& search, Notices& notices,
                              TokenAuth& auth, Clock* clock) {
  LeaseExpiry expiry(
      [&](int64_t now, std::vector<Store::ExpiredLease>* out) {
        notices.Scan();  // (each second: it reads only jobs that are due)
        absl::StatusOr<int64_t> n = store.ExpireLeases(now, out);
        telemetry.LeasesExpired(static_cast<int64_t>(out->size()));
        for (const Store::ExpiredLease& e : *out) {
          if (!e.failed) {
            notices.Ended(e.job_id);  // requeued: as a preemption, no notice
            continue;
          }
          search.JobFinished();
          // Failed for good: its last attempt's lease ran out.
          notices.JobFailed(e.job_id, absl::StrCat("its lease (epoch ", e.epoch,
                                                   ") ran out on ", e.holder,
                                                   ", its last attempt"));
        }
        return n;
      },
      [&](int64_t now) { store.RestartLeaseClocks(now); }, clock,
      [&auth](int64_t ms) {
        for (int64_t waited = 0; waited < ms && !stop_requested;
             waited += 100) {
          ReloadIfAsked(auth);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return !stop_requested;
      },
      /*period_ms=*/1000);
  expiry.Run();
}

// The dashboard, JSON API and /metrics with --http-listen; null without.
absl::StatusOr<std::unique_ptr<HttpGateway>> StartDashboard(
    const Flags& f, std::shared_ptr<const TokenAuth> auth, grpc::Server& server,
    Telemetry& telemetry, Store& store) {
  if (f.http_listen.empty()) return nullptr;
  HttpGatewayOptions http;
  http.listen = f.http_listen;
  http.auth = std::move(auth);
  http.tls_cert_file = f.tls_cert;
  http.tls_key_file = f.tls_key;
  http.trusted_proxies = f.http_trusted_proxies;
  http.connection_nice = f.http_nice;
  http.on_refusal = [&telemetry](const std::string& reason) {
    telemetry.HttpRefused(reason);
  };
  absl::StatusOr<std::unique_ptr<HttpGateway>> gateway = HttpGateway::Start(
      http, server.InProcessChannel(grpc::ChannelArguments()),
      [&telemetry, &store] { return telemetry.Text(store); });
  if (!gateway.ok()) return gateway.status();
  spdlog::info("dashboard on http{}://{} (HTTP port {})",
               f.tls_cert.empty() ? "" : "s", f.http_listen,
               (*gateway)->port());
  return gateway;
}

int Main(int argc, char** argv) {
  CLI::App app{"tailsweep-coordinator: leases sweep jobs to workers over gRPC"};
  Flags f;
  DefineFlags(app, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "tailsweep-coordinator: %s (see --help)\n", e.what());
    return 2;
  }
  if (absl::Status s = InitLogging("coordinator", f.log_level); !s.ok()) {
    std::fprintf(stderr, "tailsweep-coordinator: %s\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  PrepareServingProcess();
  auto credentials = Credentials(f);
  if (!credentials.ok()) {
    spdlog::error("{}", std::string(credentials.status().message()));
    return 2;
  }
  absl::StatusOr<std::unique_ptr<TokenAuth>> loaded =
      TokenAuth::Load({f.token_file, f.read_token_file, f.worker_token_file});
  if (!loaded.ok()) {
    spdlog::error("{}", std::string(loaded.status().message()));
    return 2;
  }
  const std::shared_ptr<TokenAuth> auth = *std::move(loaded);
  if (!PrepareFiles(f)) return 2;
  SystemClock clock;
  StoreOptions options;
  options.max_attempts = f.max_attempts;
  options.lease_grace_ms = f.lease_grace_ms;
  if (!f.restore_from.empty()) {
    options.hold_leases_until_steady_ms =
        clock.SteadyMs() + static_cast<int64_t>(f.restore_hold_s * 1000);
  }
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Open(f.db_path, &clock, options);
  if (!store.ok()) {
    spdlog::error("{}", std::string(store.status().message()).c_str());
    return 1;
  }
  CheckpointStore checkpoints(store->get(), f.data_dir, f.budget);
  Telemetry telemetry(f.db_path);
  absl::StatusOr<NoticesOptions> notices_options = NoticesFrom(f);
  if (!notices_options.ok()) {
    spdlog::error("{}", std::string(notices_options.status().message()));
    return 2;
  }
  Notifier notifier(NotifierCounting(telemetry));
  Notices notices(store->get(), &clock, &notifier, *notices_options);
  CoordinatorService service(store->get(), &checkpoints,
                             ServiceOptionsFrom(f, auth, &telemetry, &notices));
  // Boundary sweeps that a restart interrupted get their next probes now.
  if (absl::Status s = service.search().Start(); !s.ok()) {
    spdlog::warn("boundary sweeps not advanced at start: {}", s.ToString());
  }
  HealthService health(store->get(), auth, &telemetry);
  // Reflection cannot ask for the token: with one, it is off.
  if (!auth->enabled()) {
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(f.listen, *credentials, &port);
  builder.SetMaxReceiveMessageSize(f.max_message_bytes);
  builder.RegisterService(&service);
  builder.RegisterService(&health);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(telemetry.InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    spdlog::error("cannot listen on {}", f.listen.c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<HttpGateway>> gateway =
      StartDashboard(f, auth, *server, telemetry, **store);
  if (!gateway.ok()) {
    spdlog::error("{}", std::string(gateway.status().message()));
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGHUP, OnReload);
  spdlog::info("tailsweep-coordinator {} serving on {} (port {}{}), db {}",
               Version(), f.listen, port, ServingNote(f, *auth), f.db_path);
  std::thread backups = StartBackups(f, &clock, &telemetry);
  ExpireLeasesUntilStopped(**store, telemetry, service.search(), notices, *auth,
                           &clock);
  if (backups.joinable()) backups.join();
  spdlog::info("shutting down");
  gateway->reset();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
