// The JSON API's writes (http_api.h): submit, cancel, resume, add jobs,
// settings, remove.
// Each mirrors its gRPC call; the body is JSON, the answer the call's.

#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "coordinator/http_api.h"
#include "core/number_text.h"

namespace tailsweep::http_api {
namespace {

// The body as a JSON object; an empty body is {}.
absl::StatusOr<nlohmann::json> BodyObject(const httplib::Request& req) {
  if (req.body.empty()) return nlohmann::json::object();
  nlohmann::json doc = nlohmann::json::parse(req.body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("the request body must be a JSON object");
  }
  return doc;
}

// A cell's value as the job schema reads text: strings as they are,
// booleans true/false, numbers as FormatDouble writes them.
absl::StatusOr<std::string> ValueText(const std::string& key,
                                      const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return FormatDouble(v.get<double>());
  return absl::InvalidArgumentError(absl::StrCat(
      "cell key '", key, "': a value is a string, number or boolean (got ",
      v.dump(), ")"));
}

}  // namespace

void ServeSubmit(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res) {
  v1::SubmitSweepRequest r;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (const auto st =
          google::protobuf::util::JsonStringToMessage(req.body, &r, options);
      !st.ok()) {
    return SendError(
        res, absl::InvalidArgumentError(absl::StrCat(
                 "the body must be {\"spec_yaml\": TEXT, \"source_name\", "
                 "\"overrides\": [...], \"dry_run\", \"spec_dir\"}: ",
                 st.message().as_string())));
  }
  ServeCall(calls, req, &CoordinatorApi::SubmitSweep, r, res);
}

void ServeCancel(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res) {
  v1::CancelSweepRequest r;
  r.set_sweep(req.matches[1]);
  if (req.matches.size() > 2) r.set_job(req.matches[2]);
  ServeCall(calls, req, &CoordinatorApi::CancelSweep, r, res);
}

namespace {

// The body as `message`, with the path's sweep; InvalidArgument naming
// `shape` for another body.
template <typename Request>
absl::Status ParseSweepBody(const httplib::Request& req, const char* shape,
                            Request* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (!req.body.empty()) {
    if (const auto st = google::protobuf::util::JsonStringToMessage(
            req.body, message, options);
        !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the body must be ", shape, ": ", st.message().as_string()));
    }
  }
  if (!message->sweep().empty() && message->sweep() != req.matches[1]) {
    return absl::InvalidArgumentError(
        "the body's sweep differs from the path's");
  }
  message->set_sweep(req.matches[1]);
  return absl::OkStatus();
}

}  // namespace

void ServeSettings(const CoordinatorApi& calls, const httplib::Request& req,
                   httplib::Response& res) {
  v1::UpdateSweepRequest r;
  if (absl::Status s = ParseSweepBody(
          req,
          "{\"priority\": N, \"max_running\": N, \"paused\": BOOL, "
          "\"tags\": {KEY: VALUE}, \"notes\": TEXT}, each optional",
          &r);
      !s.ok()) {
    return SendError(res, s);
  }
  ServeCall(calls, req, &CoordinatorApi::UpdateSweep, r, res);
}

void ServeRemove(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res) {
  v1::RemoveSweepRequest r;
  if (absl::Status s =
          ParseSweepBody(req, "{\"force\": BOOL, \"dry_run\": BOOL}", &r);
      !s.ok()) {
    return SendError(res, s);
  }
  ServeCall(calls, req, &CoordinatorApi::RemoveSweep, r, res);
}

void ServeAddJobs(const CoordinatorApi& calls, const httplib::Request& req,
                  httplib::Response& res) {
  absl::StatusOr<nlohmann::json> body = BodyObject(req);
  if (!body.ok()) return SendError(res, body.status());
  const auto cells = body->find("cells");
  if (cells == body->end() || !cells->is_array()) {
    return SendError(res, absl::InvalidArgumentError(
                              "the body must be {\"cells\": [{KEY: VALUE, "
                              "...}, ...]}"));
  }
  v1::AddJobsRequest r;
  r.set_sweep(req.matches[1]);
  for (const nlohmann::json& cell : *cells) {
    if (!cell.is_object()) {
      return SendError(
          res, absl::InvalidArgumentError(absl::StrCat(
                   "each cell is an object {KEY: VALUE}; got ", cell.dump())));
    }
    v1::JobCell* out = r.add_cells();
    for (const auto& [key, value] : cell.items()) {
      absl::StatusOr<std::string> text = ValueText(key, value);
      if (!text.ok()) return SendError(res, text.status());
      v1::KeyValue* kv = out->add_values();
      kv->set_key(key);
      kv->set_value(*text);
    }
  }
  ServeCall(calls, req, &CoordinatorApi::AddJobs, r, res);
}

}  // namespace tailsweep::http_api
