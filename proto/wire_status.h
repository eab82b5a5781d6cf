#ifndef TAILSWEEP_PROTO_WIRE_STATUS_H_
#define TAILSWEEP_PROTO_WIRE_STATUS_H_

// The one place where grpc::Status and absl::Status meet. Codes are the
// same numbers on both sides; the message is kept; a mark
// (status_details.h) travels as the gRPC status's error details and is the
// absl status's kStatusMarkUrl payload. Everything above proto/ speaks
// absl::Status only.

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace tailsweep {

grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_WIRE_STATUS_H_
