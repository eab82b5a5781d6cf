#ifndef TAILSWEEP_COORDINATOR_SERVICE_H_
#define TAILSWEEP_COORDINATOR_SERVICE_H_

// The gRPC services of the coordinator: Coordinator (proto/tailsweep.proto)
// and grpc.health.v1.Health. Handlers that change state live in
// service.cc, those that only read in service_reads.cc. Each call is
// authenticated (when a token is set), its fields validated
// (coordinator/validate.h), then delegated to the Store; statuses are converted
// at this edge only. No business logic lives here. Thread-safe (the Store is).

#include <grpcpp/grpcpp.h>

#include "coordinator/auth.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/job_file_store.h"
#include "coordinator/notices.h"
#include "coordinator/read_lane.h"
#include "coordinator/result_pages.h"
#include "coordinator/search_driver.h"
#include "coordinator/stop_rules.h"
#include "coordinator/store.h"
#include "coordinator/telemetry.h"
#include "proto/health.grpc.pb.h"
#include "proto/tailsweep.grpc.pb.h"
#include "proto/wire_status.h"

namespace tailsweep {

// The answer for a status from the store: a cancelled job and a write
// refused for now are marked (proto/status_details.h), then it goes on the
// wire as proto/wire_status.h says.
grpc::Status Answer(const absl::Status& status);

// A sweep's settings and hours on the wire.
void ToProto(const SweepSettings& s, v1::SweepSettings* out);
void ToProto(const SweepHours& h, v1::SweepHours* out);
// The worker's part of a sweep's outputs (notify stays here).
void ToProto(const RunOutputs& o, v1::JobOutputs* out);

// The first lines of every handler: the token, then the fields.
#define TS_GRPC_RETURN_IF_ERROR(expr)                          \
  do {                                                         \
    if (absl::Status s_ = (expr); !s_.ok()) return Answer(s_); \
  } while (0)
// `method`: the gRPC method's name, whose access auth.h's AccessOf says.
#define TS_AUTHORIZE(ctx, method) \
  TS_GRPC_RETURN_IF_ERROR(Authorize(*auth_, telemetry_, ctx, method))

struct ServiceOptions {
  // Checkpoints larger than this are refused (RESOURCE_EXHAUSTED).
  int64_t max_checkpoint_bytes = int64_t{4} << 30;
  // Logs and artifacts (UploadJobFile), under the checkpoints' data
  // directory.
  JobFileLimits job_files;
  // Told of jobs' and sweeps' events (notices.h) when set.
  Notices* notices = nullptr;
  // Who may call what (auth.h); null: no authentication.
  std::shared_ptr<const TokenAuth> auth;
  // Counts leases and points when set (coordinator/telemetry.h).
  Telemetry* telemetry = nullptr;
  // The bulk reads' lane (read_lane.h): its threads (0: none, the reads
  // run on gRPC's threads) and how much lower their priority is.
  int read_lane_threads = 1;
  int read_lane_nice = 0;
  // How long a lane thread holds a read back while workers' calls are in
  // flight (0: not at all).
  std::chrono::milliseconds read_lane_max_yield{20};
};

class CoordinatorService final : public v1::Coordinator::Service {
 public:
  CoordinatorService(Store* store, CheckpointStore* checkpoints,
                     ServiceOptions options = {})
      : store_(store),
        checkpoints_(checkpoints),
        files_(store, checkpoints->data_dir(), options.job_files),
        max_checkpoint_bytes_(options.max_checkpoint_bytes),
        auth_(options.auth ? options.auth : std::make_shared<TokenAuth>()),
        telemetry_(options.telemetry),
        notices_(options.notices),
        search_(store),
        stop_rules_(store),
        reads_(options.read_lane_threads, options.read_lane_nice,
               options.read_lane_max_yield) {}

  // Boundary sweeps' later rounds (search_driver.h): the service advances
  // them as results come in; call search().Start() once after a restart.
  SearchDriver& search() { return search_; }

