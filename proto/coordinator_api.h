#ifndef TAILSWEEP_PROTO_COORDINATOR_API_H_
#define TAILSWEEP_PROTO_COORDINATOR_API_H_

// The coordinator's user-facing calls (submit, read, cancel, resume) as the
// CLI, the report and the HTTP gateway make them: one method per RPC over
// any StubInterface (a channel's stub, the gateway's in-process one, a
// generated mock), each with a fresh context (deadline, token) and an
// absl::Status answer (wire_status.h). The messages are the v1 read models
// the tools render; no gRPC type reaches the caller. The paged reads
// (paged_reads.h) are built on these. The worker's calls are
// worker_api.h's.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/client_channel.h"
#include "proto/tailsweep.grpc.pb.h"

namespace tailsweep {

// A server stream being read (FetchCheckpoint, ReadJobFile): Next gives
// each message, the header first, until it returns false; Finish then says
// how the stream ended. It holds its own call (no deadline: a large file
// takes as long as it takes); destroying it cancels the call.
template <typename Chunk>
class ReadStream {
 public:
  virtual ~ReadStream() = default;
  virtual bool Next(Chunk* chunk) = 0;
  virtual absl::Status Finish() = 0;
};
using ChunkStream = ReadStream<v1::CheckpointChunk>;
using JobFileStream = ReadStream<v1::JobFileChunk>;

class CoordinatorApi {
 public:
  using NewContext = std::function<std::unique_ptr<grpc::ClientContext>()>;
  // What a caller adds to a failed answer (e.g. how to reach the
  // coordinator when it is UNAVAILABLE); the identity when empty.
  using Explain = std::function<absl::Status(absl::Status)>;

  // `stub` must outlive the api.
  CoordinatorApi(v1::Coordinator::StubInterface* stub, NewContext context,
                 Explain explain = nullptr);

  absl::Status SubmitSweep(const v1::SubmitSweepRequest& request,
                           v1::SubmitSweepResponse* response) const;
  absl::Status AddJobs(const v1::AddJobsRequest& request,
                       v1::AddJobsResponse* response) const;
  absl::Status GetSweepStatus(const v1::GetSweepStatusRequest& request,
                              v1::GetSweepStatusResponse* response) const;
  absl::Status GetSweep(const v1::GetSweepRequest& request,
                        v1::GetSweepResponse* response) const;
  absl::Status ListSweeps(const v1::ListSweepsRequest& request,
                          v1::ListSweepsResponse* response) const;
  absl::Status ListJobs(const v1::ListJobsRequest& request,
                        v1::ListJobsResponse* response) const;
  absl::Status GetResults(const v1::GetResultsRequest& request,
                          v1::GetResultsResponse* response) const;
  absl::Status GetMetrics(const v1::GetMetricsRequest& request,
                          v1::GetMetricsResponse* response) const;
  absl::Status ListSweepMetrics(const v1::ListSweepMetricsRequest& request,
                                v1::ListSweepMetricsResponse* response) const;
  absl::Status GetBoundaries(const v1::GetBoundariesRequest& request,
                             v1::GetBoundariesResponse* response) const;
  absl::Status GetJobLog(const v1::GetJobLogRequest& request,
                         v1::GetJobLogResponse* response) const;
  absl::Status GetJob(const v1::GetJobRequest& request,
                      v1::GetJobResponse* response) const;
  absl::Status CancelSweep(const v1::CancelSweepRequest& request,
                           v1::CancelSweepResponse* response) const;
  absl::Status ResumeSweep(const v1::ResumeSweepRequest& request,
                           v1::ResumeSweepResponse* response) const;
  absl::Status UpdateSweep(const v1::UpdateSweepRequest& request,
                           v1::UpdateSweepResponse* response) const;
  absl::Status RemoveSweep(const v1::RemoveSweepRequest& request,
                           v1::RemoveSweepResponse* response) const;
  absl::Status ListWorkers(const v1::ListWorkersRequest& request,
                           v1::ListWorkersResponse* response) const;
  std::unique_ptr<ChunkStream> FetchCheckpoint(
      const v1::FetchCheckpointRequest& request) const;
  std::unique_ptr<JobFileStream> ReadJobFile(
      const v1::ReadJobFileRequest& request) const;

 private:
  template <typename Fn>
  absl::Status Call(Fn fn) const;

  v1::Coordinator::StubInterface* stub_;
  NewContext context_;
  Explain explain_;
};

// A CoordinatorApi over a channel of its own (client_channel.h's Connect):
// what a command-line tool holds. Each call gets `deadline` and the token.
class CoordinatorChannel {
 public:
  // InvalidArgument when the token or CA file cannot be read.
  static absl::StatusOr<std::unique_ptr<CoordinatorChannel>> Open(
      const ChannelOptions& options, std::chrono::milliseconds deadline,
      CoordinatorApi::Explain explain = nullptr);

  const CoordinatorApi& api() const { return api_; }

 private:
  CoordinatorChannel(Client client, std::chrono::milliseconds deadline,
                     CoordinatorApi::Explain explain);

  const Client client_;
  const std::unique_ptr<v1::Coordinator::Stub> stub_;
  const CoordinatorApi api_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_COORDINATOR_API_H_
