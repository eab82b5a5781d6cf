// The JSON API's routes for what runs made (http_api.h): a job's
// checkpoint, streamed as the coordinator stored it.

#include <memory>
#include <string>

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

}  // namespace tailsweep::http_api
