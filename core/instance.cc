#include "core/instance.h"

#include "absl/strings/str_cat.h"

namespace tailsweep {

absl::StatusOr<OperatorKind> ParseOperator(absl::string_view name) {
  if (name == "sheared_swap") return OperatorKind::kShearedSwap;
  if (name == "matrix_inverse") return OperatorKind::kMatrixInverse;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown operator '", name, "'; allowed: sheared_swap, matrix_inverse"));
}

absl::string_view OperatorName(OperatorKind op) {
  switch (op) {
    case OperatorKind::kShearedSwap:
      return "sheared_swap";
    case OperatorKind::kMatrixInverse:
      return "matrix_inverse";
  }
  return "unknown";
}

bool IsIdentifiable(const Task& task) {
  return !(task.op == OperatorKind::kMatrixInverse &&
           task.family == MarginalFamily::kGaussian);
}

Mat2 Multiply(const Mat2& a, const Mat2& b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
          a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
}

Mat2 Inverse(const Mat2& a) {
  const double det = a[0] * a[3] - a[1] * a[2];
  return {a[3] / det, -a[1] / det, -a[2] / det, a[0] / det};
}

Instance MakeShearedSwap(MarginalFamily family,
                         const std::array<Marginal, 2>& axes, double h1,
                         double h2) {
  const Mat2 s1 = {1, h1, 0, 1};
  const Mat2 s2 = {1, 0, h2, 1};
  const Mat2 exchange = {0, 1, 1, 0};
  Instance inst;
  inst.task = {OperatorKind::kShearedSwap, family};
  inst.axes = axes;
  inst.a_in = Multiply(s1, s2);
  inst.a_out = Multiply(inst.a_in, exchange);
  inst.op_params = {h1, h2, 0, 0};
  return inst;
}

Instance MakeMatrixInverse(MarginalFamily family,
                           const std::array<Marginal, 2>& axes, const Mat2& b) {
  Instance inst;
  inst.task = {OperatorKind::kMatrixInverse, family};
  inst.axes = axes;
  inst.a_in = b;
  inst.a_out = Inverse(b);
  inst.op_params = b;
  return inst;
}

}  // namespace tailsweep
