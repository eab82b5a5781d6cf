// Fuzz target: the RPC request validators on arbitrary wire bytes. The
// first byte picks the request type; the rest is parsed as that message
// (as gRPC would) and, when it parses, validated.

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

#include "coordinator/validate.h"

namespace {

// Invalid UTF-8 in a string field is refused by the parser, which also logs
// it: quiet, or the log drowns the run.
const bool kQuiet = [] {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}();

template <typename Request>
void Check(const uint8_t* data, size_t size) {
  Request req;
  if (req.ParseFromArray(data, static_cast<int>(size))) {
    tailsweep::Validate(req).IgnoreError();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  namespace v1 = tailsweep::v1;
  const uint8_t kind = data[0] % 10;
  ++data;
  --size;
  switch (kind) {
    case 0:
      Check<v1::SubmitSweepRequest>(data, size);
      break;
    case 1:
      Check<v1::LeaseJobsRequest>(data, size);
      break;
    case 2:
      Check<v1::HeartbeatRequest>(data, size);
      break;
    case 3:
      Check<v1::ReportMetricsRequest>(data, size);
      break;
    case 4:
      Check<v1::CompleteJobRequest>(data, size);
      break;
    case 5:
      Check<v1::FailJobRequest>(data, size);
      break;
    case 6:
      Check<v1::ReleaseJobRequest>(data, size);
      break;
    case 7:
      Check<v1::DownloadCheckpointRequest>(data, size);
      break;
    case 8: {
      v1::CheckpointHeader header;
      if (header.ParseFromArray(data, static_cast<int>(size))) {
        tailsweep::Validate(header, int64_t{1} << 30).IgnoreError();
      }
      break;
    }
    default: {
      v1::SubmitSweepRequest req;
      if (req.ParseFromArray(data, static_cast<int>(size))) {
        tailsweep::ValidateSweepName(req.source_name()).IgnoreError();
      }
    }
  }
  return 0;
}
