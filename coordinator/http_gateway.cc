#include "coordinator/http_gateway.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "coordinator/store.h"
#include "core/schema/job_kinds.h"
#include "core/schema/version.h"
#include "proto/client_channel.h"
#include "proto/paged_reads.h"
#include "report/page.h"
#include "report/report_data.h"

namespace tailsweep {
namespace {

constexpr char kCookie[] = "tailsweep_token";

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

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

void SendError(httplib::Response& res, const absl::Status& s) {
  res.status = HttpStatusOf(s.code());
  nlohmann::json doc = {{"error", std::string(s.message())},
                        {"code", absl::StatusCodeToString(s.code())}};
  res.set_content(
      doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      "application/json");
}

void SendJson(httplib::Response& res, const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out, options).ok()) {
    SendError(res, absl::InternalError("cannot write the answer as JSON"));
    return;
  }
  res.set_content(out, "application/json");
}

void SendPage(httplib::Response& res, const PageInput& page) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; script-src 'unsafe-inline'; "
                 "style-src 'unsafe-inline'; img-src 'self' data:");
  res.set_content(ReportPage(page), "text/html; charset=utf-8");
}

absl::StatusOr<int64_t> IntParam(const httplib::Request& req, const char* name,
                                 int64_t fallback) {
  if (!req.has_param(name)) return fallback;
  int64_t v = 0;
  if (!absl::SimpleAtoi(req.get_param_value(name), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter '", name, "' must be an integer (got '",
                     req.get_param_value(name), "')"));
  }
  return v;
}

// The read calls, each with a minute's deadline and the token.
CoordinatorApi CallsWithToken(v1::Coordinator::Stub* stub, std::string token) {
  return CoordinatorApi(stub, [token] {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(60));
    AddToken(ctx.get(), token);
    return ctx;
  });
}

// GET /api/sweeps/NAME/report[?group_by=K&points=N]: the report's data.
void ServeReport(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res) {
  ReportOptions o;
  if (req.has_param("group_by")) {
    o.group_by = req.get_param_value("group_by");
  }
  absl::StatusOr<int64_t> points = IntParam(req, "points", 300);
  if (!points.ok()) return SendError(res, points.status());
  if (*points < 2 || *points > 10000) {
    return SendError(
        res, absl::InvalidArgumentError("query parameter 'points' must be in "
                                        "[2, 10000]"));
  }
  o.curve_points = static_cast<int>(*points);
  o.attention_points = std::max(2, o.curve_points / 3);
  o.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  absl::StatusOr<std::string> doc = ReportJson(calls, req.matches[1], o);
  if (!doc.ok()) return SendError(res, doc.status());
  res.set_content(*doc, "application/json");
}

// A route that answers one read call: its answer, or its error.
template <typename Request, typename Response>
void ServeCall(const CoordinatorApi& calls,
               absl::Status (CoordinatorApi::*call)(const Request&, Response*)
                   const,
               const Request& request, httplib::Response& res) {
  Response answer;
  const absl::Status st = (calls.*call)(request, &answer);
  if (!st.ok()) return SendError(res, st);
  SendJson(res, answer);
}

// GET /api: what a client needs before it reads: the API's version, the
// coordinator's build, the database schema's version, and each job kind
// with its keys, their defaults and their types (number, boolean, text;
// none for a kind whose keys are free-form).
nlohmann::json ApiDocument() {
  nlohmann::json kinds = nlohmann::json::array();
  for (JobKind kind : AllJobKinds()) {
    const JobKindDef& def = KindDef(kind);
    nlohmann::json keys = nlohmann::json::array();
    if (def.default_params != nullptr) {
      for (const auto& [key, value] : def.default_params()) {
        double number = 0;
        const char* type = value == "true" || value == "false" ? "boolean"
                           : absl::SimpleAtod(value, &number)  ? "number"
                                                               : "text";
        keys.push_back({{"name", key}, {"default", value}, {"type", type}});
      }
    }
    kinds.push_back({{"name", std::string(def.name)},
                     {"free_form_keys", def.default_params == nullptr},
                     {"keys", keys}});
  }
  return {{"api_version", "v1"},
          {"build", Version()},
          {"schema_version", kStoreSchemaVersion},
          {"kinds", kinds}};
}

// ?fields=job_id,cell,result_json: only those JobInfo fields of each job (a
// client's projection: the rest need not be printed, sent or decoded).
// InvalidArgument naming a field JobInfo does not have.
absl::Status KeepFields(const std::string& fields, v1::ListJobsResponse* page) {
  const google::protobuf::Descriptor* d = v1::JobInfo::descriptor();
  std::vector<const google::protobuf::FieldDescriptor*> drop;
  const std::vector<std::string> keep =
      absl::StrSplit(fields, ',', absl::SkipEmpty());
  for (const std::string& name : keep) {
    if (d->FindFieldByName(name) == nullptr) {
      std::vector<std::string> all;
      for (int i = 0; i < d->field_count(); ++i) {
        all.push_back(d->field(i)->name());
      }
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter 'fields': no field '", name,
                       "'; allowed: ", absl::StrJoin(all, ", ")));
    }
  }
  for (int i = 0; i < d->field_count(); ++i) {
    if (std::find(keep.begin(), keep.end(), d->field(i)->name()) ==
        keep.end()) {
      drop.push_back(d->field(i));
    }
  }
  for (v1::JobInfo& job : *page->mutable_jobs()) {
    const google::protobuf::Reflection* r = job.GetReflection();
    for (const google::protobuf::FieldDescriptor* f : drop) {
      r->ClearField(&job, f);
    }
  }
  return absl::OkStatus();
}

