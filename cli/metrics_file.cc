#include "cli/metrics_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/schema/file_util.h"
#include "core/schema/metrics_line.h"

namespace tailsweep::cli {

MetricsFile::~MetricsFile() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status MetricsFile::Open(int64_t start_step) {
  // Replace the file atomically, so a crash here loses nothing kept.
  if (absl::Status s = KeepMetricsUpTo(path_, start_step); !s.ok()) return s;
  file_ = std::fopen(path_.c_str(), "a");
  if (file_ == nullptr) {
    return absl::InternalError(
        absl::StrCat(path_, ": cannot open for writing"));
  }
  return absl::OkStatus();
}

absl::Status MetricsFile::Write(const StepMetrics& metrics) {
  const std::string line = MetricsLine(metrics) + "\n";
  if (file_ == nullptr || std::fputs(line.c_str(), file_) < 0 ||
      std::fflush(file_) != 0) {
    return absl::InternalError(absl::StrCat(path_, ": write failed"));
  }
  return absl::OkStatus();
}

}  // namespace tailsweep::cli
