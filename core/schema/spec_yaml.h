#ifndef TAILSWEEP_CORE_SCHEMA_SPEC_YAML_H_
#define TAILSWEEP_CORE_SCHEMA_SPEC_YAML_H_

// The few YAML readers every part of a sweep spec uses, with the one error
// shape of specs: "SOURCE:LINE:COLUMN: message" (InvalidArgument). Used by
// sweep_spec.cc and the kinds' own sections (command_spec.cc). Torch-free.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

// "SOURCE:LINE:COLUMN: " of `node`.
std::string Where(absl::string_view source, const YAML::Node& node);
// InvalidArgument "SOURCE:LINE:COLUMN: message".
absl::Status ErrorAt(absl::string_view source, const YAML::Node& node,
                     absl::string_view message);
// A scalar's text, or an error saying `what` must be a single value.
absl::StatusOr<std::string> Scalar(absl::string_view source,
                                   const YAML::Node& node,
                                   absl::string_view what);
// A mapping's key: a plain scalar (YAML also allows "? [a, b]: ..." keys).
absl::StatusOr<std::string> Key(absl::string_view source,
                                const YAML::Node& node);
// A mapping that names a key twice: yaml-cpp keeps both pairs, and lookups
// would silently take the first. `what` names the mapping in the error.
absl::Status CheckNoDuplicateKeys(absl::string_view source,
                                  const YAML::Node& map,
                                  absl::string_view what);
// A whole number in [min, max] from a scalar, or an error naming `what`.
absl::StatusOr<int64_t> IntIn(absl::string_view source, const YAML::Node& node,
                              absl::string_view what, int64_t min, int64_t max);
// A finite number from a scalar, or an error naming `what`.
absl::StatusOr<double> NumberOf(absl::string_view source,
                                const YAML::Node& node, absl::string_view what);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SPEC_YAML_H_
