#include "cli/metrics_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tailsweep::cli {

nlohmann::json MetricsJson(const StepMetrics& m) {
  return {{"step", m.step},
          {"loss", m.loss},
          {"lr", m.lr},
          {"grad_norm", m.grad_norm},
          {"spread_ratio", m.spread_ratio},
          {"step_seconds", m.step_seconds},
          {"attention_entropy", m.attention_entropy},
          {"attention_max_weight", m.attention_max_weight}};
}

MetricsFile::~MetricsFile() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status MetricsFile::Open(int64_t start_step) {
  std::string kept;
  if (start_step > 0) {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      const nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
      // A torn last line (a crash mid-write) is dropped with the rest.
      if (doc.is_discarded() || !doc.contains("step")) break;
      if (doc["step"].get<int64_t>() > start_step) break;
      absl::StrAppend(&kept, line, "\n");
    }
  }
  // Replace the file atomically, so a crash here loses nothing kept.
  const std::string temp = path_ + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << kept;
    if (!out.flush()) {
      return absl::InternalError(absl::StrCat(temp, ": write failed"));
    }
  }
  if (std::rename(temp.c_str(), path_.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", temp));
  }
  file_ = std::fopen(path_.c_str(), "a");
  if (file_ == nullptr) {
    return absl::InternalError(
        absl::StrCat(path_, ": cannot open for writing"));
  }
  return absl::OkStatus();
}

absl::Status MetricsFile::Write(const StepMetrics& metrics) {
  const std::string line = MetricsJson(metrics).dump() + "\n";
  if (file_ == nullptr || std::fputs(line.c_str(), file_) < 0 ||
      std::fflush(file_) != 0) {
    return absl::InternalError(absl::StrCat(path_, ": write failed"));
  }
  return absl::OkStatus();
}

}  // namespace tailsweep::cli
