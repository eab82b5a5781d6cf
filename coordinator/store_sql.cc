#include "coordinator/store_sql.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tailsweep {
namespace store_assets {
extern const std::string_view kStoreSql;  // generated: store_sql_text.cc
}  // namespace store_assets

namespace {

// name -> fragment, its lines joined by '\n'.
std::map<std::string, std::string, std::less<>> Fragments() {
  std::map<std::string, std::string, std::less<>> out;
  std::string* current = nullptr;
  const absl::string_view text(store_assets::kStoreSql.data(),
                               store_assets::kStoreSql.size());
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "-- name: ")) {
      current = &out[std::string(absl::StripAsciiWhitespace(line))];
      continue;
    }
    if (current == nullptr || stripped.empty() ||
        absl::StartsWith(stripped, "--")) {
      continue;
    }
    if (!current->empty()) current->push_back('\n');
    current->append(line.data(), line.size());
  }
  return out;
}

}  // namespace

absl::string_view StoreSql(absl::string_view name) {
  static const auto* fragments =
      new std::map<std::string, std::string, std::less<>>(Fragments());
  const auto it = fragments->find(name);
  if (it == fragments->end()) {
    std::fprintf(stderr, "python/tailsweep/store.sql has no fragment '%.*s'\n",
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return it->second;
}

}  // namespace tailsweep
