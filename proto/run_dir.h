#ifndef TAILSWEEP_PROTO_RUN_DIR_H_
#define TAILSWEEP_PROTO_RUN_DIR_H_

// A run directory: how a coordinator and its workers find each other on a
// cluster (HyperQueue's server-directory pattern). `tailsweep slurm up`
// creates it on a file system every node sees (mode 0700), the coordinator
// job fills in its address, and workers and the CLI read it (--run-dir):
//
//   token                   the admin's bearer token (0600): the CLI's
//   worker-token            the workers' (0600): the worker role, which
//                           leases and reports but cannot submit or read
//                           sweeps (coordinator/auth.h)
//   ca.crt, ca.key          the run's own certificate authority (key 0600)
//   server.crt, server.key  the coordinator node's TLS certificate, signed
//                           by the CA, made anew on each start (a requeued
//                           coordinator may land on another node)
//   address                 HOST:PORT, written atomically once the
//                           coordinator answers there
//   http_address            https://HOST:PORT of its HTTP API and
//                           dashboard (same token and CA), written with it
//   tailsweep.db, data/     the coordinator's database and checkpoints (a
//                           requeued coordinator job resumes from them)
//   spec.yaml               the spec `slurm up` submitted
//   slurm-jobs              "coordinator ID" and "workers ID" lines
//   down                    present once `tailsweep slurm down` ran: no
//                           worker requeues itself
//   coordinator.log, workers-*.log   the jobs' output
//
// This header is the one place that names these files.

#include <string>

#include "absl/status/statusor.h"
#include "proto/client_channel.h"

namespace tailsweep {

inline constexpr char kRunToken[] = "token";
inline constexpr char kRunWorkerToken[] = "worker-token";
inline constexpr char kRunCaCert[] = "ca.crt";
inline constexpr char kRunCaKey[] = "ca.key";
inline constexpr char kRunServerCert[] = "server.crt";
inline constexpr char kRunServerKey[] = "server.key";
inline constexpr char kRunAddress[] = "address";
inline constexpr char kRunHttpAddress[] = "http_address";
inline constexpr char kRunDatabase[] = "tailsweep.db";
inline constexpr char kRunDataDir[] = "data";
inline constexpr char kRunSpec[] = "spec.yaml";
inline constexpr char kRunSlurmJobs[] = "slurm-jobs";
inline constexpr char kRunDown[] = "down";
inline constexpr char kRunCoordinatorLog[] = "coordinator.log";

// DIR/NAME.
std::string RunPath(const std::string& dir, const std::string& name);

// How to reach the run's coordinator: DIR/address with DIR/token (a
// worker's: DIR/worker-token, or DIR/token in a run made before it) and TLS
// against DIR/ca.crt. NotFound while no address has been written (the
// coordinator is not up yet); InvalidArgument for an unreadable directory
// or an address that is not HOST:PORT.
absl::StatusOr<ChannelOptions> RunDirChannel(const std::string& dir,
                                             bool as_worker = false);

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_RUN_DIR_H_
