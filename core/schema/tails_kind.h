#ifndef TAILSWEEP_CORE_SCHEMA_TAILS_KIND_H_
#define TAILSWEEP_CORE_SCHEMA_TAILS_KIND_H_

// The `tails` kind's name (its registration: tails_kind.cc), which is also
// its program's subcommand, `tailsweep-lab lab tails` (cli/lab_tails.cc).

namespace tailsweep {

inline constexpr char kTailsKindName[] = "tails";

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_TAILS_KIND_H_
