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

// A uniform prior on [min, max].
struct UniformRange {
  double min = 0;
  double max = 0;

  bool operator==(const UniformRange& o) const {
    return min == o.min && max == o.max;
  }
};

// The priors of an instance's two latent marginals, uniform and
// independent per instance (science.md section 2 [choice]). The mirrored
// Pareto family draws a tail index a (both axes, the same range) and a
// scale lam per axis; the Gaussian family a mean m (both axes) and a
// standard deviation s per axis. By default axis 2 has the larger spread,
// so the two axes can be told apart (the sheared swap exchanges them: with
// equal laws it would map a measure onto itself).
struct InstancePrior {
  UniformRange tail_index{1.1, 2.0};  // a finite mean, an infinite variance
  UniformRange scale1{0.5, 1.0};      // lam1
  UniformRange scale2{1.0, 2.0};      // lam2
  UniformRange mean{-1.0, 1.0};       // m1, m2
  UniformRange sd1{0.5, 1.0};         // s1
  UniformRange sd2{1.0, 2.0};         // s2

  bool operator==(const InstancePrior& o) const {
    return tail_index == o.tail_index && scale1 == o.scale1 &&
           scale2 == o.scale2 && mean == o.mean && sd1 == o.sd1 && sd2 == o.sd2;
  }
};

// The benchmark task: which operator, which marginal family, and the
// priors its instances' marginals are drawn from.
struct Task {
  Task() = default;
  Task(OperatorKind op, MarginalFamily family, InstancePrior prior = {})
      : op(op), family(family), prior(prior) {}

  OperatorKind op = OperatorKind::kShearedSwap;
  MarginalFamily family = MarginalFamily::kMirroredPareto;
  InstancePrior prior;
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
