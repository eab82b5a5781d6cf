#ifndef TAILSWEEP_CLI_CONNECTION_H_
#define TAILSWEEP_CLI_CONNECTION_H_

// How the service commands reach the coordinator. --coordinator,
// --token-file, --tls-ca and --run-dir belong to the `tailsweep` command
// itself, so they are accepted before or after the subcommand (as `git -C`
// is); their defaults come from TAILSWEEP_COORDINATOR, TAILSWEEP_TOKEN_FILE,
// TAILSWEEP_TLS_CA and TAILSWEEP_RUN_DIR, else loopback:50551 without TLS or
// token. A run directory (proto/run_dir.h) gives all three.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "cli/cli_app.h"
#include "proto/client_channel.h"
#include "proto/tailsweep.grpc.pb.h"

namespace tailsweep::cli {

// Adds the four options to the top-level app.
void AddConnectionOptions(CLI::App& app);

// Connect as `channel` says (`slurm coordinator`, to its own server).
void UseChannel(const ChannelOptions& channel);

// One command's connection, made on first use.
class Connection {
 public:
  // The stub, connected on first use (--run-dir's address, token and CA,
  // or the three options); FailedPrecondition (exit 2), naming the option,
  // when --run-dir, --token-file or --tls-ca cannot be read.
  absl::StatusOr<v1::Coordinator::Stub*> Stub();
  // A context with the token and a deadline; after Stub() succeeded.
  std::unique_ptr<grpc::ClientContext> Context(
      std::chrono::seconds deadline = std::chrono::seconds(30));
  const std::string& address() const;

  // One call, its answer checked (Check): connect, call with a context,
  // answer the status.
  template <typename Request, typename Response>
  absl::Status Call(grpc::Status (v1::Coordinator::Stub::*method)(
                        grpc::ClientContext*, const Request&, Response*),
                    const Request& request, Response* response) {
    absl::StatusOr<v1::Coordinator::Stub*> stub = Stub();
    if (!stub.ok()) return stub.status();
    return Check(((*stub)->*method)(Context().get(), request, response));
  }

  // A gRPC answer as a status; UNAVAILABLE says how to reach the
  // coordinator.
  absl::Status Check(const grpc::Status& status) const;

 private:
  std::optional<Client> client_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_CONNECTION_H_
