#ifndef TAILSWEEP_CORE_MODEL_KINDS_H_
#define TAILSWEEP_CORE_MODEL_KINDS_H_

// The model's named choices (science.md section 5), torch-free so the job
// schema can share them with services that do not link LibTorch.

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

// Attention kernels: exp(s) below 0 for all; above 0 exp, 1 + s + s^2/2,
// 1 + s, 1 + log(1 + s).
enum class AttentionKernel { kSoftmax, kQuadratic, kLinear, kLog };

// "softmax", "quadratic", "linear" or "log"; InvalidArgument otherwise.
absl::StatusOr<AttentionKernel> ParseAttentionKernel(absl::string_view name);
absl::string_view AttentionKernelName(AttentionKernel kernel);

enum class NormPlacement { kPost, kPre };

// "post" or "pre"; InvalidArgument otherwise.
absl::StatusOr<NormPlacement> ParseNormPlacement(absl::string_view name);
absl::string_view NormPlacementName(NormPlacement norm);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_MODEL_KINDS_H_
