#include "cli/messages.h"

#include <CLI/CLI.hpp>

#include "absl/strings/str_join.h"

namespace tailsweep::cli {

using nlohmann::json;

std::string CellText(
    const google::protobuf::RepeatedPtrField<v1::KeyValue>& cell) {
  std::vector<std::string> parts;
  for (const auto& kv : cell) parts.push_back(kv.key() + "=" + kv.value());
  return absl::StrJoin(parts, " ");
}

json CellJson(const google::protobuf::RepeatedPtrField<v1::KeyValue>& cell) {
  json out = json::object();
  for (const auto& kv : cell) out[kv.key()] = kv.value();
  return out;
}

void AddFormat(CLI::App& app, std::string* format,
               const std::vector<std::string>& allowed) {
  app.add_option("--format", *format, absl::StrJoin(allowed, ", "))
      ->check(CLI::IsMember(allowed))
      ->capture_default_str();
}

}  // namespace tailsweep::cli
