#include "core/model_kinds.h"

#include "absl/strings/str_cat.h"
#include "core/schema/name_table.h"

namespace tailsweep {
namespace {

constexpr EnumName<AttentionKernel> kKernels[] = {
    {AttentionKernel::kSoftmax, "softmax"},
    {AttentionKernel::kQuadratic, "quadratic"},
    {AttentionKernel::kLinear, "linear"},
    {AttentionKernel::kLog, "log"}};
constexpr EnumName<NormPlacement> kNorms[] = {{NormPlacement::kPost, "post"},
                                              {NormPlacement::kPre, "pre"}};
constexpr EnumName<Precision> kPrecisions[] = {
    {Precision::kFloat32, "float32"},
    {Precision::kFloat64, "float64"},
    {Precision::kBFloat16, "bfloat16"},
    {Precision::kTF32, "tf32"}};

// "unknown WHAT 'NAME'; allowed: ..." for a name the table lacks.
template <typename E>
absl::StatusOr<E> Parse(NameTable<E> table, absl::string_view what,
                        absl::string_view name) {
  if (std::optional<E> value = ValueOf(table, name)) return *value;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ", what, " '", name, "'; allowed: ", AllNames(table)));
}

}  // namespace

absl::StatusOr<AttentionKernel> ParseAttentionKernel(absl::string_view name) {
  return Parse<AttentionKernel>(kKernels, "kernel", name);
}

absl::string_view AttentionKernelName(AttentionKernel kernel) {
  return NameOf<AttentionKernel>(kKernels, kernel);
}

absl::StatusOr<NormPlacement> ParseNormPlacement(absl::string_view name) {
  return Parse<NormPlacement>(kNorms, "norm", name);
}

absl::string_view NormPlacementName(NormPlacement norm) {
  return NameOf<NormPlacement>(kNorms, norm);
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  return Parse<Precision>(kPrecisions, "precision", name);
}

absl::string_view PrecisionName(Precision precision) {
  return NameOf<Precision>(kPrecisions, precision);
}

}  // namespace tailsweep
