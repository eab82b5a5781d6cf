#ifndef TAILSWEEP_CORE_SCHEMA_TRAIN_KIND_H_
#define TAILSWEEP_CORE_SCHEMA_TRAIN_KIND_H_

// The `train` kind's name (its registration: train_kind.cc), which is also
// its program's subcommand, `tailsweep-lab lab train` (cli/lab_train.cc).

namespace tailsweep {

inline constexpr char kTrainKindName[] = "train";

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_TRAIN_KIND_H_
