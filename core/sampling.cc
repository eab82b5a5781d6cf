#include "core/sampling.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace tailsweep {
namespace {

const at::TensorOptions kCpuDouble = at::TensorOptions().dtype(at::kDouble);

// Maps u in (0,1) to lo + (hi - lo) u.
double Between(double lo, double hi, double u) { return lo + (hi - lo) * u; }
double Draw(const UniformRange& range, double u) {
  return Between(range.min, range.max, u);
}

}  // namespace

at::Generator MakeCpuGenerator(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

at::Tensor OpenUniform(at::IntArrayRef shape, at::Generator& gen) {
  // CPU doubles from at::rand are multiples of 2^-53 in [0, 1); clamping to
  // [2^-54, 1 - 2^-53] keeps quantiles finite and changes no other value.
  return at::rand(shape, gen, kCpuDouble)
      .clamp_(std::ldexp(1.0, -54), 1.0 - std::ldexp(1.0, -53));
}

at::Tensor SampleMarginal(const Marginal& m, int64_t n, at::Generator& gen) {
  Instance one;
  one.task.family = m.family;
  one.axes = {m, m};
  // Sample a [1, n, 2] latent and keep axis 0: same code path as instances.
  return SampleLatent({one}, n, gen).select(2, 0).squeeze(0).contiguous();
}

Instance DrawInstance(const Task& task, at::Generator& gen) {
  const at::Tensor u_tensor = at::rand({8}, gen, kCpuDouble);
  const double* u = u_tensor.data_ptr<double>();
  std::array<Marginal, 2> axes;
  const InstancePrior& p = task.prior;
  if (task.family == MarginalFamily::kMirroredPareto) {
    axes[0] = Marginal::MirroredPareto(Draw(p.tail_index, u[0]),
                                       Draw(p.scale1, u[1]));
    axes[1] = Marginal::MirroredPareto(Draw(p.tail_index, u[2]),
                                       Draw(p.scale2, u[3]));
  } else {
    axes[0] = Marginal::Gaussian(Draw(p.mean, u[0]), Draw(p.sd1, u[1]));
    axes[1] = Marginal::Gaussian(Draw(p.mean, u[2]), Draw(p.sd2, u[3]));
  }
  if (task.op == OperatorKind::kShearedSwap) {
    return MakeShearedSwap(task.family, axes, Between(-1, 1, u[4]),
                           Between(-1, 1, u[5]));
  }
  const Mat2 b = {Between(1.0, 2.0, u[4]), Between(-0.5, 0.5, u[5]),
                  Between(-0.5, 0.5, u[6]), Between(1.0, 2.0, u[7])};
  return MakeMatrixInverse(task.family, axes, b);
}

at::Tensor SampleLatent(const std::vector<Instance>& instances, int64_t n,
                        at::Generator& gen) {
  const int64_t b = static_cast<int64_t>(instances.size());
  TORCH_CHECK(b > 0, "SampleLatent needs at least one instance");
  const MarginalFamily family = instances[0].task.family;
  // Per-trial, per-axis parameters broadcast over points: [B, 1, 2].
  at::Tensor p1 = at::empty({b, 1, 2}, kCpuDouble);
  at::Tensor p2 = at::empty({b, 1, 2}, kCpuDouble);
  double* a = p1.data_ptr<double>();
  double* c = p2.data_ptr<double>();
  for (int64_t i = 0; i < b; ++i) {
    TORCH_CHECK(instances[i].task.family == family,
                "SampleLatent: instances mix marginal families");
    for (int axis = 0; axis < 2; ++axis) {
      const Marginal& m = instances[i].axes[axis];
      const bool pareto = family == MarginalFamily::kMirroredPareto;
      a[2 * i + axis] = pareto ? m.index : m.mean;
      c[2 * i + axis] = pareto ? m.scale : m.std;
    }
  }
  if (family == MarginalFamily::kGaussian) {
    return at::randn({b, n, 2}, gen, kCpuDouble).mul_(p2).add_(p1);
  }
  // Q(u) = sign(u - 1/2) lam ((2 min(u, 1-u))^(-1/a) - 1).
  const at::Tensor u = OpenUniform({b, n, 2}, gen);
  const at::Tensor m = at::minimum(u, 1.0 - u).mul_(2.0);
  const at::Tensor magnitude = m.pow(p1.reciprocal().neg()).sub_(1.0).mul_(p2);
  return at::where(u < 0.5, magnitude.neg(), magnitude);
}

at::Tensor ApplyMatrices(const std::vector<Instance>& instances, Side side,
                         const at::Tensor& latent) {
  const int64_t b = static_cast<int64_t>(instances.size());
  at::Tensor mats = at::empty({b, 2, 2}, kCpuDouble);
  double* p = mats.data_ptr<double>();
  for (int64_t i = 0; i < b; ++i) {
    const Mat2& a =
        side == Side::kInput ? instances[i].a_in : instances[i].a_out;
    for (int k = 0; k < 4; ++k) p[4 * i + k] = a[k];
  }
  // Rows are points: x^T = z^T A^T.
  return at::matmul(latent, mats.transpose(1, 2));
}

TaskSampler::TaskSampler(const Task& task, uint64_t seed)
    : task_(task), gen_(MakeCpuGenerator(seed)) {}

std::vector<Instance> TaskSampler::DrawInstances(int64_t count) {
  std::vector<Instance> out;
  out.reserve(count);
  for (int64_t i = 0; i < count; ++i) out.push_back(DrawInstance(task_, gen_));
  return out;
}

at::Tensor TaskSampler::Sample(const std::vector<Instance>& instances,
                               Side side, int64_t n,
                               const at::TensorOptions& options) {
  return ApplyMatrices(instances, side, SampleLatent(instances, n, gen_))
      .to(options);
}

EnsembleBatch TaskSampler::Next(int64_t trials, int64_t n,
                                const at::TensorOptions& options) {
  EnsembleBatch batch;
  batch.instances = DrawInstances(trials);
  batch.input = Sample(batch.instances, Side::kInput, n, options);
  batch.target = Sample(batch.instances, Side::kTarget, n, options);
  return batch;
}

}  // namespace tailsweep
