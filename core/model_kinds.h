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

// The floating-point type of the model's parameters and activations,
// attention included [choice: float32 by default]. bfloat16 keeps the loss
// and the metrics in float32 (pure bfloat16 weights, no float32 master copy,
// as LibTorch's CPU ops give it). tf32 is float32 whose matrix products
// may round their inputs to TF32 on a CUDA device that has it (Ampere and
// newer), the speed float32 gives up; elsewhere it is float32. float32 on
// CUDA never uses TF32.
enum class Precision { kFloat32, kFloat64, kBFloat16, kTF32 };

// "float32", "float64", "bfloat16" or "tf32"; InvalidArgument otherwise.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);
absl::string_view PrecisionName(Precision precision);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_MODEL_KINDS_H_
