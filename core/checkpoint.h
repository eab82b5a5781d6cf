#ifndef TAILSWEEP_CORE_CHECKPOINT_H_
#define TAILSWEEP_CORE_CHECKPOINT_H_

// Training checkpoints: model, optimizer, step, every RNG state and the
// job config, in one file written atomically (temp file, fsync, rename,
// fsync of the directory), so a crash leaves either the old file or the new
// one. Files are named DIR/step-NNNNNNNN.pt.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/job_config.h"
#include "core/model.h"

namespace tailsweep {

// Everything besides model and optimizer that a resumed run needs.
struct TrainingState {
  JobConfig config;
  int64_t step = 0;           // steps completed
  at::Tensor data_rng_state;  // the training TaskSampler's generator
  int64_t collapse_onset = -1;
  int64_t diverged_step = -1;  // -1: not diverged
};

// DIR/step-NNNNNNNN.pt (core/schema/checkpoint_name.h); the newest one in
// a directory: NewestCheckpointIn there.
std::string CheckpointPath(const std::string& dir, int64_t step);

// Internal on I/O failure; nothing is left at `path` but a complete file.
absl::Status SaveCheckpoint(const std::string& path, PointTransformer& model,
                            torch::optim::Optimizer& optimizer,
                            const TrainingState& state);

// Reads the config only (to build a matching model before loading).
// NotFound for a missing file, DataLoss for an unreadable one.
absl::StatusOr<JobConfig> ReadCheckpointConfig(const std::string& path);

// Loads weights into `model` (built from the checkpoint's config) and, when
// `optimizer` is not null, its state. NotFound / DataLoss as above.
absl::StatusOr<TrainingState> LoadCheckpoint(
    const std::string& path, PointTransformer& model,
    torch::optim::Optimizer* optimizer);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_CHECKPOINT_H_
