#ifndef TAILSWEEP_COORDINATOR_HTTP_API_H_
#define TAILSWEEP_COORDINATOR_HTTP_API_H_

// The JSON API's answers (http_gateway.h lists the routes): each reads
// through the coordinator's own read calls and answers with proto3 JSON
// (ProtoJson: non-finite numbers as "nan", "inf", "-inf"), or {"error":
// message, "code": "NOT_FOUND"} with the HTTP status of the code. The gateway
// routes to these after the token check.

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/coordinator_api.h"

namespace tailsweep::http_api {

void SendError(httplib::Response& res, const absl::Status& s);
// `m` as proto3 JSON (field names as in the proto, every field written),
// but a non-finite double spelled "nan", "inf" or "-inf" as everywhere in
// the API (json_number.h) instead of proto3's "NaN" and "Infinity".
// `legacy`: proto3's own "NaN", "Infinity" (NumbersForOlderClients).
absl::StatusOr<std::string> ProtoJson(const google::protobuf::Message& m,
                                      bool legacy = false);
// Whether `req` comes from tailsweep 0.1.0's Python client (its urllib
// User-Agent), which reads proto3's "NaN" only: it gets that spelling
// until the next release.
bool NumbersForOlderClients(const httplib::Request& req);
void SendJson(const httplib::Request& req, httplib::Response& res,
              const google::protobuf::Message& m);

// A route that answers one read call: its answer, or its error.
template <typename Request, typename Response>
void ServeCall(const CoordinatorApi& calls, const httplib::Request& req,
               absl::Status (CoordinatorApi::*call)(const Request&, Response*)
                   const,
               const Request& request, httplib::Response& res) {
  Response answer;
  const absl::Status st = (calls.*call)(request, &answer);
  if (!st.ok()) return SendError(res, st);
  SendJson(req, res, answer);
}

// One route of the JSON API. ApiRoutes() is the table the gateway serves
// (each after its token check) and GET /api/openapi.json describes: the
// two cannot disagree.
using ServeFn = void (*)(const CoordinatorApi& calls,
                         const httplib::Request& req, httplib::Response& res);
struct ApiRoute {
  const char* method;  // GET, or POST (a write)
  const char* path;    // OpenAPI's form: /api/sweeps/{sweep}/jobs
  const char* call;    // the gRPC call it mirrors; "" for none
  const char* query;   // its query parameters, comma-separated
  const char* summary;
  ServeFn serve;  // req.matches[i]: the path's i-th {variable}
  // Reads a whole sweep in one request (every page): rate-limited per
  // peer. Paged reads are not: each page is bounded.
  bool unbounded = false;
};
const std::vector<ApiRoute>& ApiRoutes();
// httplib's pattern for a route's path: each {variable} is ([^/]+), but
// {path}, which may hold '/' (an artifact's path), is (.+).
std::string RoutePattern(absl::string_view path);
// The routes as an OpenAPI 3 document.
nlohmann::json OpenApiDocument();

// Query parameters: ?NAME=integer (`fallback` when absent; InvalidArgument
// naming it otherwise); ?page_size=; ?names=a,b.
absl::StatusOr<int64_t> IntParam(const httplib::Request& req, const char* name,
                                 int64_t fallback);
absl::StatusOr<int32_t> PageSizeParam(const httplib::Request& req);
std::vector<std::string> NamesParam(const httplib::Request& req);
// What both metric routes select: ?names=a,b&step_min=&step_max=.
template <typename MetricsRequest>
absl::Status SetMetricsSelection(const httplib::Request& req,
                                 MetricsRequest* r) {
  for (std::string& n : NamesParam(req)) r->add_names(std::move(n));
  absl::StatusOr<int64_t> lo = IntParam(req, "step_min", 0);
  if (!lo.ok()) return lo.status();
  absl::StatusOr<int64_t> hi = IntParam(req, "step_max", 0);
  if (!hi.ok()) return hi.status();
  r->set_step_min(*lo);
  r->set_step_max(*hi);
  return absl::OkStatus();
}

// GET /api: versions (API, build, schema) and each kind's job keys with
// their defaults and types.
nlohmann::json ApiDocument();
// GET /api/sweeps/NAME/results[?group_by=K&over_seeds=true]: every page.
void ServeResultRows(const CoordinatorApi& calls, const httplib::Request& req,
                     httplib::Response& res);
// GET /api/sweeps/NAME/report[?group_by=K&points=N]: the report's data.
void ServeReport(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res);
// GET /api/sweeps/NAME/jobs: every job, or one page (?page_size=,
// ?page_token=, ?fields=).
void ServeJobs(const CoordinatorApi& calls, const httplib::Request& req,
               httplib::Response& res);
// GET /api/sweeps/NAME/history[?names=a,b&step_min=&step_max=&format=csv|
// json]: the sweep's points, unsampled (ListSweepMetrics), every page
// streamed; with ?page_size= or ?page_token=, one page and its successor's
// token in the header X-Next-Page-Token (and the JSON body).
void ServeHistory(const CoordinatorApi& calls, const httplib::Request& req,
                  httplib::Response& res);
// GET /api/jobs/JOB/checkpoint[?step=N]: the stored file (a tar for a
// command job), its length known, its step and SHA-256 in the headers
// X-Checkpoint-Step and X-Checkpoint-Sha256 (http_outputs.cc).
void ServeCheckpoint(const CoordinatorApi& calls, const httplib::Request& req,
                     httplib::Response& res);
// GET /api/jobs/JOB/logs/STREAM[?attempt=EPOCH]: the log as text;
// /api/jobs/JOB/artifacts: the list as JSON; /api/jobs/JOB/artifacts/PATH:
// one artifact's bytes (http_outputs.cc).
void ServeJobLog(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res);
void ServeArtifacts(const CoordinatorApi& calls, const httplib::Request& req,
                    httplib::Response& res);
void ServeArtifact(const CoordinatorApi& calls, const httplib::Request& req,
                   httplib::Response& res);
// GET /api/jobs/JOB/metrics: every page of the job's points.
void ServeMetrics(const CoordinatorApi& calls, const httplib::Request& req,
                  httplib::Response& res);

// The writes, each after the token in the Authorization header (a
// browser's cookie never writes): POST /api/sweeps (SubmitSweep's fields as
// JSON), POST /api/sweeps/NAME/cancel, POST /api/sweeps/NAME/jobs/JOB/cancel,
// POST /api/sweeps/NAME/jobs ({"cells": [{KEY: VALUE}]}, AddJobs); resume
// is in the route table (http_routes.cc).
void ServeSubmit(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res);
// POST /api/sweeps/{sweep}/settings: {priority, max_running, paused, tags:
// {KEY: VALUE ("" removes)}, notes}, each optional (UpdateSweep).
void ServeSettings(const CoordinatorApi& calls, const httplib::Request& req,
                   httplib::Response& res);
// POST /api/sweeps/{sweep}/remove: {force, dry_run} (RemoveSweep).
void ServeRemove(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res);
void ServeCancel(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res);
void ServeAddJobs(const CoordinatorApi& calls, const httplib::Request& req,
                  httplib::Response& res);

}  // namespace tailsweep::http_api

#endif  // TAILSWEEP_COORDINATOR_HTTP_API_H_
