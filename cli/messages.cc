#include "cli/messages.h"

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

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

std::string ErrorHeadline(const std::string& error, size_t max_chars) {
  const size_t eol = error.find('\n');
  std::string out = error.substr(0, eol);
  if (eol != std::string::npos) {
    // The last non-empty line of what follows the first.
    std::string last;
    for (absl::string_view line :
         absl::StrSplit(absl::string_view(error).substr(eol + 1), '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty()) last = std::string(line);
    }
    if (!last.empty()) {
      // "exit code 1: Traceback ..." keeps "exit code 1".
      const size_t colon = out.find(": ");
      if (colon != std::string::npos) out.resize(colon);
      absl::StrAppend(&out, ": ", last);
    }
  }
  if (out.size() > max_chars) {
    size_t cut = max_chars > 3 ? max_chars - 3 : 0;
    // Not inside a UTF-8 character.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) {
      --cut;
    }
    out = out.substr(0, cut) + "...";
  }
  return out;
}

void AddFormat(CLI::App& app, std::string* format,
               const std::vector<std::string>& allowed) {
  app.add_option("--format", *format, absl::StrJoin(allowed, ", "))
      ->check(CLI::IsMember(allowed))
      ->capture_default_str();
}

}  // namespace tailsweep::cli
