#ifndef TAILSWEEP_PROTO_STATUS_DETAILS_H_
#define TAILSWEEP_PROTO_STATUS_DETAILS_H_

// The marks the coordinator puts in a status's details, where a code alone
// would be ambiguous. Header-only; both ends include it.
//
// A cancelled job. How the coordinator tells a job's holder that the user
// cancelled the job:
// CANCELLED carrying kJobCancelledDetail in the status details
// (proto/tailsweep.proto's conventions). gRPC itself answers CANCELLED,
// without it, for a call cut off in transport (a coordinator shutting down
// with calls in flight, a proxy resetting a stream): that says nothing about
// the job, and the worker retries such a call as if the coordinator were
// unreachable instead of stopping the job.
//
// A refusal for now. UNAVAILABLE carrying kStorageRefusedDetail: the
// coordinator answered, but cannot write (a full disk; it retries by itself,
// coordinator/batch_writer.h). Retried like an unreachable coordinator;
// told apart only to say so.

#include <grpcpp/grpcpp.h>

#include <string>

namespace tailsweep {

inline constexpr char kJobCancelledDetail[] = "tailsweep.v1.job_cancelled";

// The coordinator's answer for a cancelled job.
inline grpc::Status JobCancelledStatus(std::string message) {
  return grpc::Status(grpc::StatusCode::CANCELLED, std::move(message),
                      kJobCancelledDetail);
}

// True for the coordinator's answer, false for any other status (a CANCELLED
// from the transport included).
inline bool IsJobCancelled(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::CANCELLED &&
         status.error_details() == kJobCancelledDetail;
}

inline constexpr char kStorageRefusedDetail[] = "tailsweep.v1.storage_refused";

inline grpc::Status StorageRefusedStatus(std::string message) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::move(message),
                      kStorageRefusedDetail);
}

inline bool IsStorageRefused(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         status.error_details() == kStorageRefusedDetail;
}

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_STATUS_DETAILS_H_
