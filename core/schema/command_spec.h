#ifndef TAILSWEEP_CORE_SCHEMA_COMMAND_SPEC_H_
#define TAILSWEEP_CORE_SCHEMA_COMMAND_SPEC_H_

// The `kind: command` section of a sweep spec (the definition's meaning:
// command_job.h; the child's side: docs/child-contract.md):
//   command: [python3, train.py, "${args}"]  # argv template (required)
//   shell: false            # true: the words are joined and run by /bin/sh
//   env: {NAME: value}      # added to the child's environment
//   workdir: .              # relative to the spec file; default: its folder
//   code: [train.py, lib/]  # content-hashed into every job's identity
//   setup: [". .venv/bin/activate"]  # sh lines run before the command
//   stop_grace_s: 30        # SIGTERM to SIGKILL of the process group
//   outcomes:               # named yes/no outcomes judged on metrics
//     diverged: {metric: loss, not_finite: true}
//     collapsed: {metric: spread_ratio, below: 0.05, at: any}
//   stop_on: [diverged]     # outcomes that end a run early once they hold
// `code_hash` and an absolute `workdir` are written by PrepareForSubmit
// (the submitting machine has the files; the coordinator need not).
// Errors: file:line:column, the key and what is allowed. Torch-free.

#include <yaml-cpp/yaml.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/schema/command_job.h"

namespace tailsweep {

// The section's top-level keys.
absl::Span<const absl::string_view> CommandSectionKeys();

// Parses the section's keys of `root` (a spec mapping) into `out`.
absl::Status ParseCommandSection(absl::string_view source,
                                 const YAML::Node& root, CommandSpec& out);
// Writes the section's keys into an open map.
void EmitCommandSection(YAML::Emitter& out, const CommandSpec& spec);

// Makes `workdir` absolute (relative to `spec_dir`, which it defaults to)
// and sets `code_hash` from `code`. NotFound names a missing code path.
absl::Status PrepareCommandForSubmit(const std::string& spec_dir,
                                     CommandSpec& spec);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_COMMAND_SPEC_H_
