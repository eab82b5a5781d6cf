#include "coordinator/validate.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/schema/job_state.h"
#include "core/schema/run_outputs.h"
#include "core/schema/status_macros.h"

namespace tailsweep {
namespace {

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// A job id or a unique prefix of one: 6-64 lowercase hex digits.
absl::Status CheckJobPrefix(const std::string& job) {
  if (static_cast<int>(job.size()) < kMinJobPrefix || job.size() > 64 ||
      job.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Invalid(absl::StrCat("job '", job, "' must be ", kMinJobPrefix,
                                "-64 lowercase hex digits of a job id"));
  }
  return absl::OkStatus();
}

// An id field (worker, job, sweep): 1-256 printable ASCII characters, no
// spaces.
absl::Status CheckId(absl::string_view field, const std::string& value) {
  if (value.empty() || value.size() > kMaxIdBytes) {
    return Invalid(absl::StrCat(field, " must be 1-", kMaxIdBytes,
                                " characters (got ", value.size(), ")"));
  }
  for (char c : value) {
    if (c < 0x21 || c > 0x7e) {
      return Invalid(
          absl::StrCat(field, " must be printable ASCII without spaces"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEpoch(int64_t epoch) {
  if (epoch < 1) {
    return Invalid(absl::StrCat("epoch must be >= 1 (got ", epoch, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckLeaseMs(int64_t ms) {
  if (ms < kMinLeaseMs || ms > kMaxLeaseMs) {
    return Invalid(absl::StrCat("lease_ms must be in [", kMinLeaseMs, ", ",
                                kMaxLeaseMs, "] (got ", ms, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckSize(absl::string_view field, const std::string& value,
                       int64_t max) {
  if (static_cast<int64_t>(value.size()) > max) {
    return Invalid(absl::StrCat(field, " must be at most ", max, " bytes (got ",
                                value.size(), ")"));
  }
  return absl::OkStatus();
}

// An attempt's end report's notes of what was not stored.
absl::Status CheckNotKept(
    const google::protobuf::RepeatedPtrField<std::string>& notes) {
  if (notes.size() > kMaxNotKeptNotes) {
    return Invalid(absl::StrCat("at most ", kMaxNotKeptNotes,
                                " not_kept notes (got ", notes.size(), ")"));
  }
  for (const std::string& note : notes) {
    TS_RETURN_IF_ERROR(CheckSize("a not_kept note", note, kMaxNotKeptBytes));
  }
  return absl::OkStatus();
}

// worker_id, job_id and epoch: the fields of every call about a lease.
template <typename Request>
absl::Status CheckLeaseCall(const Request& req) {
  TS_RETURN_IF_ERROR(CheckId("worker_id", req.worker_id()));
  TS_RETURN_IF_ERROR(CheckId("job_id", req.job_id()));
  return CheckEpoch(req.epoch());
}

absl::Status CheckPageSize(int32_t page_size) {
  if (page_size < 0 || page_size > kMaxListPage) {
    return Invalid(absl::StrCat("page_size must be in [0, ", kMaxListPage,
                                "] (got ", page_size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> ParseOffsetToken(const std::string& token) {
  if (token.empty()) return -1;
  int64_t offset = 0;
  if (token.size() > 18 ||
      token.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(token, &offset)) {
    return Invalid("page_token is not one this service gave out");
  }
  return offset;
}

absl::StatusOr<ResultsToken> ParseResultsToken(const std::string& token) {
  ResultsToken out;
  if (token.empty()) return out;
  const size_t dot = token.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 18 ||
      token.find_first_not_of("0123456789.") != std::string::npos ||
      !absl::SimpleAtoi(token.substr(0, dot), &out.snapshot)) {
    return Invalid("page_token is not one this service gave out");
  }
  absl::StatusOr<int64_t> after = ParseOffsetToken(token.substr(dot + 1));
  if (!after.ok() || token.size() == dot + 1) {
    return Invalid("page_token is not one this service gave out");
  }
  out.after = *after;
  return out;
}

absl::Status ValidateSweepName(const std::string& sweep) {
  return CheckId("sweep", sweep);
}

absl::Status Validate(const v1::SubmitSweepRequest& req) {
  if (req.spec_yaml().empty()) return Invalid("spec_yaml is empty");
  TS_RETURN_IF_ERROR(CheckSize("source_name", req.source_name(), 4096));
  if (req.overrides_size() > 1000) {
    return Invalid(absl::StrCat("at most 1000 overrides (got ",
                                req.overrides_size(), ")"));
  }
  for (const std::string& o : req.overrides()) {
    TS_RETURN_IF_ERROR(CheckSize("an override", o, 65536));
  }
  TS_RETURN_IF_ERROR(CheckSize("spec_dir", req.spec_dir(), 4096));
  if (!req.spec_dir().empty() && req.spec_dir().front() != '/') {
    return Invalid(absl::StrCat("spec_dir '", req.spec_dir(),
                                "' must be an absolute path"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const v1::CancelSweepRequest& req) {
  TS_RETURN_IF_ERROR(ValidateSweepName(req.sweep()));
  if (!req.job().empty() &&
      (req.job().size() != 64 ||
       req.job().find_first_not_of("0123456789abcdef") != std::string::npos)) {
    return Invalid(absl::StrCat("job '", req.job(),
                                "' must be a whole job id (64 hex digits)"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const v1::AddJobsRequest& req) {
  TS_RETURN_IF_ERROR(ValidateSweepName(req.sweep()));
  if (req.cells_size() < 1 || req.cells_size() > kMaxAddedCells) {
    return Invalid(absl::StrCat("cells must hold 1 to ", kMaxAddedCells,
                                " cells (got ", req.cells_size(), ")"));
  }
  for (int i = 0; i < req.cells_size(); ++i) {
    const v1::JobCell& cell = req.cells(i);
    if (cell.values_size() > 256) {
      return Invalid(absl::StrCat("cells[", i, "]: at most 256 keys"));
    }
    for (const v1::KeyValue& kv : cell.values()) {
      TS_RETURN_IF_ERROR(
          CheckSize(absl::StrCat("cells[", i, "] key"), kv.key(), 128));
      TS_RETURN_IF_ERROR(
          CheckSize(absl::StrCat("cells[", i, "] value"), kv.value(), 65536));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const v1::LeaseJobsRequest& req) {
  TS_RETURN_IF_ERROR(CheckId("worker_id", req.worker_id()));
  if (req.max_jobs() < 1 || req.max_jobs() > kMaxLeasesPerCall) {
    return Invalid(absl::StrCat("max_jobs must be in [1, ", kMaxLeasesPerCall,
                                "] (got ", req.max_jobs(), ")"));
  }
  if (!req.request_id().empty()) {
    TS_RETURN_IF_ERROR(CheckId("request_id", req.request_id()));
  }
  if (req.free_slots_size() > kMaxPlacementUnits) {
    return Invalid(absl::StrCat("at most ", kMaxPlacementUnits,
                                " free_slots entries (got ",
                                req.free_slots_size(), ")"));
  }
  for (int i = 0; i < req.free_slots_size(); ++i) {
    if (req.free_slots(i) < 0 || req.free_slots(i) > kMaxLeasesPerCall) {
      return Invalid(absl::StrCat("free_slots[", i, "] must be in [0, ",
                                  kMaxLeasesPerCall, "] (got ",
                                  req.free_slots(i), ")"));
    }
  }
  if (req.devices_size() > kMaxPlacementUnits) {
    return Invalid(absl::StrCat("at most ", kMaxPlacementUnits,
                                " devices (got ", req.devices_size(), ")"));
  }
  for (int i = 0; i < req.devices_size(); ++i) {
    if (req.devices(i).empty() || req.devices(i).size() > 64) {
      return Invalid(absl::StrCat("devices[", i, "] must be 1-64 characters"));
    }
  }
  if (req.kinds_size() > 16) {
    return Invalid(
        absl::StrCat("at most 16 kinds (got ", req.kinds_size(), ")"));
  }
  for (int i = 0; i < req.kinds_size(); ++i) {
    if (req.kinds(i).size() > 64) {
      return Invalid(
          absl::StrCat("kinds[", i, "] is longer than 64 characters"));
    }
  }
  return CheckLeaseMs(req.lease_ms());
}

absl::Status Validate(const v1::HeartbeatRequest& req) {
  TS_RETURN_IF_ERROR(CheckLeaseCall(req));
  if (req.output_size() > 2) {
    return Invalid("at most 2 outputs (stdout, stderr) per heartbeat");
  }
  for (const v1::LiveOutput& o : req.output()) {
    if ((o.stream() != "stdout" && o.stream() != "stderr") || o.offset() < 0 ||
        o.data().size() > kMaxLiveOutputBytes) {
      return Invalid(absl::StrCat(
          "a heartbeat's output is stdout or stderr, offset >= 0, at most ",
          kMaxLiveOutputBytes, " bytes"));
    }
  }
  return CheckLeaseMs(req.lease_ms());
}

absl::Status Validate(const v1::ReportMetricsRequest& req) {
  TS_RETURN_IF_ERROR(CheckLeaseCall(req));
  if (req.points_size() > kMaxPointsPerBatch) {
    return Invalid(absl::StrCat("at most ", kMaxPointsPerBatch,
                                " points per batch (got ", req.points_size(),
                                ")"));
  }
  for (const v1::MetricPoint& p : req.points()) {
    if (p.name().empty() ||
        static_cast<int>(p.name().size()) > kMaxMetricNameBytes) {
      return Invalid(absl::StrCat("metric name must be 1-", kMaxMetricNameBytes,
                                  " characters"));
    }
    if (p.step() < 0) {
      return Invalid(absl::StrCat("metric step must be >= 0 (got ", p.step(),
                                  " for ", p.name(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const v1::CompleteJobRequest& req) {
  TS_RETURN_IF_ERROR(CheckLeaseCall(req));
  TS_RETURN_IF_ERROR(CheckNotKept(req.not_kept()));
  if (req.result_json().empty()) return Invalid("result_json is empty");
  TS_RETURN_IF_ERROR(
      CheckSize("stderr_tail", req.stderr_tail(), kMaxStderrTailBytes));
  return CheckSize("result_json", req.result_json(), kMaxResultFileBytes);
}

absl::Status Validate(const v1::FailJobRequest& req) {
  TS_RETURN_IF_ERROR(CheckLeaseCall(req));
  TS_RETURN_IF_ERROR(CheckNotKept(req.not_kept()));
  TS_RETURN_IF_ERROR(
      CheckSize("stderr_tail", req.stderr_tail(), kMaxStderrTailBytes));
  return CheckSize("error", req.error(), kMaxErrorBytes);
}

absl::Status Validate(const v1::ListJobsRequest& req) {
  TS_RETURN_IF_ERROR(ValidateSweepName(req.sweep()));
  TS_RETURN_IF_ERROR(CheckPageSize(req.page_size()));
  TS_RETURN_IF_ERROR(ParseOffsetToken(req.page_token()).status());
  if (req.where_size() > 64) {
    return Invalid(
        absl::StrCat("at most 64 where entries (got ", req.where_size(), ")"));
  }
  for (const v1::KeyValue& kv : req.where()) {
    if (kv.key().empty() || kv.key().size() > 128 ||
        kv.key().find_first_of("\"\\") != std::string::npos) {
      return Invalid(absl::StrCat("where key '", kv.key(),
                                  "' must be a parameter name (1-128 "
                                  "characters, no quotes)"));
    }
    TS_RETURN_IF_ERROR(CheckSize("a where value", kv.value(), 65536));
  }
  if (req.updated_since_ms() < 0) {
    return Invalid("updated_since_ms must be >= 0");
  }
  if (req.state().empty() || ParseJobState(req.state()).has_value()) {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("state '", req.state(), "'; allowed: ",
                              JobStateNames(), ", or empty for all"));
}

absl::Status Validate(const v1::GetResultsRequest& req) {
  TS_RETURN_IF_ERROR(ValidateSweepName(req.sweep()));
  TS_RETURN_IF_ERROR(CheckPageSize(req.page_size()));
  TS_RETURN_IF_ERROR(ParseResultsToken(req.page_token()).status());
  if (req.group_by().empty()) return absl::OkStatus();
  return CheckId("group_by", req.group_by());
}

namespace {

// The names and step range a metrics read asks for.
template <typename Request>
absl::Status CheckMetricsSelection(const Request& req) {
  for (const std::string& name : req.names()) {
    if (name.empty() || static_cast<int>(name.size()) > kMaxMetricNameBytes) {
      return Invalid(absl::StrCat("metric name must be 1-", kMaxMetricNameBytes,
                                  " characters"));
    }
  }
  if (req.names_size() > 1000) return Invalid("at most 1000 metric names");
  if (req.step_min() < 0 || req.step_max() < 0 ||
      (req.step_max() > 0 && req.step_min() > req.step_max())) {
    return Invalid(absl::StrCat("step range [", req.step_min(), ", ",
                                req.step_max(),
                                "] must have 0 <= step_min <= step_max "
                                "(0: no bound)"));
  }
  return absl::OkStatus();
}

// A series' max_points: 0 (every point) or 2..kMaxMetricsPage.
absl::Status CheckMaxPoints(int32_t max_points) {
  if (max_points < 0 || max_points == 1 || max_points > kMaxMetricsPage) {
    return Invalid(absl::StrCat("max_points must be 0 (every point) or in [2, ",
                                kMaxMetricsPage, "] (got ", max_points, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Validate(const v1::ListSweepMetricsRequest& req) {
  TS_RETURN_IF_ERROR(ValidateSweepName(req.sweep()));
  TS_RETURN_IF_ERROR(CheckMetricsSelection(req));
  TS_RETURN_IF_ERROR(CheckMaxPoints(req.max_points()));
  if (req.page_size() < 0 || req.page_size() > kMaxSweepMetricsPage) {
    return Invalid(absl::StrCat("page_size must be in [0, ",
                                kMaxSweepMetricsPage, "] (got ",
                                req.page_size(), ")"));
  }
  return CheckSize("page_token", req.page_token(), 2 * kMaxMetricNameBytes);
}

absl::Status Validate(const v1::GetMetricsRequest& req) {
  TS_RETURN_IF_ERROR(CheckId("job_id", req.job_id()));
  TS_RETURN_IF_ERROR(CheckMetricsSelection(req));
  if (req.page_size() < 0 || req.page_size() > kMaxMetricsPage) {
    return Invalid(absl::StrCat("page_size must be in [0, ", kMaxMetricsPage,
                                "] (got ", req.page_size(), ")"));
  }
  TS_RETURN_IF_ERROR(CheckMaxPoints(req.max_points()));
  return CheckSize("page_token", req.page_token(), 2 * kMaxMetricNameBytes);
}

absl::Status Validate(const v1::GetJobLogRequest& req) {
  return CheckJobPrefix(req.job());
}

absl::Status Validate(const v1::GetJobRequest& req) {
  return CheckJobPrefix(req.job());
}

absl::Status Validate(const v1::ReleaseJobRequest& req) {
  TS_RETURN_IF_ERROR(CheckLeaseCall(req));
  TS_RETURN_IF_ERROR(CheckNotKept(req.not_kept()));
  return CheckSize("reason", req.reason(), kMaxReasonBytes);
}

absl::Status Validate(const v1::DownloadCheckpointRequest& req) {
  return CheckLeaseCall(req);
}

absl::Status Validate(const v1::JobFileHeader& h) { return CheckLeaseCall(h); }

absl::Status Validate(const v1::ReadJobFileRequest& req) {
  TS_RETURN_IF_ERROR(CheckJobPrefix(req.job()));
  if (req.kind() != "log" && req.kind() != "artifact") {
    return Invalid(
        absl::StrCat("kind '", req.kind(), "': allowed: log, artifact"));
  }
  if (req.epoch() < 0 || req.offset() < 0) {
    return Invalid("epoch and offset are >= 0");
  }
  return CheckSize("name", req.name(), 1024);
}

absl::Status Validate(const v1::FetchCheckpointRequest& req) {
  TS_RETURN_IF_ERROR(CheckJobPrefix(req.job()));
  if (req.step() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("step ", req.step(),
                     ": allowed: 0 (the newest) or a "
                     "step the job has a checkpoint of"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const v1::CheckpointHeader& h, int64_t max_bytes) {
  TS_RETURN_IF_ERROR(CheckLeaseCall(h));
  if (h.step() < 1) {
    return Invalid(absl::StrCat("step must be >= 1 (got ", h.step(), ")"));
  }
  if (h.bytes() < 1) {
    return Invalid(absl::StrCat("bytes must be >= 1 (got ", h.bytes(), ")"));
  }
  if (h.bytes() > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "checkpoint of ", h.bytes(), " bytes is over the limit of ", max_bytes,
        " (--max-checkpoint-bytes)"));
  }
  if (h.sha256().size() != 64 ||
      h.sha256().find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Invalid("sha256 must be 64 lowercase hex digits");
  }
  return CheckSize("name", h.name(), 64);
}

}  // namespace tailsweep
