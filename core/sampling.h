#ifndef TAILSWEEP_CORE_SAMPLING_H_
#define TAILSWEEP_CORE_SAMPLING_H_

// Random draws of marginals, instances and point ensembles.
//
// Every draw runs on the CPU in double from one CPU torch generator and is
// then converted to the caller's device and dtype, so a seed gives the same
// numbers on every device. Marginals are sampled by the quantile transform
// (never by rejection). Not thread-safe: one sampler per thread.

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/instance.h"
#include "core/marginal.h"

namespace tailsweep {

// A CPU generator seeded with `seed`.
at::Generator MakeCpuGenerator(uint64_t seed);

// Uniforms strictly inside (0, 1), double, CPU, of the given shape.
at::Tensor OpenUniform(at::IntArrayRef shape, at::Generator& gen);

// n samples of `m`, double, CPU, shape [n]. REQUIRES: m.Validate().ok().
at::Tensor SampleMarginal(const Marginal& m, int64_t n, at::Generator& gen);

// One instance from the priors of science.md sections 2 and 3, the
// marginals' from task.prior. Each call
// consumes exactly 8 uniforms: axis 1 (2), axis 2 (2), operator (4).
Instance DrawInstance(const Task& task, at::Generator& gen);

// Independent latent samples [B, n, 2] (double, CPU), trial b with the
// marginals of instances[b]. REQUIRES: all instances share one family.
at::Tensor SampleLatent(const std::vector<Instance>& instances, int64_t n,
                        at::Generator& gen);

enum class Side { kInput, kTarget };

// Maps latent [B, n, 2] to points A z with A = a_in or a_out per trial.
at::Tensor ApplyMatrices(const std::vector<Instance>& instances, Side side,
                         const at::Tensor& latent);

struct EnsembleBatch {
  std::vector<Instance> instances;
  at::Tensor input;   // [B, n, 2]
  at::Tensor target;  // [B, n, 2]
};

// Draws instances of one task and their ensembles. The stream of draws is a
// pure function of (task, seed, sequence of calls).
class TaskSampler {
 public:
  TaskSampler(const Task& task, uint64_t seed);

  // `trials` fresh instances, then an input and an independent target
  // ensemble of n points each, as `options` (device, dtype).
  EnsembleBatch Next(int64_t trials, int64_t n,
                     const at::TensorOptions& options);

  std::vector<Instance> DrawInstances(int64_t count);
  // A fresh, independent ensemble of the given side for each instance.
  at::Tensor Sample(const std::vector<Instance>& instances, Side side,
                    int64_t n, const at::TensorOptions& options);

  const Task& task() const { return task_; }
  // The generator, e.g. to save and restore its state.
  at::Generator& generator() { return gen_; }

 private:
  Task task_;
  at::Generator gen_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SAMPLING_H_
