// The JSON API's route table (http_api.h): what the gateway serves and what
// GET /api/openapi.json describes, from one list.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "coordinator/http_api.h"
#include "core/schema/version.h"

namespace tailsweep::http_api {
namespace {

void ServeApi(const CoordinatorApi&, const httplib::Request&,
              httplib::Response& res) {
  res.set_content(ApiDocument().dump(), "application/json");
}

void ServeOpenApi(const CoordinatorApi&, const httplib::Request&,
                  httplib::Response& res) {
  res.set_content(OpenApiDocument().dump(1), "application/json");
}

void ServeSweeps(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res) {
  ServeCall(calls, req, &CoordinatorApi::ListSweeps, v1::ListSweepsRequest(),
            res);
}

// A call about the path's {sweep}: its answer.
template <typename Request, typename Response,
          absl::Status (CoordinatorApi::*Call)(const Request&, Response*) const>
void ServeSweepCall(const CoordinatorApi& calls, const httplib::Request& req,
                    httplib::Response& res) {
  Request r;
  r.set_sweep(req.matches[1]);
  ServeCall(calls, req, Call, r, res);
}
constexpr ServeFn ServeSweep =
    ServeSweepCall<v1::GetSweepRequest, v1::GetSweepResponse,
                   &CoordinatorApi::GetSweep>;
constexpr ServeFn ServeStatus =
    ServeSweepCall<v1::GetSweepStatusRequest, v1::GetSweepStatusResponse,
                   &CoordinatorApi::GetSweepStatus>;
constexpr ServeFn ServeBoundaries =
    ServeSweepCall<v1::GetBoundariesRequest, v1::GetBoundariesResponse,
                   &CoordinatorApi::GetBoundaries>;
constexpr ServeFn ServeResume =
    ServeSweepCall<v1::ResumeSweepRequest, v1::ResumeSweepResponse,
                   &CoordinatorApi::ResumeSweep>;

void ServeLogs(const CoordinatorApi& calls, const httplib::Request& req,
               httplib::Response& res) {
  v1::GetJobLogRequest r;
  r.set_job(req.matches[1]);
  ServeCall(calls, req, &CoordinatorApi::GetJobLog, r, res);
}

void ServeJob(const CoordinatorApi& calls, const httplib::Request& req,
              httplib::Response& res) {
  v1::GetJobRequest r;
  r.set_job(req.matches[1]);
  ServeCall(calls, req, &CoordinatorApi::GetJob, r, res);
}

void ServeWorkers(const CoordinatorApi& calls, const httplib::Request& req,
                  httplib::Response& res) {
  ServeCall(calls, req, &CoordinatorApi::ListWorkers, v1::ListWorkersRequest(),
            res);
}

}  // namespace

const std::vector<ApiRoute>& ApiRoutes() {
  static const std::vector<ApiRoute> routes = {
      {"GET", "/api", "", "",
       "API, build and schema versions; each job kind's keys with defaults "
       "and types",
       ServeApi},
      {"GET", "/api/openapi.json", "", "", "this API as an OpenAPI 3 document",
       ServeOpenApi},
      {"GET", "/api/sweeps", "ListSweeps", "", "every sweep with its counts",
       ServeSweeps},
      {"POST", "/api/sweeps", "SubmitSweep", "",
       "submit a spec: {spec_yaml, source_name, overrides, dry_run, "
       "spec_dir}",
       ServeSubmit},
      {"GET", "/api/sweeps/{sweep}", "GetSweep", "",
       "the spec as submitted, fixed values, counts, build", ServeSweep},
      {"GET", "/api/sweeps/{sweep}/status", "GetSweepStatus", "",
       "counts by state, early stops, the coordinator's problem", ServeStatus},
      {"GET", "/api/sweeps/{sweep}/jobs", "ListJobs",
       "state,page_size,page_token,fields,updated_since_ms,where.KEY",
       "jobs in grid order: one page with page_size, page_token or a filter "
       "(where.KEY=VALUE, repeatable; updated_since_ms), else all",
       ServeJobs, /*unbounded=*/true},
      {"POST", "/api/sweeps/{sweep}/jobs", "AddJobs", "",
       "add jobs: {cells: [{KEY: VALUE}]}; ids are content hashes",
       ServeAddJobs},
      {"POST", "/api/sweeps/{sweep}/jobs/{job}/cancel", "CancelSweep", "",
       "cancel one job of the sweep", ServeCancel},
      {"POST", "/api/sweeps/{sweep}/cancel", "CancelSweep", "",
       "cancel the sweep's queued and running jobs", ServeCancel},
      {"POST", "/api/sweeps/{sweep}/resume", "ResumeSweep", "",
       "queue failed and cancelled jobs again; ends a fail-fast hold",
       ServeResume},
      {"POST", "/api/sweeps/{sweep}/settings", "UpdateSweep", "",
       "change priority, max_running, paused, tags ({KEY: VALUE}, \"\" "
       "removes) or notes; the settings now",
       ServeSettings},
      {"POST", "/api/sweeps/{sweep}/remove", "RemoveSweep", "",
       "remove the sweep and what is stored of its own jobs: {force, "
       "dry_run}",
       ServeRemove},
      {"GET", "/api/sweeps/{sweep}/results", "GetResults",
       "over_seeds,shape,group_by",
       "the kind's results table (shape=table: it alone; else also the "
       "fields of before 0.2.0)",
       ServeResultRows,
       /*unbounded=*/true},
      {"GET", "/api/sweeps/{sweep}/history", "ListSweepMetrics",
       "names,step_min,step_max,format,page_size,page_token",
       "every job's points, unsampled: CSV (job_id,name,step,value) or "
       "JSON series; all pages streamed, or one with page_size/page_token "
       "(next token in X-Next-Page-Token)",
       ServeHistory, /*unbounded=*/true},
      {"GET", "/api/sweeps/{sweep}/boundaries", "GetBoundaries", "",
       "a boundary search per cell: state, estimate, bracket, probes",
       ServeBoundaries},
      {"GET", "/api/sweeps/{sweep}/report", "", "group_by,points",
       "the report document the dashboard draws", ServeReport,
       /*unbounded=*/true},
      {"GET", "/api/jobs/{job}", "GetJob", "",
       "one job (an id or 6+ of its hex digits): state, params, result",
       ServeJob},
      {"GET", "/api/jobs/{job}/metrics", "GetMetrics",
       "names,step_min,step_max,max_points",
       "one job's points, every page; max_points downsamples each name",
       ServeMetrics},
      {"GET", "/api/jobs/{job}/logs", "GetJobLog", "",
       "state, last error and each attempt's stderr tail (an id or 6+ of "
       "its hex digits)",
       ServeLogs},
      {"GET", "/api/jobs/{job}/checkpoint", "FetchCheckpoint", "step",
       "a stored checkpoint (the newest, or ?step=N) as its file; a tar "
       "for a command job; X-Checkpoint-Step, X-Checkpoint-Sha256 headers",
       ServeCheckpoint},
      {"GET", "/api/jobs/{job}/logs/{stream}", "ReadJobFile", "attempt",
       "an attempt's whole stdout or stderr as text (the newest attempt, or "
       "?attempt=EPOCH); a running attempt's live tail",
       ServeJobLog},
      {"GET", "/api/jobs/{job}/artifacts", "GetJob", "",
       "the job's artifacts: name, bytes, sha256, epoch, url", ServeArtifacts},
      {"GET", "/api/jobs/{job}/artifacts/{path}", "ReadJobFile", "",
       "one artifact's bytes (its type from its name)", ServeArtifact},
      {"GET", "/api/workers", "ListWorkers", "",
       "each worker's last contact and leases held", ServeWorkers},
  };
  return routes;
}

std::string RoutePattern(absl::string_view path) {
  std::string out;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty()) continue;
    const bool variable = part.front() == '{' && part.back() == '}';
    absl::StrAppend(&out, "/",
                    !variable          ? part
                    : part == "{path}" ? "(.+)"
                                       : "([^/]+)");
  }
  return out;
}

