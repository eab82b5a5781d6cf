// The JSON API's routes for what runs made (http_api.h): a job's
// checkpoint, streamed as the coordinator stored it; its logs and
// artifacts.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "coordinator/http_api.h"

namespace tailsweep::http_api {

void ServeCheckpoint(const CoordinatorApi& calls, const httplib::Request& req,
                     httplib::Response& res) {
  v1::FetchCheckpointRequest r;
  r.set_job(req.matches[1]);
  absl::StatusOr<int64_t> step = IntParam(req, "step", 0);
  if (!step.ok()) return SendError(res, step.status());
  r.set_step(*step);
  std::shared_ptr<ChunkStream> stream = calls.FetchCheckpoint(r);
  v1::CheckpointChunk first;
  if (!stream->Next(&first) || !first.has_header()) {
    absl::Status s = stream->Finish();
    return SendError(
        res, s.ok() ? absl::InternalError("the checkpoint stream had no header")
                    : s);
  }
  const v1::CheckpointHeader& h = first.header();
  res.set_header("Content-Disposition",
                 absl::StrCat("attachment; filename=\"", h.name(), "\""));
  res.set_header("X-Checkpoint-Job", h.job_id());
  res.set_header("X-Checkpoint-Step", absl::StrCat(h.step()));
  res.set_header("X-Checkpoint-Sha256", h.sha256());
  // The length is known: a body cut short (a failure midway) shows as one.
  res.set_content_provider(
      static_cast<size_t>(h.bytes()), "application/octet-stream",
      [stream](size_t, size_t, httplib::DataSink& sink) {
        v1::CheckpointChunk chunk;
        if (!stream->Next(&chunk)) {
          return stream->Finish().ok();
        }
        return sink.write(chunk.data().data(), chunk.data().size());
      });
}

namespace {

// Streams what `r` reads (ReadJobFile) as the response body; the first
// message (the header) is read here, so an error is a proper answer.
void ServeJobFile(const CoordinatorApi& calls, const v1::ReadJobFileRequest& r,
                  const std::string& content_type, httplib::Response& res) {
  std::shared_ptr<JobFileStream> stream = calls.ReadJobFile(r);
  v1::JobFileChunk first;
  if (!stream->Next(&first) || !first.has_header()) {
    absl::Status s = stream->Finish();
    return SendError(res, s.ok() ? absl::InternalError("no header") : s);
  }
  const v1::JobFileHeader& h = first.header();
  res.set_header("X-Job-File-Epoch", absl::StrCat(h.epoch()));
  res.set_header("X-Job-File-Offset", absl::StrCat(h.offset()));
  res.set_header("X-Job-File-Live", h.live() ? "true" : "false");
  res.set_header("X-Job-File-Cut", h.cut() ? "true" : "false");
  res.set_header("X-Job-File-Original-Bytes", absl::StrCat(h.original_bytes()));
  if (h.kind() == "artifact") res.set_header("X-Job-File-Sha256", h.sha256());
  // A read that fails midway cuts the chunked body off (not a short file
  // that looks whole).
  res.set_chunked_content_provider(
      content_type, [stream](size_t, httplib::DataSink& sink) {
        v1::JobFileChunk chunk;
        if (!stream->Next(&chunk)) {
          if (!stream->Finish().ok()) return false;
          sink.done();
          return true;
        }
        return sink.write(chunk.data().data(), chunk.data().size());
      });
}

std::string ContentTypeOf(const std::string& name) {
  const std::string ext = name.substr(name.rfind('.') + 1);
  if (ext == "png") return "image/png";
  if (ext == "jpg" || ext == "jpeg") return "image/jpeg";
  if (ext == "gif") return "image/gif";
  if (ext == "webp") return "image/webp";
  if (ext == "json") return "application/json";
  if (ext == "csv") return "text/csv; charset=utf-8";
  if (ext == "txt" || ext == "log" || ext == "md") {
    return "text/plain; charset=utf-8";
  }
  // (svg and html are served as bytes: a run's file must not run script
  // in the dashboard's origin.)
  return "application/octet-stream";
}

}  // namespace

void ServeJobLog(const CoordinatorApi& calls, const httplib::Request& req,
                 httplib::Response& res) {
  v1::ReadJobFileRequest r;
  r.set_job(req.matches[1]);
  r.set_kind("log");
  r.set_name(req.matches[2]);
  absl::StatusOr<int64_t> attempt = IntParam(req, "attempt", 0);
  if (!attempt.ok()) return SendError(res, attempt.status());
  r.set_epoch(*attempt);
  ServeJobFile(calls, r, "text/plain; charset=utf-8", res);
}

void ServeArtifacts(const CoordinatorApi& calls, const httplib::Request& req,
                    httplib::Response& res) {
  v1::GetJobRequest r;
  r.set_job(req.matches[1]);
  v1::GetJobResponse job;
  if (absl::Status s = calls.GetJob(r, &job); !s.ok()) return SendError(res, s);
  nlohmann::json list = nlohmann::json::array();
  for (const v1::StoredJobFile& f : job.files()) {
    if (f.kind() != "artifact") continue;
    list.push_back({{"name", f.name()},
                    {"bytes", f.bytes()},
                    {"sha256", f.sha256()},
                    {"epoch", f.epoch()},
                    {"url", absl::StrCat("/api/jobs/", job.job().job_id(),
                                         "/artifacts/", f.name())}});
  }
  res.set_content(
      nlohmann::json{{"job_id", job.job().job_id()}, {"artifacts", list}}
          .dump(),
      "application/json");
}

void ServeArtifact(const CoordinatorApi& calls, const httplib::Request& req,
                   httplib::Response& res) {
  v1::ReadJobFileRequest r;
  r.set_job(req.matches[1]);
  r.set_kind("artifact");
  r.set_name(req.matches[2]);
  res.set_header("X-Content-Type-Options", "nosniff");
  ServeJobFile(calls, r, ContentTypeOf(r.name()), res);
}

}  // namespace tailsweep::http_api
