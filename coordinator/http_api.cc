#include "coordinator/http_api.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "coordinator/store.h"
#include "core/schema/job_kinds.h"
#include "core/schema/version.h"
#include "proto/paged_reads.h"
#include "report/report_data.h"

namespace tailsweep::http_api {
namespace {

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
    case absl::StatusCode::kResourceExhausted:
      return 429;
    default:
      return 500;
  }
}

}  // namespace

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

absl::StatusOr<int32_t> PageSizeParam(const httplib::Request& req) {
  absl::StatusOr<int64_t> size = IntParam(req, "page_size", 0);
  if (!size.ok()) return size.status();
  // Out of range stays out of range: the call's check says what is allowed.
  return static_cast<int32_t>(
      std::clamp<int64_t>(*size, -1, std::numeric_limits<int32_t>::max()));
}

std::vector<std::string> NamesParam(const httplib::Request& req) {
  return absl::StrSplit(req.get_param_value("names"), ',', absl::SkipEmpty());
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

void ServeResultRows(const CoordinatorApi& calls, const httplib::Request& req,
                     httplib::Response& res) {
  v1::GetResultsRequest r;
  r.set_sweep(req.matches[1]);
  r.set_group_by(req.get_param_value("group_by"));
  r.set_over_seeds(req.get_param_value("over_seeds") == "true");
  absl::StatusOr<v1::GetResultsResponse> all =
      GetAllResults(calls, std::move(r));
  if (!all.ok()) return SendError(res, all.status());
  SendJson(res, *all);
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

namespace {

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

}  // namespace

// GET /api/sweeps/NAME/jobs[?state=S&page_size=N&page_token=T&fields=F]: one
// page of ListJobs (its next_page_token says where the next starts) when
// page_size or page_token is given; without them every page in one answer
// (the first release's form).
void ServeJobs(const CoordinatorApi& calls, const httplib::Request& req,
               httplib::Response& res) {
  bool filtered = req.has_param("updated_since_ms");
  for (const auto& [name, value] : req.params) {
    filtered = filtered || absl::StartsWith(name, "where.");
  }
  if (!req.has_param("page_size") && !req.has_param("page_token") &&
      !filtered) {
    absl::StatusOr<std::vector<v1::JobInfo>> jobs =
        ListAllJobs(calls, req.matches[1], req.get_param_value("state"));
    if (!jobs.ok()) return SendError(res, jobs.status());
    v1::ListJobsResponse all;
    for (v1::JobInfo& j : *jobs) *all.add_jobs() = std::move(j);
    return SendJson(res, all);
  }
  absl::StatusOr<int32_t> size = PageSizeParam(req);
  if (!size.ok()) return SendError(res, size.status());
  absl::StatusOr<int64_t> since = IntParam(req, "updated_since_ms", 0);
  if (!since.ok()) return SendError(res, since.status());
  v1::ListJobsRequest r;
  r.set_sweep(req.matches[1]);
  r.set_state(req.get_param_value("state"));
  r.set_updated_since_ms(*since);
  for (const auto& [name, value] : req.params) {  // where.KEY=VALUE
    absl::string_view key = name;
    if (absl::ConsumePrefix(&key, "where.")) {
      v1::KeyValue* kv = r.add_where();
      kv->set_key(std::string(key));
      kv->set_value(value);
    }
  }
  r.set_page_size(*size);
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
  if (absl::Status s = SetMetricsSelection(req, &r); !s.ok()) {
    return SendError(res, s);
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

}  // namespace tailsweep::http_api
