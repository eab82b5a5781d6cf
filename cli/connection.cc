#include "cli/connection.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "proto/run_dir.h"

namespace tailsweep::cli {
namespace {

std::string FromEnv(const char* name, const char* otherwise = "") {
  const char* value = std::getenv(name);
  return value ? value : otherwise;
}

ChannelOptions& Options() {
  static ChannelOptions options{
      FromEnv("TAILSWEEP_COORDINATOR", "127.0.0.1:50551"),
      FromEnv("TAILSWEEP_TOKEN_FILE"), FromEnv("TAILSWEEP_TLS_CA")};
  return options;
}

std::string& RunDir() {
  static std::string dir = FromEnv("TAILSWEEP_RUN_DIR");
  return dir;
}

// --run-dir, once: the run directory's address, token and CA replace the
// other three.
absl::Status ApplyRunDir() {
  if (RunDir().empty()) return absl::OkStatus();
  absl::StatusOr<ChannelOptions> from = RunDirChannel(RunDir());
  if (!from.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--run-dir: ", from.status().message()));
  }
  Options() = *from;
  RunDir().clear();
  return absl::OkStatus();
}

}  // namespace

void AddConnectionOptions(CLI::App& app) {
  ChannelOptions& o = Options();
  app.add_option("--coordinator", o.address,
                 "Coordinator address (default: TAILSWEEP_COORDINATOR, else "
                 "127.0.0.1:50551); before or after the subcommand")
      ->capture_default_str();
  app.add_option("--token-file", o.token_file,
                 "Bearer token for a coordinator started with --token-file "
                 "(default: TAILSWEEP_TOKEN_FILE)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-ca", o.tls_ca,
                 "PEM CA file: connect with TLS (default: TAILSWEEP_TLS_CA)")
      ->check(CLI::ExistingFile);
  app.add_option("--run-dir", RunDir(),
                 "A `tailsweep slurm up` run directory: connect as it says "
                 "(its address, token and CA replace the three above; "
                 "default: TAILSWEEP_RUN_DIR)");
}

void UseChannel(const ChannelOptions& channel) {
  RunDir().clear();
  Options() = channel;
}

const std::string& Connection::address() const { return Options().address; }

absl::StatusOr<const CoordinatorApi*> Connection::Api() {
  if (!channel_) {
    if (absl::Status s = ApplyRunDir(); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<CoordinatorChannel>> opened =
        CoordinatorChannel::Open(
            Options(), std::chrono::seconds(30),
            [address = address()](absl::Status s) {
              if (!absl::IsUnavailable(s)) return s;
              return absl::UnavailableError(absl::StrCat(
                  "coordinator at ", address, " is unreachable (", s.message(),
                  "); start it with tailsweep-coordinator or pass "
                  "--coordinator"));
            });
    if (!opened.ok()) {  // an unreadable --token-file or --tls-ca
      return absl::FailedPreconditionError(opened.status().message());
    }
    channel_ = *std::move(opened);
  }
  return &channel_->api();
}

}  // namespace tailsweep::cli
