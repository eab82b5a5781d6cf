#ifndef TAILSWEEP_COORDINATOR_HTTP_GATEWAY_H_
#define TAILSWEEP_COORDINATOR_HTTP_GATEWAY_H_

// The coordinator's HTTP face (tailsweep-coordinator
// --http-listen; cpp-httplib): the live dashboard, a JSON API over the read
// RPCs, and Prometheus' /metrics. It reads through the coordinator's own
// gRPC service over an in-process channel, so the API answers exactly what
// the RPCs answer (paging, validation, errors). Routes (docs/operations.md,
// "Dashboard, HTTP API and Prometheus"):
//   GET /                          the sweeps, live
//   GET /sweeps/NAME               a sweep's report page, live
//   /api/...                       the JSON API: http_api.h's ApiRoutes(),
//                                  described at GET /api/openapi.json;
//                                  POSTs are writes
//   GET /metrics                   Prometheus text (telemetry.h)
// API answers are JSON: proto3's JSON mapping of the RPC's answer with the
// proto field names (64-bit integers as strings, as that mapping says), or
// {"error": message, "code": "NOT_FOUND"} with 400, 401, 403, 404, 500
// or 503.
// With tokens (auth.h), every request needs "Authorization: Bearer TOKEN"
// or, for reads, the cookie that a browser's login sets (HttpOnly,
// SameSite=Strict): POST /login with the form field `token` (the token stays
// out of the address and the history), or GET /?token=TOKEN. What a token may
// do is its role's: an API route needs what its gRPC method needs
// (AccessOf), pages, the report and /metrics need a read or admin token;
// the call is made with the caller's own token. A worker token reads
// nothing here (403). With --tls-cert/--tls-key it serves HTTPS.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/auth.h"
#include "proto/tailsweep.grpc.pb.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace tailsweep {

struct HttpGatewayOptions {
  std::string listen;  // host:port; port 0 picks one
  // Who may do what (auth.h); null: no authentication.
  std::shared_ptr<const TokenAuth> auth;
  // PEM files; both set: HTTPS.
  std::string tls_cert_file, tls_key_file;
  // Each refused request's reason (unauthenticated, forbidden,
  // rate_limited, too_large), for /metrics; may be empty.
  std::function<void(const std::string& reason)> on_refusal;
  // Requests to a route that reads a whole sweep (ApiRoute::unbounded) a
  // peer may make: a burst, then this many a second.
  int unbounded_burst = 20;
  double unbounded_per_second = 2;
  // IP addresses of front proxies (deploy/haproxy): a request from one of
  // them is the peer its X-Forwarded-For names last, for the rate limits
  // and the refusal log. From anyone else the header is ignored.
  std::vector<std::string> trusted_proxies;
  // How much lower (nice, 0..19) each connection's thread runs than the
  // rest of the process: people's reads yield the cores to the workers'
  // calls. Nice is machine-wide: a local worker's training at nice 0 then
  // comes first too (0 turns it off).
  int connection_nice = 10;
};

// The connections being served, each on a thread of its own (the
// gateway's task queue, http_gateway.cc): shared with those threads.
struct ConnectionThreads {
  std::mutex mu;
  std::condition_variable room;
  int running = 0;  // guarded by mu
};

class HttpGateway {
 public:
  // Binds and starts serving on its own threads. `channel` reaches the
  // coordinator's service in process; `metrics_text` renders /metrics.
  // InvalidArgument when the address cannot be bound or TLS files do not
  // load.
  static absl::StatusOr<std::unique_ptr<HttpGateway>> Start(
      const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel,
      std::function<std::string()> metrics_text);
  ~HttpGateway();  // stops serving

  int port() const { return port_; }

 private:
  HttpGateway(const HttpGatewayOptions& options,
              std::shared_ptr<grpc::Channel> channel,
              std::function<std::string()> metrics_text);
  void Route();
  // Whether the request's token (its header, or the login cookie when
  // `cookie` may stand for it) may do what needs `access`; when not, the
  // answer is sent (401, 403) and counted.
  bool Authorized(const httplib::Request& req, httplib::Response& res,
                  Access access, bool cookie = true);
  // Whether a write (an API POST) may go on: a JSON body, the token in the
  // header (never the cookie) and its role; when not, the answer is sent.
  bool WriteAllowed(const httplib::Request& req, httplib::Response& res,
                    Access access);
  // `handler` behind the token check (Authorized, WriteAllowed).
  using Handler =
      std::function<void(const httplib::Request&, httplib::Response&)>;
  Handler Guarded(Access access, Handler handler);
  Handler Writes(Access access, Handler handler);
  // The /api/ routes (http_api.h), each needing what its gRPC call needs.
  void RouteApi();
  // POST /login: the form's token becomes the cookie.
  void ServeLogin(const httplib::Request& req, httplib::Response& res);
  // GET /: the sweeps page, or a browser's login with ?token=.
  void ServeIndex(const httplib::Request& req, httplib::Response& res);

  // Who sent the request: its socket's address, or the address a trusted
  // proxy forwarded it for.
  std::string PeerOf(const httplib::Request& req) const;
  // Counts a refusal, and logs it once per peer and reason a minute.
  void Refused(const httplib::Request& req, const std::string& reason);
  // Whether `peer` may make one more unbounded read now (token bucket).
  bool TakeUnboundedRead(const std::string& peer);

  HttpGatewayOptions options_;
  std::shared_ptr<const TokenAuth> auth_;
  std::mutex peers_mu_;
  struct Peer {
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled;
    std::map<std::string, std::chrono::steady_clock::time_point> logged;
  };
  std::map<std::string, Peer> peers_;  // guarded by peers_mu_
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;  // over channel_
  std::function<std::string()> metrics_text_;
  std::shared_ptr<ConnectionThreads> threads_ =
      std::make_shared<ConnectionThreads>();
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_HTTP_GATEWAY_H_
