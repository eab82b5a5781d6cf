#include "proto/wire_status.h"

#include <optional>
#include <string>

#include "proto/status_details.h"

namespace tailsweep {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const std::optional<std::string> mark = MarkOf(status);
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()), mark.value_or(""));
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()),
                   status.error_message());
  if (!status.error_details().empty()) {
    out = Marked(std::move(out), status.error_details());
  }
  return out;
}

}  // namespace tailsweep
