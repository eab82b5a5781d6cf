#ifndef TAILSWEEP_PROTO_CLIENT_CHANNEL_H_
#define TAILSWEEP_PROTO_CLIENT_CHANNEL_H_

// How the coordinator's clients (the worker, the CLI) connect: plaintext or
// TLS against a CA file, and a bearer token from a file sent on every call.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace tailsweep {

struct ChannelOptions {
  std::string address;     // host:port
  std::string token_file;  // empty: no token
  std::string tls_ca;      // PEM CA certificates; empty: plaintext
  // > 0: reconnect at least this often after an outage (gRPC's own backoff
  // otherwise grows to two minutes). For daemons that must be back before
  // their leases run out: the worker uses a quarter lease, at most 4 s.
  int64_t max_reconnect_backoff_ms = 0;
  // Also open Client::bulk_channel: a connection of its own for checkpoint
  // transfers, so that one on a slow link never queues other calls (a
  // heartbeat) behind its bytes on a shared TCP stream.
  bool bulk_channel = false;
};

struct Client {
  std::shared_ptr<grpc::Channel> channel;
  std::shared_ptr<grpc::Channel> bulk_channel;  // null unless asked for
  std::string token;                            // empty: none

  // A context for one call: its deadline and the token.
  std::unique_ptr<grpc::ClientContext> Context(
      std::chrono::milliseconds timeout) const;
};

// Adds "authorization: Bearer TOKEN" to a call (nothing for an empty token).
void AddToken(grpc::ClientContext* ctx, const std::string& token);

// InvalidArgument when a file cannot be read or the token file is empty.
absl::StatusOr<Client> Connect(const ChannelOptions& options);

// The token in `path`: its first line, surrounding whitespace removed.
// InvalidArgument when the file is missing, unreadable or empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_CLIENT_CHANNEL_H_
