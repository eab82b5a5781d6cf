#ifndef TAILSWEEP_CORE_SCHEMA_SCHEMA_KIND_H_
#define TAILSWEEP_CORE_SCHEMA_SCHEMA_KIND_H_

// For a kind whose job keys are a typed config (job_config.h's JobKey list
// and a setter that checks each value, as train's JobConfig and tails'
// TailsJobConfig): its key and value checks and its jobs' config, from
// the schema alone. Torch-free.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/job_config.h"
#include "core/schema/job_kinds.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep {

template <typename Config>
using ConfigSetter = absl::Status (*)(Config&, absl::string_view,
                                      absl::string_view);

// Sets `key` on a scratch config: the setter's own check.
template <typename Config, ConfigSetter<Config> Set>
absl::Status SchemaCheckValue(const std::string& key,
                              const std::string& value) {
  Config scratch;
  return Set(scratch, key, value);
}

// OK for a key of `Keys()`; else the setter's message, which lists them.
template <typename Config, const std::vector<JobKey>& (*Keys)(),
          ConfigSetter<Config> Set>
absl::Status SchemaCheckKey(const std::string& key) {
  const std::vector<JobKey>& keys = Keys();
  if (std::any_of(keys.begin(), keys.end(),
                  [&](const JobKey& k) { return k.name == key; })) {
    return absl::OkStatus();
  }
  return SchemaCheckValue<Config, Set>(key, "");
}

// The spec's fixed keys, then the cell's, set on a default config.
template <typename Config, ConfigSetter<Config> Set>
absl::Status SchemaConfig(const SweepSpec& spec, const KeyValues& cell,
                          Config* config) {
  for (const KeyValues* kv : {&spec.fixed, &cell}) {
    for (const auto& [k, v] : *kv) TS_RETURN_IF_ERROR(Set(*config, k, v));
  }
  return absl::OkStatus();
}

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SCHEMA_KIND_H_
