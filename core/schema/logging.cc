#include "core/schema/logging.h"

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace tailsweep {

absl::Status InitLogging(const std::string& name, const std::string& level) {
  spdlog::level::level_enum parsed = spdlog::level::info;
  if (!level.empty()) {
    parsed = spdlog::level::from_str(level);
    // from_str answers off for anything it does not know.
    if (parsed == spdlog::level::off && level != "off") {
      return absl::InvalidArgumentError(
          absl::StrCat("--log-level '", level, "'; allowed: ", kLogLevels));
    }
  }
  auto logger = spdlog::stderr_logger_mt(name);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL
  if (!level.empty()) spdlog::set_level(parsed);
  return absl::OkStatus();
}

std::string JobTag(const std::string& job_id, int64_t epoch) {
  return absl::StrCat("job ", job_id.substr(0, 12), " epoch ", epoch);
}

}  // namespace tailsweep
