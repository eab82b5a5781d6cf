#include "coordinator/http_gateway.h"

#include <arpa/inet.h>
#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "coordinator/http_api.h"
#include "coordinator/read_lane.h"
#include "coordinator/store.h"
#include "core/schema/job_kinds.h"
#include "core/schema/version.h"
#include "proto/client_channel.h"
#include "proto/paged_reads.h"
#include "report/page.h"
#include "report/report_data.h"

namespace tailsweep {
namespace {

using http_api::SendError;
using http_api::SendJson;
using http_api::ServeCall;

constexpr char kCookie[] = "tailsweep_token";
constexpr int kMaxConnectionThreads = 2048;
constexpr std::chrono::seconds kShutdownGrace(3);
constexpr std::chrono::seconds kReadTimeout(5), kWriteTimeout(30),
    kKeepAliveTimeout(5);
// Past --max-message-bytes (4 MiB by default) the call refuses it anyway.
constexpr size_t kMaxBodyBytes = 64 << 20;

std::string Hex(absl::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Unhex(absl::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int v = 0;
    if (!absl::SimpleHexAtoi(hex.substr(i, 2), &v)) return "";
    out += static_cast<char>(v);
  }
  return out;
}

// The token a browser's cookie carries, as an Authorization value.
std::string CookieAuthorization(const httplib::Request& req) {
  for (absl::string_view part :
       absl::StrSplit(req.get_header_value("Cookie"), ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, kCookie) &&
        absl::ConsumePrefix(&part, "=")) {
      return absl::StrCat("Bearer ", Unhex(part));
    }
  }
  return "";
}

std::string PercentEncode(absl::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      out += static_cast<char>(c);
    } else {
      absl::StrAppend(&out, "%", absl::AsciiStrToUpper(Hex(std::string(1, c))));
    }
  }
  return out;
}

void SendPage(httplib::Response& res, const PageInput& page) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; script-src 'unsafe-inline'; "
                 "style-src 'unsafe-inline'; img-src 'self' data:");
  res.set_content(ReportPage(page), "text/html; charset=utf-8");
}

// The calls made for one request, each with a minute's deadline and the
// caller's own "authorization" (so the service judges its role too).
CoordinatorApi CallsAs(v1::Coordinator::Stub* stub, std::string authorization) {
  return CoordinatorApi(stub, [authorization] {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(60));
    if (!authorization.empty()) {
      ctx->AddMetadata("authorization", authorization);
    }
    return ctx;
  });
}

// The request's "authorization": its header, or the login cookie's token
// when `cookie`.
std::string AuthorizationOf(const httplib::Request& req, bool cookie) {
  std::string authorization = req.get_header_value("Authorization");
  if (authorization.empty() && cookie) {
    authorization = CookieAuthorization(req);
  }
  return authorization;
}

// A browser's login: a form that POSTs the token to /login.
constexpr char kLoginPage[] = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>tailsweep: sign in</title></head>
<body style="font-family:sans-serif;margin:3em">
<h1>tailsweep</h1>
<form method="post" action="/login">
<label>Token <input type="password" name="token" autofocus></label>
<button type="submit">Open the dashboard</button>
</form>
<p>A read token (the coordinator's <code>--read-token-file</code>) is enough
to see everything here.</p>
</body></html>
)";

// Each connection on a thread of its own, up to kMaxConnectionThreads at
// once (more wait in the listen backlog until one ends). httplib's own pool
// is 8 threads, each held for its read timeout by any connection that sends
// nothing or half a request: 16 such connections from anyone, token or not,
// stalled /metrics and the dashboard for 17 s (measured). Here such a
// connection holds its own thread only, blocked in recv until the read
// timeout, at the cost of a thread's stack (touched pages only) each.
class ThreadPerConnection : public httplib::TaskQueue {
 public:
  ThreadPerConnection(std::shared_ptr<ConnectionThreads> threads, int nice)
      : threads_(std::move(threads)), nice_(nice) {}
  void enqueue(std::function<void()> fn) override {
    ConnectionThreads& t = *threads_;
    std::unique_lock<std::mutex> lock(t.mu);
    t.room.wait(lock, [&] { return t.running < kMaxConnectionThreads; });
    ++t.running;
    // The thread keeps the counts alive: httplib deletes this queue after
    // shutdown(), which may leave a dribbling client's thread running.
    std::thread([threads = threads_, fn = std::move(fn), nice = nice_] {
      // Behind the workers' calls: a read storm's formatting and sending
      // yields the cores to leases and heartbeats.
      pthread_setname_np(pthread_self(), "ts-http");
      LowerThisThread(nice);
      fn();
      std::lock_guard<std::mutex> done(threads->mu);
      --threads->running;
      threads->room.notify_all();
    }).detach();
  }
  // Waits for the connections to end, at most kShutdownGrace: a client
  // that sends a byte every few seconds keeps httplib reading its headers
  // (each byte restarts the read timeout) and would hold a shutdown
  // forever (measured: a coordinator that did not exit 40 s after SIGTERM).
  void shutdown() override {
    ConnectionThreads& t = *threads_;
    std::unique_lock<std::mutex> lock(t.mu);
    t.room.wait_for(lock, kShutdownGrace, [&] { return t.running == 0; });
  }

