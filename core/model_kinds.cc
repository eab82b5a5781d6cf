#include "core/model_kinds.h"

#include "absl/strings/str_cat.h"

namespace tailsweep {

absl::StatusOr<AttentionKernel> ParseAttentionKernel(absl::string_view name) {
  if (name == "softmax") return AttentionKernel::kSoftmax;
  if (name == "quadratic") return AttentionKernel::kQuadratic;
  if (name == "linear") return AttentionKernel::kLinear;
  if (name == "log") return AttentionKernel::kLog;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown kernel '", name, "'; allowed: softmax, quadratic, linear, log"));
}

absl::string_view AttentionKernelName(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kSoftmax:
      return "softmax";
    case AttentionKernel::kQuadratic:
      return "quadratic";
    case AttentionKernel::kLinear:
      return "linear";
    case AttentionKernel::kLog:
      return "log";
  }
  return "unknown";
}

absl::StatusOr<NormPlacement> ParseNormPlacement(absl::string_view name) {
  if (name == "post") return NormPlacement::kPost;
  if (name == "pre") return NormPlacement::kPre;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown norm '", name, "'; allowed: post, pre"));
}

absl::string_view NormPlacementName(NormPlacement norm) {
  return norm == NormPlacement::kPost ? "post" : "pre";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  if (name == "float32") return Precision::kFloat32;
  if (name == "float64") return Precision::kFloat64;
  if (name == "bfloat16") return Precision::kBFloat16;
  if (name == "tf32") return Precision::kTF32;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", name,
                   "'; allowed: float32, float64, bfloat16, tf32"));
}

absl::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFloat32:
      return "float32";
    case Precision::kFloat64:
      return "float64";
    case Precision::kBFloat16:
      return "bfloat16";
    case Precision::kTF32:
      return "tf32";
  }
  return "unknown";
}

}  // namespace tailsweep