// GET /api/sweeps/NAME/jobs[?state=S&page_size=N&page_token=T&fields=F]: one
// page of ListJobs (its next_page_token says where the next starts) when
// page_size or page_token is given; without them every page in one answer
// (the first release's form).
void ServeJobs(const CoordinatorApi& calls, const httplib::Request& req,
               httplib::Response& res) {
  if (!req.has_param("page_size") && !req.has_param("page_token")) {
    absl::StatusOr<std::vector<v1::JobInfo>> jobs =
        ListAllJobs(calls, req.matches[1], req.get_param_value("state"));
    if (!jobs.ok()) return SendError(res, jobs.status());
    v1::ListJobsResponse all;
    for (v1::JobInfo& j : *jobs) *all.add_jobs() = std::move(j);
    return SendJson(res, all);
  }
  absl::StatusOr<int64_t> size = IntParam(req, "page_size", 0);
  if (!size.ok()) return SendError(res, size.status());
  v1::ListJobsRequest r;
  r.set_sweep(req.matches[1]);
  r.set_state(req.get_param_value("state"));
  r.set_page_size(static_cast<int32_t>(
      std::clamp<int64_t>(*size, -1, std::numeric_limits<int32_t>::max())));
  r.set_page_token(req.get_param_value("page_token"));
  v1::ListJobsResponse page;
  const absl::Status st = calls.ListJobs(r, &page);
  if (!st.ok()) return SendError(res, st);
  if (req.has_param("fields")) {
    absl::Status kept = KeepFields(req.get_param_value("fields"), &page);
    if (!kept.ok()) return SendError(res, kept);
  }
  SendJson(res, page);
}

// GET /api/jobs/JOB/metrics[?names=a,b&step_min=&step_max=&max_points=]:
// every page of the job's points.
void ServeMetrics(const CoordinatorApi& calls, const httplib::Request& req,
                  httplib::Response& res) {
  v1::GetMetricsRequest r;
  r.set_job_id(req.matches[1]);
  if (req.has_param("names")) {
    for (absl::string_view n :
         absl::StrSplit(req.get_param_value("names"), ',', absl::SkipEmpty())) {
      r.add_names(std::string(n));
    }
  }
  for (auto [name, set] :
       {std::pair<const char*, void (v1::GetMetricsRequest::*)(int64_t)>{
            "step_min", &v1::GetMetricsRequest::set_step_min},
        {"step_max", &v1::GetMetricsRequest::set_step_max}}) {
    absl::StatusOr<int64_t> v = IntParam(req, name, 0);
    if (!v.ok()) return SendError(res, v.status());
    (r.*set)(*v);
  }
  absl::StatusOr<int64_t> max_points = IntParam(req, "max_points", 0);
  if (!max_points.ok()) return SendError(res, max_points.status());
  if (*max_points < 0 || *max_points > 10000) {
    return SendError(
        res, absl::InvalidArgumentError("query parameter 'max_points' must be "
                                        "0 (every point) or in [2, 10000]"));
  }
  r.set_max_points(static_cast<int32_t>(*max_points));
  absl::StatusOr<std::vector<v1::MetricPoint>> points =
      GetAllMetrics(calls, std::move(r));
  if (!points.ok()) return SendError(res, points.status());
  v1::GetMetricsResponse all;
  for (v1::MetricPoint& p : *points) *all.add_points() = std::move(p);
  SendJson(res, all);
}

}  // namespace

HttpGateway::HttpGateway(const HttpGatewayOptions& options,
                         std::shared_ptr<grpc::Channel> channel,
                         std::function<std::string()> metrics_text)
    : options_(options),
      auth_(options.token),
      channel_(std::move(channel)),
      metrics_text_(std::move(metrics_text)) {}

HttpGateway::~HttpGateway() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel,
    std::function<std::string()> metrics_text) {
  std::unique_ptr<HttpGateway> g(
      new HttpGateway(options, std::move(channel), std::move(metrics_text)));
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
  g->port_ = port;
  httplib::Server* server = g->server_.get();
  g->thread_ = std::thread([server] { server->listen_after_bind(); });
  return g;
}

bool HttpGateway::Authorized(const httplib::Request& req,
                             httplib::Response& res) {
  std::string authorization = req.get_header_value("Authorization");
  if (authorization.empty()) authorization = CookieAuthorization(req);
  if (auth_.Check(authorization).ok()) return true;
  SendError(res, absl::UnauthenticatedError(
                     "missing or wrong token: send 'Authorization: Bearer "
                     "TOKEN', or open /?token=TOKEN once in a browser"));
  return false;
}

