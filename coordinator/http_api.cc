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
#include "core/schema/json_number.h"
#include "core/schema/results_table.h"
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

namespace {

// proto3's JSON spells a non-finite double "NaN", "Infinity", "-Infinity";
// the API spells it as the job protocol does ("nan", "inf", "-inf":
// json_number.h), in every route. `doc` is `m` as proto3 JSON; only its
// double and float fields are respelled (a text that reads "NaN" stays).
void RespellDoubles(const google::protobuf::Message& m, nlohmann::json& doc) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const google::protobuf::Reflection* r = m.GetReflection();
  auto respell = [](nlohmann::json& v) {
    if (!v.is_string()) return;
    const std::string s = v.get<std::string>();
    const double inf = std::numeric_limits<double>::infinity();
    if (s == "NaN") v = JsonNumber(std::nan(""));
    if (s == "Infinity") v = JsonNumber(inf);
    if (s == "-Infinity") v = JsonNumber(-inf);
  };
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const auto it = doc.find(f->name());
    if (it == doc.end() || f->is_map()) continue;
    const auto type = f->cpp_type();
    if (type == FieldDescriptor::CPPTYPE_DOUBLE ||
        type == FieldDescriptor::CPPTYPE_FLOAT) {
      if (!f->is_repeated()) {
        respell(*it);
        continue;
      }
      for (nlohmann::json& v : *it) respell(v);
    } else if (type == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!f->is_repeated()) {
        if (r->HasField(m, f)) RespellDoubles(r->GetMessage(m, f), *it);
        continue;
      }
      for (int k = 0; k < r->FieldSize(m, f) && k < int(it->size()); ++k) {
        RespellDoubles(r->GetRepeatedMessage(m, f, k), (*it)[k]);
      }
    }
  }
}

}  // namespace

absl::StatusOr<std::string> ProtoJson(const google::protobuf::Message& m,
                                      bool legacy) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out, options).ok()) {
    return absl::InternalError("cannot write the answer as JSON");
  }
  // Most answers hold no non-finite double: written as they are.
  if (legacy ||
      (!absl::StrContains(out, "NaN") && !absl::StrContains(out, "Infinity"))) {
    return out;
  }
  nlohmann::json doc =
      nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return out;  // (proto3 writes valid JSON)
  RespellDoubles(m, doc);
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool NumbersForOlderClients(const httplib::Request& req) {
  return absl::StartsWith(req.get_header_value("User-Agent"), "Python-urllib/");
}

void SendJson(const httplib::Request& req, httplib::Response& res,
              const google::protobuf::Message& m) {
  absl::StatusOr<std::string> out = ProtoJson(m, NumbersForOlderClients(req));
  if (!out.ok()) return SendError(res, out.status());
  res.set_content(*std::move(out), "application/json");
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

// GET /api/sweeps/NAME/results[?over_seeds=true&shape=table]: the sweep's
// kind's own table over seeds or per seed: {"kind", "jobs", "done",
// "table": results_table.h's ResultsTableJson}. Without shape=table the
// answer also holds the first release's fields (rows, pivot by ?group_by,
// tails) for clients before 0.2.0: kept one release, then removed.
void ServeResultRows(const CoordinatorApi& calls, const httplib::Request& req,
                     httplib::Response& res) {
  const std::string sweep = req.matches[1];
  const bool over_seeds = req.get_param_value("over_seeds") == "true";
  absl::StatusOr<SweepResults> results =
      GetResultsTable(calls, sweep, over_seeds);
  if (!results.ok()) return SendError(res, results.status());
  nlohmann::json doc = nlohmann::json::object();
  if (req.get_param_value("shape") != "table") {
    v1::GetResultsRequest r;
    r.set_sweep(sweep);
    r.set_group_by(req.get_param_value("group_by"));
    r.set_over_seeds(over_seeds);
    absl::StatusOr<v1::GetResultsResponse> legacy =
        GetAllResults(calls, std::move(r));
    if (!legacy.ok()) return SendError(res, legacy.status());
    // proto3's spelling ("NaN"), as those clients read it.
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    std::string text;
    if (!google::protobuf::util::MessageToJsonString(*legacy, &text, options)
             .ok()) {
      return SendError(res, absl::InternalError("cannot write the answer"));
    }
    doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) doc = nlohmann::json::object();
  }
  doc["kind"] = results->kind;
  doc["jobs"] = results->jobs;
  doc["done"] = results->done;
  doc["table"] = ResultsTableJson(results->table);
  res.set_content(
      doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      "application/json");
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
    return SendJson(req, res, all);
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
  SendJson(req, res, page);
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
  SendJson(req, res, all);
}

}  // namespace tailsweep::http_api
