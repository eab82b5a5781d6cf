#ifndef TAILSWEEP_CLI_MESSAGES_H_
#define TAILSWEEP_CLI_MESSAGES_H_

// Text and JSON forms of the API's small shared pieces, as every service
// command prints them, and the --format option of the reading commands.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_app.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep::cli {

// "key=value key=value" of a cell.
std::string CellText(
    const google::protobuf::RepeatedPtrField<v1::KeyValue>& cell);
// {"key": "value", ...} of a cell.
nlohmann::json CellJson(
    const google::protobuf::RepeatedPtrField<v1::KeyValue>& cell);
// A job's last_error on one line: its first line's reason ("exit code 1")
// with the last non-empty line of the stderr tail that follows it (where a
// Python traceback or a shell says what went wrong), cut to `max_chars`.
std::string ErrorHeadline(const std::string& error, size_t max_chars = 100);
// --format, one of `allowed` (the first is the default the caller set).
void AddFormat(CLI::App& app, std::string* format,
               const std::vector<std::string>& allowed);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_MESSAGES_H_
