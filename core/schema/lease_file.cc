#include "core/schema/lease_file.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "core/schema/job_protocol.h"

namespace tailsweep {

absl::Status WriteLeaseFile(const std::string& dir, int64_t run_until_ms) {
  const std::string path = JobPath(dir, kLeaseFileName);
  const std::string temp = TempPathFor(path);
  {
    std::ofstream out(temp, std::ios::trunc);
    out << run_until_ms << "\n";
    if (!out.flush()) {
      return absl::InternalError(absl::StrCat(temp, ": cannot write"));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return absl::InternalError(
        absl::StrCat(path, ": cannot rename into place"));
  }
  return absl::OkStatus();
}

std::optional<int64_t> ReadLeaseFile(const std::string& dir) {
  absl::StatusOr<std::string> text = ReadFile(JobPath(dir, kLeaseFileName));
  if (!text.ok()) return std::nullopt;
  int64_t ms = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &ms)) {
    return std::nullopt;
  }
  return ms;
}

bool LeaseWatchdog::Expired() {
  const int64_t now = clock_->SteadyMs();
  if (now >= next_read_ms_) {
    until_ = ReadLeaseFile(dir_);
    next_read_ms_ = now + kRereadMs;
  }
  return until_.has_value() && now >= *until_;
}

}  // namespace tailsweep
