#include "core/schema/spec_yaml.h"

#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tailsweep {

std::string Where(absl::string_view source, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return absl::StrCat(source, ":", m.line + 1, ":", m.column + 1, ": ");
}

absl::Status ErrorAt(absl::string_view source, const YAML::Node& node,
                     absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(Where(source, node), message));
}

absl::StatusOr<std::string> Scalar(absl::string_view source,
                                   const YAML::Node& node,
                                   absl::string_view what) {
  if (!node.IsScalar()) {
    return ErrorAt(source, node, absl::StrCat(what, " must be a single value"));
  }
  return node.as<std::string>();
}

absl::StatusOr<std::string> Key(absl::string_view source,
                                const YAML::Node& node) {
  if (!node.IsScalar()) {
    return ErrorAt(source, node, "keys must be plain words");
  }
  return node.as<std::string>();
}

absl::Status CheckNoDuplicateKeys(absl::string_view source,
                                  const YAML::Node& map,
                                  absl::string_view what) {
  std::map<std::string, YAML::Mark> seen;
  for (const auto& item : map) {
    if (!item.first.IsScalar()) continue;  // Key() refuses it
    const std::string key = item.first.as<std::string>();
    const auto [first, added] = seen.emplace(key, item.first.Mark());
    if (!added) {
      return ErrorAt(source, item.first,
                     absl::StrCat("duplicate key '", key, "' in ", what,
                                  " (first at line ", first->second.line + 1,
                                  ", column ", first->second.column + 1, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> IntIn(absl::string_view source, const YAML::Node& node,
                              absl::string_view what, int64_t min,
                              int64_t max) {
  absl::StatusOr<std::string> text = Scalar(source, node, what);
  if (!text.ok()) return text.status();
  int64_t v = 0;
  if (!absl::SimpleAtoi(*text, &v) || v < min || v > max) {
    return ErrorAt(source, node,
                   absl::StrCat(what, " '", *text,
                                "': allowed: a whole number "
                                "from ",
                                min, " to ", max));
  }
  return v;
}

absl::StatusOr<double> NumberOf(absl::string_view source,
                                const YAML::Node& node,
                                absl::string_view what) {
  absl::StatusOr<std::string> text = Scalar(source, node, what);
  if (!text.ok()) return text.status();
  double v = 0;
  if (!absl::SimpleAtod(*text, &v) || !std::isfinite(v)) {
    return ErrorAt(source, node,
                   absl::StrCat(what, " '", *text, "' is not a number"));
  }
  return v;
}

}  // namespace tailsweep