void HttpGateway::ServeIndex(const httplib::Request& req,
                             httplib::Response& res) {
  if (req.has_param("token")) {
    // A browser's login: the token becomes a cookie, the address loses it.
    if (!auth_.Check("Bearer " + req.get_param_value("token")).ok()) {
      SendError(res, absl::UnauthenticatedError("wrong token"));
      return;
    }
    res.set_header(
        "Set-Cookie",
        absl::StrCat(kCookie, "=", Hex(req.get_param_value("token")),
                     "; Path=/; HttpOnly; SameSite=Strict",
                     options_.tls_cert_file.empty() ? "" : "; Secure"));
    res.set_redirect("/", 303);
    return;
  }
  if (Authorized(req, res)) {
    SendPage(res, {"tailsweep: sweeps", "", "/api/sweeps", true});
  }
}

void HttpGateway::Route() {
  httplib::Server& s = *server_;
  // Every route: the token first.
  auto guarded = [this](auto handler) {
    return
        [this, handler](const httplib::Request& req, httplib::Response& res) {
          if (Authorized(req, res)) handler(req, res);
        };
  };
  stub_ = v1::Coordinator::NewStub(channel_);
  const CoordinatorApi calls = CallsWithToken(stub_.get(), options_.token);

  s.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    ServeIndex(req, res);
  });
  s.Get(R"(/sweeps/([^/]+))",
        guarded([](const httplib::Request& req, httplib::Response& res) {
          const std::string sweep = req.matches[1];
          SendPage(res, {absl::StrCat("tailsweep: ", sweep), "",
                         absl::StrCat("/api/sweeps/", PercentEncode(sweep),
                                      "/report"),
                         false});
        }));
  s.Get("/api", guarded([](const httplib::Request&, httplib::Response& res) {
          res.set_content(ApiDocument().dump(), "application/json");
        }));
  s.Get("/api/sweeps",
        guarded([calls](const httplib::Request&, httplib::Response& res) {
          v1::ListSweepsResponse resp;
          const absl::Status st =
              calls.ListSweeps(v1::ListSweepsRequest(), &resp);
          if (!st.ok()) return SendError(res, st);
          SendJson(res, resp);
        }));
  s.Get(R"(/api/sweeps/([^/]+))",
        guarded([calls](const httplib::Request& req, httplib::Response& res) {
          v1::GetSweepRequest r;
          r.set_sweep(req.matches[1]);
          v1::GetSweepResponse resp;
          const absl::Status st = calls.GetSweep(r, &resp);
          if (!st.ok()) return SendError(res, st);
          SendJson(res, resp);
        }));
  s.Get(R"(/api/sweeps/([^/]+)/jobs)",
        guarded([calls](const httplib::Request& req, httplib::Response& res) {
          ServeJobs(calls, req, res);
        }));
  s.Get(R"(/api/sweeps/([^/]+)/status)",
        guarded([calls](const httplib::Request& req, httplib::Response& res) {
          v1::GetSweepStatusRequest r;
          r.set_sweep(req.matches[1]);
          ServeCall(calls, &CoordinatorApi::GetSweepStatus, r, res);
        }));
  s.Get(R"(/api/jobs/([^/]+)/logs)",
        guarded([calls](const httplib::Request& req, httplib::Response& res) {
          v1::GetJobLogRequest r;
          r.set_job(req.matches[1]);
          ServeCall(calls, &CoordinatorApi::GetJobLog, r, res);
        }));
  s.Get("/api/workers",
        guarded([calls](const httplib::Request&, httplib::Response& res) {
          ServeCall(calls, &CoordinatorApi::ListWorkers,
                    v1::ListWorkersRequest(), res);
        }));
  s.Get(R"(/api/sweeps/([^/]+)/results)",
        guarded([calls](const httplib::Request& req, httplib::Response& res) {
          v1::GetResultsRequest r;
          r.set_sweep(req.matches[1]);
          r.set_group_by(req.get_param_value("group_by"));
          r.set_over_seeds(req.get_param_value("over_seeds") == "true");
          absl::StatusOr<v1::GetResultsResponse> all =
              GetAllResults(calls, std::move(r));
          if (!all.ok()) return SendError(res, all.status());
          SendJson(res, *all);
        }));
  s.Get(R"(/api/sweeps/([^/]+)/report)",
        guarded([calls](const httplib::Request& req, httplib::Response& res) {
          ServeReport(calls, req, res);
        }));
  s.Get(R"(/api/jobs/([^/]+)/metrics)",
        guarded([calls](const httplib::Request& req, httplib::Response& res) {
          ServeMetrics(calls, req, res);
        }));
  s.Get("/metrics",
        guarded([this](const httplib::Request&, httplib::Response& res) {
          res.set_content(metrics_text_(), "text/plain; version=0.0.4");
        }));
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
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