 private:
  std::shared_ptr<ConnectionThreads> threads_;
  int nice_;
};

}  // namespace

HttpGateway::HttpGateway(const HttpGatewayOptions& options,
                         std::shared_ptr<grpc::Channel> channel,
                         std::function<std::string()> metrics_text)
    : options_(options),
      auth_(options.auth ? options.auth : std::make_shared<TokenAuth>()),
      channel_(std::move(channel)),
      metrics_text_(std::move(metrics_text)) {}

HttpGateway::~HttpGateway() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(threads_->mu);
  if (threads_->running > 0) {
    // Connections still being read after the grace: their threads use the
    // server, so it stays (the process is ending: what it holds goes with
    // it).
    spdlog::warn("HTTP gateway stopped with {} connection(s) still sending",
                 threads_->running);
    (void)server_.release();
  }
}

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel,
    std::function<std::string()> metrics_text) {
  std::unique_ptr<HttpGateway> g(
      new HttpGateway(options, std::move(channel), std::move(metrics_text)));
  for (const std::string& proxy : options.trusted_proxies) {
    in6_addr any;
    if (inet_pton(AF_INET, proxy.c_str(), &any) != 1 &&
        inet_pton(AF_INET6, proxy.c_str(), &any) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--http-trusted-proxy '", proxy,
                       "' is not an IP address (e.g. 127.0.0.1 or ::1)"));
    }
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a key");
  }
  if (!options.tls_cert_file.empty()) {
    auto ssl = std::make_unique<httplib::SSLServer>(
        options.tls_cert_file.c_str(), options.tls_key_file.c_str());
    if (!ssl->is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--http-listen: cannot load TLS certificate ", options.tls_cert_file,
          " and key ", options.tls_key_file));
    }
    g->server_ = std::move(ssl);
  } else {
    g->server_ = std::make_unique<httplib::Server>();
  }
  const size_t cut = options.listen.rfind(':');
  int port = -1;
  if (cut == std::string::npos ||
      !absl::SimpleAtoi(options.listen.substr(cut + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen '", options.listen, "' must be HOST:PORT"));
  }
  std::string host = options.listen.substr(0, cut);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  g->server_->new_task_queue = [threads = g->threads_,
                                nice = options.connection_nice] {
    return new ThreadPerConnection(threads, nice);
  };
  // The listening socket, seen as httplib makes it: its backlog is widened
  // below (Debian's httplib listens with a backlog of 5: a burst of
  // connections overflowed it, and each dropped SYN cost a client 1 s).
  auto listener = std::make_shared<int>(-1);
  g->server_->set_socket_options([listener](socket_t sock) {
    httplib::default_socket_options(sock);
    *listener = sock;
  });
  // A request's headers and body: each read may wait kReadTimeout; a body
  // past kMaxBodyBytes is refused (413) before it is read.
  g->server_->set_read_timeout(kReadTimeout);
  g->server_->set_write_timeout(kWriteTimeout);
  g->server_->set_keep_alive_timeout(kKeepAliveTimeout.count());
  g->server_->set_payload_max_length(kMaxBodyBytes);
  g->Route();
  if (port == 0) {
    port = g->server_->bind_to_any_port(host);
  } else if (!g->server_->bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen: cannot listen on ", options.listen));
  }
  if (*listener >= 0) ::listen(*listener, SOMAXCONN);
  g->port_ = port;
  httplib::Server* server = g->server_.get();
  g->thread_ = std::thread([server] { server->listen_after_bind(); });
  return g;
}

std::string HttpGateway::PeerOf(const httplib::Request& req) const {
  const std::vector<std::string>& trusted = options_.trusted_proxies;
  if (std::find(trusted.begin(), trusted.end(), req.remote_addr) ==
      trusted.end()) {
    return req.remote_addr;
  }
  // The proxy appends the address it accepted from: the last one (of the
  // last such header; a client may send its own before it).
  const size_t headers = req.get_header_value_count("X-Forwarded-For");
  const std::string forwarded =
      headers == 0 ? "" : req.get_header_value("X-Forwarded-For", headers - 1);
  const size_t comma = forwarded.rfind(',');
  const std::string last(absl::StripAsciiWhitespace(
      comma == std::string::npos ? forwarded : forwarded.substr(comma + 1)));
  return last.empty() ? req.remote_addr : last;
}

void HttpGateway::Refused(const httplib::Request& req,
                          const std::string& reason) {
  if (options_.on_refusal) options_.on_refusal(reason);
  const auto now = std::chrono::steady_clock::now();
  const std::string peer = PeerOf(req);
  {
    std::lock_guard<std::mutex> lock(peers_mu_);
    auto& last = peers_[peer].logged[reason];
    if (last.time_since_epoch().count() != 0 &&
        now - last < std::chrono::minutes(1)) {
      return;  // said once a minute per peer and reason, not per request
    }
    last = now;
  }
  // The path only: a browser's login puts the token in the query.
  spdlog::warn(
      "HTTP {} {} from {}: refused ({}); said once a minute per "
      "peer",
      req.method, req.path, peer, reason);
}

bool HttpGateway::TakeUnboundedRead(const std::string& peer) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(peers_mu_);
  auto [it, fresh] = peers_.try_emplace(peer);
  Peer& p = it->second;
  if (fresh || p.refilled.time_since_epoch().count() == 0) {
    p.tokens = options_.unbounded_burst;
  } else {
    p.tokens = std::min<double>(
        options_.unbounded_burst,
        p.tokens + options_.unbounded_per_second *
                       std::chrono::duration<double>(now - p.refilled).count());
  }
  p.refilled = now;
  if (peers_.size() > 100000) peers_.clear();  // a bound, not a memory
  if (p.tokens < 1) return false;
  p.tokens -= 1;
  return true;
}

