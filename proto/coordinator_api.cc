#include "proto/coordinator_api.h"

#include <grpcpp/grpcpp.h>

#include <utility>

#include "proto/wire_status.h"

namespace tailsweep {

CoordinatorApi::CoordinatorApi(v1::Coordinator::StubInterface* stub,
                               NewContext context, Explain explain)
    : stub_(stub), context_(std::move(context)), explain_(std::move(explain)) {}

template <typename Fn>
absl::Status CoordinatorApi::Call(Fn fn) const {
  const std::unique_ptr<grpc::ClientContext> ctx = context_();
  absl::Status status = FromGrpc(fn(ctx.get()));
  if (!status.ok() && explain_) status = explain_(std::move(status));
  return status;
}

// One method per RPC, all alike.
#define TS_UNARY(Method)                                                      \
  absl::Status CoordinatorApi::Method(const v1::Method##Request& request,     \
                                      v1::Method##Response* response) const { \
    return Call([&](grpc::ClientContext* ctx) {                               \
      return stub_->Method(ctx, request, response);                           \
    });                                                                       \
  }

namespace {

template <typename Chunk>
class GrpcReadStream final : public ReadStream<Chunk> {
 public:
  using Open =
      std::function<std::unique_ptr<grpc::ClientReaderInterface<Chunk>>(
          grpc::ClientContext*)>;
  GrpcReadStream(std::unique_ptr<grpc::ClientContext> ctx, const Open& open,
                 CoordinatorApi::Explain explain)
      : ctx_(std::move(ctx)), explain_(std::move(explain)) {
    ctx_->set_deadline(gpr_inf_future(GPR_CLOCK_REALTIME));
    reader_ = open(ctx_.get());
  }
  ~GrpcReadStream() override {
    if (!finished_) ctx_->TryCancel();
  }
  bool Next(Chunk* chunk) override { return reader_->Read(chunk); }
  absl::Status Finish() override {
    finished_ = true;
    absl::Status status = FromGrpc(reader_->Finish());
    if (!status.ok() && explain_) status = explain_(std::move(status));
    return status;
  }

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  CoordinatorApi::Explain explain_;
  std::unique_ptr<grpc::ClientReaderInterface<Chunk>> reader_;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<ChunkStream> CoordinatorApi::FetchCheckpoint(
    const v1::FetchCheckpointRequest& request) const {
  return std::make_unique<GrpcReadStream<v1::CheckpointChunk>>(
      context_(),
      [&](grpc::ClientContext* ctx) {
        return stub_->FetchCheckpoint(ctx, request);
      },
      explain_);
}

std::unique_ptr<JobFileStream> CoordinatorApi::ReadJobFile(
    const v1::ReadJobFileRequest& request) const {
  return std::make_unique<GrpcReadStream<v1::JobFileChunk>>(
      context_(),
      [&](grpc::ClientContext* ctx) {
        return stub_->ReadJobFile(ctx, request);
      },
      explain_);
}

TS_UNARY(SubmitSweep)
TS_UNARY(AddJobs)
TS_UNARY(GetSweepStatus)
TS_UNARY(GetSweep)
TS_UNARY(ListSweeps)
TS_UNARY(ListJobs)
TS_UNARY(GetResults)
TS_UNARY(GetMetrics)
TS_UNARY(ListSweepMetrics)
TS_UNARY(GetBoundaries)
TS_UNARY(GetJobLog)
TS_UNARY(GetJob)
TS_UNARY(CancelSweep)
TS_UNARY(ResumeSweep)
TS_UNARY(UpdateSweep)
TS_UNARY(RemoveSweep)
TS_UNARY(ListWorkers)

#undef TS_UNARY

absl::StatusOr<std::unique_ptr<CoordinatorChannel>> CoordinatorChannel::Open(
    const ChannelOptions& options, std::chrono::milliseconds deadline,
    CoordinatorApi::Explain explain) {
  absl::StatusOr<Client> client = Connect(options);
  if (!client.ok()) return client.status();
  return std::unique_ptr<CoordinatorChannel>(
      new CoordinatorChannel(*std::move(client), deadline, std::move(explain)));
}

CoordinatorChannel::CoordinatorChannel(Client client,
                                       std::chrono::milliseconds deadline,
                                       CoordinatorApi::Explain explain)
    : client_(std::move(client)),
      stub_(v1::Coordinator::NewStub(client_.channel)),
      api_(
          stub_.get(), [this, deadline] { return client_.Context(deadline); },
          std::move(explain)) {}

}  // namespace tailsweep
