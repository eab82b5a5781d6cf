#ifndef TAILSWEEP_CLI_CONNECTION_H_
#define TAILSWEEP_CLI_CONNECTION_H_

// How the service commands reach the coordinator. --coordinator,
// --token-file, --tls-ca and --run-dir belong to the `tailsweep` command
// itself, so they are accepted before or after the subcommand (as `git -C`
// is); their defaults come from TAILSWEEP_COORDINATOR, TAILSWEEP_TOKEN_FILE,
// TAILSWEEP_TLS_CA and TAILSWEEP_RUN_DIR, else loopback:50551 without TLS or
// token. A run directory (proto/run_dir.h) gives all three.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "cli/cli_app.h"
#include "proto/client_channel.h"
#include "proto/coordinator_api.h"

namespace tailsweep::cli {

// Adds the four options to the top-level app.
void AddConnectionOptions(CLI::App& app);

// Connect as `channel` says (`slurm coordinator`, to its own server).
void UseChannel(const ChannelOptions& channel);

// One command's connection, made on first use.
class Connection {
 public:
  // The coordinator's calls, connected on first use (--run-dir's address,
  // token and CA, or the three options); FailedPrecondition (exit 2),
  // naming the option, when --run-dir, --token-file or --tls-ca cannot be
  // read. Each call has a 30 s deadline; UNAVAILABLE says how to reach the
  // coordinator.
  absl::StatusOr<const CoordinatorApi*> Api();
  const std::string& address() const;

  // One call: connect, then api->*method.
  template <typename Request, typename Response>
  absl::Status Call(absl::Status (CoordinatorApi::*method)(const Request&,
                                                           Response*) const,
                    const Request& request, Response* response) {
    absl::StatusOr<const CoordinatorApi*> api = Api();
    if (!api.ok()) return api.status();
    return ((*api)->*method)(request, response);
  }

 private:
  std::unique_ptr<CoordinatorChannel> channel_;
};

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_CONNECTION_H_