bool HttpGateway::Authorized(const httplib::Request& req,
                             httplib::Response& res, Access access,
                             bool cookie) {
  const absl::Status s = auth_->Check(
      AuthorizationOf(req, cookie), access,
      absl::StrCat(req.method == "POST" ? "write " : "read ", req.path));
  if (s.ok()) return true;
  const bool forbidden = absl::IsPermissionDenied(s);
  Refused(req, forbidden ? "forbidden" : "unauthenticated");
  SendError(res, forbidden ? s
                           : absl::UnauthenticatedError(
                                 "missing or wrong token: send "
                                 "'Authorization: Bearer TOKEN', or sign in "
                                 "at / in a browser"));
  return false;
}

void HttpGateway::ServeLogin(const httplib::Request& req,
                             httplib::Response& res) {
  // The form's body (application/x-www-form-urlencoded), or ?token=.
  const std::string token = req.get_param_value("token");
  const absl::StatusOr<Role> role = auth_->Authenticate("Bearer " + token);
  if (token.empty() || !role.ok()) {
    Refused(req, "unauthenticated");
    res.status = 401;
    res.set_header("Cache-Control", "no-store");
    res.set_content(kLoginPage, "text/html; charset=utf-8");
    return;
  }
  if (*role == Role::kWorker) {
    Refused(req, "forbidden");
    return SendError(res, absl::PermissionDeniedError(
                              "a worker token may not open the dashboard: "
                              "it needs a read or admin token"));
  }
  // The token becomes a cookie; the address never holds it.
  res.set_header(
      "Set-Cookie",
      absl::StrCat(kCookie, "=", Hex(token),
                   "; Path=/; HttpOnly; SameSite=Strict",
                   options_.tls_cert_file.empty() ? "" : "; Secure"));
  res.set_redirect("/", 303);
}

void HttpGateway::ServeIndex(const httplib::Request& req,
                             httplib::Response& res) {
  if (req.has_param("token")) return ServeLogin(req, res);
  if (auth_->enabled() &&
      !auth_->Authenticate(AuthorizationOf(req, true)).ok()) {
    // Not signed in: the form (401), not an error in JSON.
    res.status = 401;
    res.set_header("Cache-Control", "no-store");
    res.set_content(kLoginPage, "text/html; charset=utf-8");
    return;
  }
  if (Authorized(req, res, Access::kRead)) {
    SendPage(res, {"tailsweep: sweeps", "", "/api/sweeps", true});
  }
}

