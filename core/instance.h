#ifndef TAILSWEEP_CORE_INSTANCE_H_
#define TAILSWEEP_CORE_INSTANCE_H_

// Operators and their instances (science.md sections 2 and 3). Torch-free:
// an Instance is plain numbers; instance_sampler.h draws them and their
// point ensembles.
//
// An instance fixes two independent latent marginals z = (z1, z2) and two
// 2x2 matrices: input points are x = A_in z, target points y = A_out z, with
// the input's and the target's latent samples drawn independently.
//   sheared swap:   A_in = M = S1 S2,  A_out = M E  (E swaps the axes)
//   matrix inverse: A_in = B,          A_out = B^-1

#include <array>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/marginal.h"

namespace tailsweep {

enum class OperatorKind { kShearedSwap, kMatrixInverse };

// "sheared_swap" or "matrix_inverse"; InvalidArgument names the allowed ones.
absl::StatusOr<OperatorKind> ParseOperator(absl::string_view name);
absl::string_view OperatorName(OperatorKind op);

// The prior of both axes' tail index a of the mirrored Pareto family,
// uniform on [min, max] (science.md section 2 [choice]: [1.1, 2.0], a finite
// mean and an infinite variance). Gaussian tasks do not use it.
struct TailIndexPrior {
  double min = 1.1;
  double max = 2.0;

  bool operator==(const TailIndexPrior& o) const {
    return min == o.min && max == o.max;
  }
};

// The benchmark task: which operator, which marginal family, and the
// mirrored Pareto family's tail-index prior.
struct Task {
  Task() = default;
  Task(OperatorKind op, MarginalFamily family, TailIndexPrior tail_prior = {})
      : op(op), family(family), tail_prior(tail_prior) {}

  OperatorKind op = OperatorKind::kShearedSwap;
  MarginalFamily family = MarginalFamily::kMirroredPareto;
  TailIndexPrior tail_prior;
};

// False for Gaussian matrix inverse: a rotation of Gaussian latents gives the
// same input law but another output, so grids exclude it (science.md 3).
bool IsIdentifiable(const Task& task);

// Row-major 2x2 matrix {m00, m01, m10, m11}.
using Mat2 = std::array<double, 4>;
Mat2 Multiply(const Mat2& a, const Mat2& b);
// REQUIRES: the determinant is nonzero.
Mat2 Inverse(const Mat2& a);

struct Instance {
  Task task;
  std::array<Marginal, 2> axes;  // laws of z1 and z2
  Mat2 a_in{};                   // input  = a_in z
  Mat2 a_out{};                  // target = a_out z
  // The operator's own parameters: shears {h1, h2} for the sheared swap,
  // B = {b11, b12, b21, b22} for the matrix inverse (unused entries 0).
  std::array<double, 4> op_params{};
};

// Builds an instance from the operator's parameters (see op_params).
Instance MakeShearedSwap(MarginalFamily family,
                         const std::array<Marginal, 2>& axes, double h1,
                         double h2);
Instance MakeMatrixInverse(MarginalFamily family,
                           const std::array<Marginal, 2>& axes, const Mat2& b);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_INSTANCE_H_
