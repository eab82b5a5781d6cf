#include "core/reference.h"

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "core/sampling.h"
#include "core/statistics.h"

namespace tailsweep {

absl::StatusOr<Reference> SamplingReference(const Task& task,
                                            const ReferenceOptions& options) {
  if (options.n < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("n must be >= 2 (got ", options.n, ")"));
  }
  if (options.trials < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("trials must be >= 1 (got ", options.trials, ")"));
  }
  TaskSampler sampler(task, options.seed);
  const at::TensorOptions cpu_double = at::TensorOptions().dtype(at::kDouble);
  Reference out;
  for (int64_t t = 0; t < options.trials; ++t) {
    const std::vector<Instance> one = sampler.DrawInstances(1);
    const at::Tensor a =
        sampler.Sample(one, Side::kTarget, options.n, cpu_double);
    const at::Tensor b =
        sampler.Sample(one, Side::kTarget, options.n, cpu_double);
    absl::StatusOr<double> ed = EnergyDistance(a[0], b[0], options.energy);
    if (!ed.ok()) return ed.status();
    out.distances.push_back(*ed);
    if (options.progress) options.progress(t + 1, options.trials);
  }
  out.mean = Mean(out.distances);
  out.median = Median(out.distances);
  return out;
}

}  // namespace tailsweep