nlohmann::json OpenApiDocument() {
  nlohmann::json paths = nlohmann::json::object();
  for (const ApiRoute& r : ApiRoutes()) {
    nlohmann::json params = nlohmann::json::array();
    for (absl::string_view part : absl::StrSplit(r.path, '/')) {
      if (!part.empty() && part.front() == '{') {
        params.push_back(
            {{"name", std::string(part.substr(1, part.size() - 2))},
             {"in", "path"},
             {"required", true},
             {"schema", {{"type", "string"}}}});
      }
    }
    for (absl::string_view q :
         absl::StrSplit(r.query, ',', absl::SkipEmpty())) {
      params.push_back({{"name", std::string(q)},
                        {"in", "query"},
                        {"required", false},
                        {"schema", {{"type", "string"}}}});
    }
    nlohmann::json op = {
        {"summary", r.summary},
        {"parameters", params},
        {"responses",
         {{"200", {{"description", "the call's answer (proto3 JSON)"}}},
          {"default",
           {{"description", "{\"error\": message, \"code\": CODE}"}}}}}};
    if (*r.call != '\0') {
      op["operationId"] = absl::StrCat(r.call, "_", r.method);
      op["description"] =
          absl::StrCat("Mirrors the gRPC call tailsweep.v1.Coordinator/",
                       r.call, " (proto/tailsweep.proto)");
    }
    if (std::string(r.method) == "POST") {
      op["requestBody"] = {
          {"required", true},
          {"content",
           {{"application/json", {{"schema", {{"type", "object"}}}}}}}};
    }
    std::string method = r.method;
    for (char& c : method) c = static_cast<char>(std::tolower(c));
    paths[r.path][method] = std::move(op);
  }
  return {{"openapi", "3.0.3"},
          {"info",
           {{"title", "tailsweep coordinator"},
            {"version", std::string(Version())}}},
          {"components",
           {{"securitySchemes",
             {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
          {"security",
           nlohmann::json::array({{{"bearer", nlohmann::json::array()}}})},
          {"paths", paths}};
}

}  // namespace tailsweep::http_api