  grpc::Status SubmitSweep(grpc::ServerContext*, const v1::SubmitSweepRequest*,
                           v1::SubmitSweepResponse*) override;
  grpc::Status AddJobs(grpc::ServerContext*, const v1::AddJobsRequest*,
                       v1::AddJobsResponse*) override;
  grpc::Status LeaseJobs(grpc::ServerContext*, const v1::LeaseJobsRequest*,
                         v1::LeaseJobsResponse*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse*) override;
  grpc::Status ReportMetrics(grpc::ServerContext*,
                             const v1::ReportMetricsRequest*,
                             v1::ReportMetricsResponse*) override;
  grpc::Status CompleteJob(grpc::ServerContext*, const v1::CompleteJobRequest*,
                           v1::CompleteJobResponse*) override;
  grpc::Status FailJob(grpc::ServerContext*, const v1::FailJobRequest*,
                       v1::FailJobResponse*) override;
  grpc::Status ReleaseJob(grpc::ServerContext*, const v1::ReleaseJobRequest*,
                          v1::ReleaseJobResponse*) override;
  grpc::Status GetSweepStatus(grpc::ServerContext*,
                              const v1::GetSweepStatusRequest*,
                              v1::GetSweepStatusResponse*) override;
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest*,
                        v1::ListJobsResponse*) override;
  grpc::Status GetResults(grpc::ServerContext*, const v1::GetResultsRequest*,
                          v1::GetResultsResponse*) override;
  grpc::Status CancelSweep(grpc::ServerContext*, const v1::CancelSweepRequest*,
                           v1::CancelSweepResponse*) override;
  grpc::Status ResumeSweep(grpc::ServerContext*, const v1::ResumeSweepRequest*,
                           v1::ResumeSweepResponse*) override;
  grpc::Status ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*,
                           v1::ListWorkersResponse*) override;
  grpc::Status UploadCheckpoint(grpc::ServerContext*,
                                grpc::ServerReader<v1::CheckpointChunk>*,
                                v1::UploadCheckpointResponse*) override;
  grpc::Status DownloadCheckpoint(
      grpc::ServerContext*, const v1::DownloadCheckpointRequest*,
      grpc::ServerWriter<v1::CheckpointChunk>*) override;
  grpc::Status FetchCheckpoint(
      grpc::ServerContext*, const v1::FetchCheckpointRequest*,
      grpc::ServerWriter<v1::CheckpointChunk>*) override;
  grpc::Status UploadJobFile(grpc::ServerContext*,
                             grpc::ServerReader<v1::JobFileChunk>*,
                             v1::UploadJobFileResponse*) override;
  grpc::Status ReadJobFile(grpc::ServerContext*, const v1::ReadJobFileRequest*,
                           grpc::ServerWriter<v1::JobFileChunk>*) override;
  grpc::Status ListSweeps(grpc::ServerContext*, const v1::ListSweepsRequest*,
                          v1::ListSweepsResponse*) override;
  grpc::Status GetMetrics(grpc::ServerContext*, const v1::GetMetricsRequest*,
                          v1::GetMetricsResponse*) override;
  grpc::Status ListSweepMetrics(grpc::ServerContext*,
                                const v1::ListSweepMetricsRequest*,
                                v1::ListSweepMetricsResponse*) override;
  grpc::Status GetJobLog(grpc::ServerContext*, const v1::GetJobLogRequest*,
                         v1::GetJobLogResponse*) override;
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest*,
                      v1::GetJobResponse*) override;
  grpc::Status GetSweep(grpc::ServerContext*, const v1::GetSweepRequest*,
                        v1::GetSweepResponse*) override;
  grpc::Status GetBoundaries(grpc::ServerContext*,
                             const v1::GetBoundariesRequest*,
                             v1::GetBoundariesResponse*) override;
  grpc::Status UpdateSweep(grpc::ServerContext*, const v1::UpdateSweepRequest*,
                           v1::UpdateSweepResponse*) override;
  grpc::Status RemoveSweep(grpc::ServerContext*, const v1::RemoveSweepRequest*,
                           v1::RemoveSweepResponse*) override;

 private:
  // The bulk reads' bodies, run in reads_ by the calls of the same name
  // (service_reads.cc).
  grpc::Status ListJobsInLane(grpc::ServerContext*, const v1::ListJobsRequest*,
                              v1::ListJobsResponse*);
  grpc::Status GetResultsInLane(grpc::ServerContext*,
                                const v1::GetResultsRequest*,
                                v1::GetResultsResponse*);
  grpc::Status GetMetricsInLane(grpc::ServerContext*,
                                const v1::GetMetricsRequest*,
                                v1::GetMetricsResponse*);
  grpc::Status ListSweepMetricsInLane(grpc::ServerContext*,
                                      const v1::ListSweepMetricsRequest*,
                                      v1::ListSweepMetricsResponse*);
  // GetMetrics with max_points: whole names, each downsampled.
  absl::Status DownsampledMetrics(Store::MetricsQuery q, int max_points,
                                  v1::GetMetricsResponse* resp);
  // ListSweepMetrics with max_points: whole jobs, each as above.
  absl::Status DownsampledSweepMetrics(const v1::ListSweepMetricsRequest& req,
                                       v1::ListSweepMetricsResponse* resp);

  Store* store_;
  CheckpointStore* checkpoints_;
  JobFileStore files_;  // logs and artifacts
  int64_t max_checkpoint_bytes_;
  std::shared_ptr<const TokenAuth> auth_;
  Telemetry* telemetry_;
  Notices* notices_;  // may be null
  SearchDriver search_;
  StopRules stop_rules_;      // the sweeps' stop rules (stop: asha)
  ResultPages result_pages_;  // GetResults snapshots
  ReadLane reads_;            // last: its threads use the rest
};

// grpc.health.v1.Health: SERVING while the store writes, NOT_SERVING while
// it cannot (Store::Healthy), with the reason in the trailing metadata
// `kHealthReasonKey`. Asks for the token like every call.
inline constexpr char kHealthReasonKey[] = "tailsweep-reason";
class HealthService final : public grpc::health::v1::Health::Service {
 public:
  // `auth` null: no authentication; `telemetry` (may be null) counts
  // refusals.
  HealthService(Store* store, std::shared_ptr<const TokenAuth> auth,
                Telemetry* telemetry = nullptr)
      : store_(store),
        auth_(auth ? std::move(auth) : std::make_shared<TokenAuth>()),
        telemetry_(telemetry) {}
  grpc::Status Check(grpc::ServerContext*,
                     const grpc::health::v1::HealthCheckRequest*,
                     grpc::health::v1::HealthCheckResponse*) override;

 private:
  Store* store_;
  std::shared_ptr<const TokenAuth> auth_;
  Telemetry* telemetry_;
};

// OK when the call's token may call `method` (AccessOf); else the refusal,
// counted in `telemetry` (may be null) by role and method.
absl::Status Authorize(const TokenAuth& auth, Telemetry* telemetry,
                       const grpc::ServerContext* ctx,
                       absl::string_view method);

// The metadata "authorization" of a call, "" when absent.
std::string Authorization(const grpc::ServerContext* ctx);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_SERVICE_H_
