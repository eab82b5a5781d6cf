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
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "coordinator/http_gateway.h"
#include "coordinator/lease_expiry.h"
#include "coordinator/service.h"
#include "core/schema/logging.h"
#include "core/schema/version.h"
#include "proto/client_channel.h"

namespace tailsweep {
namespace {

std::atomic<bool> stop_requested{false};
void OnSignal(int) { stop_requested = true; }

int Main(int argc, char** argv) {
  CLI::App app{"tailsweep-coordinator: leases sweep jobs to workers over gRPC"};
  std::string db_path, listen = "127.0.0.1:50551", data_dir;
  int64_t max_attempts = 3, max_checkpoint_bytes = int64_t{4} << 30;
  int64_t lease_grace_ms = StoreOptions{}.lease_grace_ms;
  int max_message_bytes = 4 << 20;
  CheckpointBudget budget;
  std::string token_file, tls_cert, tls_key, log_level, http_listen;
  app.set_version_flag("--version",
                       std::string("tailsweep-coordinator ") + Version());
  app.add_option("--db", db_path, "SQLite database file (created if missing)")
      ->required();
  app.add_option("--listen", listen, "Address to serve on (default: loopback)")
      ->capture_default_str();
  app.add_option(
         "--data-dir", data_dir,
         "Directory for checkpoints (DIR/checkpoints/JOB/EPOCH/step-N.pt)")
      ->required();
  app.add_option("--max-attempts", max_attempts, "Attempts before a job fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lease-grace-ms", lease_grace_ms,
                 "How long past its deadline a lease expires (covers a "
                 "worker's longest training step plus a checkpoint write, so "
                 "a frozen worker's job has stopped itself first)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-checkpoint-bytes", max_checkpoint_bytes,
                 "Largest checkpoint accepted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-data-bytes", budget.max_data_bytes,
                 "Most bytes of checkpoints kept under --data-dir; to make "
                 "room, those no job needs are pruned first, then uploads "
                 "are refused (0: no budget)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--min-free-bytes", budget.min_free_bytes,
                 "Free space kept on --data-dir's filesystem (for the "
                 "database): checkpoints that would leave less are refused")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-message-bytes", max_message_bytes,
                 "Largest request accepted (RESOURCE_EXHAUSTED above)")
      ->check(CLI::Range(1 << 16, 1 << 30))
      ->capture_default_str();
  app.add_option("--token-file", token_file,
                 "Require 'authorization: Bearer TOKEN' on every call (the "
                 "token is the file's first line); turns reflection off");
  app.add_option("--tls-cert", tls_cert, "PEM certificate chain: serve TLS");
  app.add_option("--tls-key", tls_key, "PEM private key of --tls-cert");
  app.add_option("--http-listen", http_listen,
                 "Also serve the live dashboard, the JSON API under /api/ and "
                 "Prometheus' /metrics on HOST:PORT (read-only; the same "
                 "token, and TLS when gRPC has it; off by default)");
  app.add_option("--log-level", log_level,
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "tailsweep-coordinator: %s (see --help)\n", e.what());
    return 2;
  }
  if (absl::Status s = InitLogging("coordinator", log_level); !s.ok()) {
    std::fprintf(stderr, "tailsweep-coordinator: %s\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  if (tls_cert.empty() != tls_key.empty()) {
    spdlog::error("--tls-cert and --tls-key go together");
    return 2;
  }
  std::string token;
  if (!token_file.empty()) {
    absl::StatusOr<std::string> t = ReadTokenFile(token_file);
    if (!t.ok()) {
      spdlog::error("{}", std::string(t.status().message()).c_str());
      return 2;
    }
    token = *t;
  }
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  if (!tls_cert.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    for (auto [path, out] : {std::pair{&tls_cert, &pair.cert_chain},
                             std::pair{&tls_key, &pair.private_key}}) {
      std::ifstream in(*path);
      std::stringstream text;
      text << in.rdbuf();
      if (!in || text.str().empty()) {
        spdlog::error("cannot read {}", path->c_str());
        return 2;
      }
      *out = text.str();
    }
    ssl.pem_key_cert_pairs.push_back(pair);
    credentials = grpc::SslServerCredentials(ssl);
  }
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    spdlog::error("--data-dir {}: {}", data_dir.c_str(), ec.message().c_str());
    return 2;
  }
  SystemClock clock;
  StoreOptions options;
  options.max_attempts = max_attempts;
  options.lease_grace_ms = lease_grace_ms;
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Open(db_path, &clock, options);
  if (!store.ok()) {
    spdlog::error("{}", std::string(store.status().message()).c_str());
    return 1;
  }
  CheckpointStore checkpoints(store->get(), data_dir, budget);
  Telemetry telemetry(db_path);
  ServiceOptions service_options;
  service_options.max_checkpoint_bytes = max_checkpoint_bytes;
  service_options.token = token;
  service_options.telemetry = &telemetry;
  CoordinatorService service(store->get(), &checkpoints, service_options);
  HealthService health(store->get(), token);
  // Reflection cannot ask for the token: with one, it is off.
  if (token.empty()) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, credentials, &port);
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.RegisterService(&service);
  builder.RegisterService(&health);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(telemetry.InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    spdlog::error("cannot listen on {}", listen.c_str());
    return 1;
  }
  std::unique_ptr<HttpGateway> gateway;
  if (!http_listen.empty()) {
    HttpGatewayOptions http;
    http.listen = http_listen;
    http.token = token;
    http.tls_cert_file = tls_cert;
    http.tls_key_file = tls_key;
    absl::StatusOr<std::unique_ptr<HttpGateway>> g = HttpGateway::Start(
        http, server->InProcessChannel(grpc::ChannelArguments()),
        [&] { return telemetry.Text(**store); });
    if (!g.ok()) {
      spdlog::error("{}", std::string(g.status().message()));
      return 2;
    }
    gateway = std::move(*g);
    spdlog::info("dashboard on http{}://{} (HTTP port {})",
                 tls_cert.empty() ? "" : "s", http_listen, gateway->port());
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  spdlog::info("tailsweep-coordinator {} serving on {} (port {}{}{}), db {}",
               Version(), listen, port, tls_cert.empty() ? "" : ", TLS",
               token.empty() ? "" : ", token", db_path);
  LeaseExpiry expiry(
      [&](int64_t now, std::vector<Store::ExpiredLease>* out) {
        absl::StatusOr<int64_t> n = (*store)->ExpireLeases(now, out);
        telemetry.LeasesExpired(static_cast<int64_t>(out->size()));
        return n;
      },
      [&](int64_t now) { (*store)->RestartLeaseClocks(now); }, &clock,
      [](int64_t ms) {
        for (int64_t waited = 0; waited < ms && !stop_requested;
             waited += 100) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return !stop_requested;
      },
      /*period_ms=*/1000);
  expiry.Run();
  spdlog::info("shutting down");
  gateway.reset();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
