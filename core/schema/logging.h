#ifndef TAILSWEEP_CORE_SCHEMA_LOGGING_H_
#define TAILSWEEP_CORE_SCHEMA_LOGGING_H_

// How the daemons log: spdlog to stderr, one line per event with a
// millisecond timestamp, the daemon's name and the level:
//   [2026-12-01 16:33:46.123] [worker] [info] job 3f2a9c1e0b7d epoch 2 leased
// The level comes from --log-level when given, else from SPDLOG_LEVEL
// (spdlog's own variable, e.g. SPDLOG_LEVEL=debug), else info. Events about
// a job name it by JobTag (short id and epoch).

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace tailsweep {

inline constexpr char kLogLevels[] =
    "trace, debug, info, warn, error, critical, off";

// Makes the default logger `name`'s. InvalidArgument for a level that is
// not one of kLogLevels (nothing changes then).
absl::Status InitLogging(const std::string& name, const std::string& level);

// "job 3f2a9c1e0b7d epoch 2": the first 12 characters of the id.
std::string JobTag(const std::string& job_id, int64_t epoch);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_LOGGING_H_
