// Benchmark: training steps per second for each attention kernel at one
// size, the kernels interleaved round by round in one process (so drift in
// the machine's speed hits all alike): the median step time per kernel and
// its ratio to softmax. The slower-growing kernels should cost no more than
// softmax (science.md section 9). Default size: the CPU reproduction's
// probe (N = 512, d = 64, 4 heads, 6 layers, batch 2, one thread, as one
// of two jobs on this machine runs).
//
// With --aten, each slower-growing kernel also runs without the fused tile
// passes (core/kernel_tile.h), as "KERNEL/aten": before and after them,
// side by side in one run.
//
//   build/bin/kernel_steps_bench [--n 512] [--d 64] [--heads 4] [--layers 6]
//                                [--batch 2] [--threads 1] [--rounds 15]
//                                [--aten]

#include <ATen/ATen.h>
#include <torch/types.h>

// After torch/types.h: clip_grad.h uses torch::Tensor without including it.
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/energy_distance.h"
#include "core/model.h"
#include "core/sampling.h"
#include "core/schema/blas_core.h"
#include "core/threads.h"

namespace tailsweep {
namespace {

struct Run {
  AttentionKernel kernel;
  std::string label;
  PointTransformer model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<TaskSampler> sampler;
  std::vector<double> seconds;
};

int Main(int argc, char** argv) {
  CLI::App app{"Training steps per second per attention kernel"};
  int64_t n = 512, d = 64, heads = 4, layers = 6, batch = 2;
  int threads = 1, rounds = 15;
  bool aten = false;
  app.add_option("--n", n, "Points per ensemble")->capture_default_str();
  app.add_option("--d", d, "Model width")->capture_default_str();
  app.add_option("--heads", heads, "Heads")->capture_default_str();
  app.add_option("--layers", layers, "Blocks")->capture_default_str();
  app.add_option("--batch", batch, "Trials per step")->capture_default_str();
  app.add_option("--threads", threads, "Compute threads")
      ->capture_default_str();
  app.add_option("--rounds", rounds,
                 "Timed steps per kernel (after one warm-up)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--aten", aten,
               "Also run each slower-growing kernel on ATen's elementwise "
               "ops instead of the fused tile passes");
  CLI11_PARSE(app, argc, argv);
  SetComputeThreads(threads);
  std::vector<Run> runs;
  for (AttentionKernel k :
       {AttentionKernel::kSoftmax, AttentionKernel::kQuadratic,
        AttentionKernel::kLinear, AttentionKernel::kLog}) {
    for (const bool fused : {true, false}) {
      if (!fused && (!aten || k == AttentionKernel::kSoftmax)) continue;
      Run r;
      r.kernel = k;
      r.label = std::string(AttentionKernelName(k)) + (fused ? "" : "/aten");
      ModelOptions o;
      o.layers = layers;
      o.d_model = d;
      o.heads = heads;
      o.kernel = k;
      o.attention.fused_tiles = fused;
      torch::manual_seed(0);
      r.model = PointTransformer(o);
      r.optimizer = std::make_unique<torch::optim::AdamW>(
          r.model->parameters(), torch::optim::AdamWOptions(1e-3));
      r.sampler = std::make_unique<TaskSampler>(
          Task{OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto}, 0);
      runs.push_back(std::move(r));
    }
  }
  auto step = [&](Run& r) {
    const EnsembleBatch b = r.sampler->Next(batch, n, at::kFloat);
    const at::Tensor loss =
        EnergyDistanceLoss(r.model->forward(b.input), b.target).mean();
    r.optimizer->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(r.model->parameters(), 1.0);
    r.optimizer->step();
  };
  for (Run& r : runs) step(r);  // warm-up
  for (int i = 0; i < rounds; ++i) {
    for (Run& r : runs) {
      const auto t0 = std::chrono::steady_clock::now();
      step(r);
      r.seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count());
    }
  }
  std::printf(
      "training step, N=%lld d=%lld heads=%lld layers=%lld batch=%lld, %d "
      "thread(s), median of %d interleaved rounds\n",
      static_cast<long long>(n), static_cast<long long>(d),
      static_cast<long long>(heads), static_cast<long long>(layers),
      static_cast<long long>(batch), threads, rounds);
  std::printf("%-14s %10s %10s %10s\n", "kernel", "s/step", "steps/s",
              "vs softmax");
  double softmax = 0;
  for (Run& r : runs) {
    std::sort(r.seconds.begin(), r.seconds.end());
    const double median = r.seconds[r.seconds.size() / 2];
    if (r.kernel == AttentionKernel::kSoftmax) softmax = median;
    std::printf("%-14s %10.4f %10.2f %9.2fx\n", r.label.c_str(), median,
                1 / median, median / softmax);
  }
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) {
  // Before anything computes: the machine's own matrix kernels.
  tailsweep::CorrectBlasCoreOrReexec(argv);
  return tailsweep::Main(argc, argv);
}