// Writes: the token in the Authorization header only, and a JSON body. A
// cookie is what a browser sends by itself, to any page's form: it never
// writes; and no other site's page can send JSON here without a CORS
// preflight, which this server never grants (even with no token set).
bool HttpGateway::WriteAllowed(const httplib::Request& req,
                               httplib::Response& res, Access access) {
  if (!absl::StartsWith(req.get_header_value("Content-Type"),
                        "application/json")) {
    SendError(res, absl::InvalidArgumentError(
                       "writes take a JSON body: send 'Content-Type: "
                       "application/json' (an empty body is {})"));
    return false;
  }
  if (req.get_header_value("Authorization").empty() && auth_->enabled()) {
    SendError(res, absl::UnauthenticatedError(
                       "writes need the header 'Authorization: Bearer "
                       "TOKEN' (a browser's cookie does not write)"));
    return false;
  }
  return Authorized(req, res, access, /*cookie=*/false);
}

HttpGateway::Handler HttpGateway::Guarded(Access access, Handler handler) {
  return [this, access, handler = std::move(handler)](
             const httplib::Request& req, httplib::Response& res) {
    if (Authorized(req, res, access)) handler(req, res);
  };
}

HttpGateway::Handler HttpGateway::Writes(Access access, Handler handler) {
  return [this, access, handler = std::move(handler)](
             const httplib::Request& req, httplib::Response& res) {
    if (WriteAllowed(req, res, access)) handler(req, res);
  };
}

void HttpGateway::RouteApi() {
  httplib::Server& s = *server_;
  for (const http_api::ApiRoute& route : http_api::ApiRoutes()) {
    const std::string pattern = http_api::RoutePattern(route.path);
    auto serve = [this, fn = route.serve, unbounded = route.unbounded,
                  post = std::string(route.method) == "POST"](
                     const httplib::Request& req, httplib::Response& res) {
      // A read of a whole sweep in one request: a peer's burst, then a
      // steady rate. Paged reads (each page bounded) are not limited.
      const bool paged =
          req.has_param("page_size") || req.has_param("page_token");
      const std::string peer = PeerOf(req);
      if (unbounded && !paged && !TakeUnboundedRead(peer)) {
        Refused(req, "rate_limited");
        res.set_header("Retry-After", "1");
        return SendError(
            res, absl::ResourceExhaustedError(absl::StrCat(
                     "too many whole-sweep reads from ", peer, ": at most ",
                     options_.unbounded_burst, " at once, then ",
                     options_.unbounded_per_second,
                     " a second; retry after 1 s, or read in pages "
                     "(page_size=)")));
      }
      // The calls carry the caller's own token: the service judges it too.
      fn(CallsAs(stub_.get(), AuthorizationOf(req, !post)), req, res);
    };
    // What the route's call needs; a page of its own (the report, the API's
    // description): a read.
    const Access access =
        *route.call == '\0' ? Access::kRead : AccessOf(route.call);
    if (std::string(route.method) == "POST") {
      s.Post(pattern, Writes(access, serve));
    } else {
      s.Get(pattern, Guarded(access, serve));
    }
  }
}

void HttpGateway::Route() {
  httplib::Server& s = *server_;
  stub_ = v1::Coordinator::NewStub(channel_);

  s.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    ServeIndex(req, res);
  });
  s.Post("/login", [this](const httplib::Request& req, httplib::Response& res) {
    ServeLogin(req, res);
  });
  s.Get(R"(/sweeps/([^/]+))",
        Guarded(Access::kRead,
                [](const httplib::Request& req, httplib::Response& res) {
                  const std::string sweep = req.matches[1];
                  SendPage(res, {absl::StrCat("tailsweep: ", sweep), "",
                                 absl::StrCat("/api/sweeps/",
                                              PercentEncode(sweep), "/report"),
                                 false});
                }));
  RouteApi();
  s.Get("/metrics", Guarded(Access::kRead, [this](const httplib::Request&,
                                                  httplib::Response& res) {
          res.set_content(metrics_text_(), "text/plain; version=0.0.4");
        }));
  s.set_error_handler(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (res.status == 413) {
          Refused(req, "too_large");
          SendError(res,
                    absl::ResourceExhaustedError(absl::StrCat(
                        "the request body is over ", kMaxBodyBytes, " bytes")));
          res.status = 413;
          return;
        }
        if (res.status == 404 && res.body.empty()) {
          SendError(res, absl::NotFoundError(absl::StrCat(
                             "no page ", req.path,
                             ": see /, /sweeps/NAME, /api/... or /metrics")));
        }
      });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                             std::exception_ptr) {
    SendError(res, absl::InternalError("the gateway failed on this request"));
  });
}

}  // namespace tailsweep
