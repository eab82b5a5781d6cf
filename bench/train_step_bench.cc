// Benchmark: one training step of the point transformer (sample a batch,
// forward, energy-distance loss, backward, AdamW step), tiled against the
// naive LibTorch version a user would write first (materialised attention
// weights, torch::cdist energy distance), side by side in forked children:
// wall time and peak memory above baseline. Also reports the achieved
// GFLOP/s against this machine's measured float matmul rate.
//
//   build/bin/train_step_bench [--case small|paper|all] [--reps 3]
//                              [--threads T] [--kernel softmax|...]
//
//   small: N = 2048, d = 64, 4 heads, 2 layers, batch 1 (tiled and naive)
//   paper: N = 16384, d = 256, 8 heads, 6 layers, batch 1 (tiled only: the
//          naive version needs over 8 GB for one layer's scores)

#include <ATen/ATen.h>
#include <torch/types.h>

// After torch/types.h: clip_grad.h uses torch::Tensor without including it.
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "bench/measure.h"
#include "core/energy_distance.h"
#include "core/model.h"
#include "core/number_text.h"
#include "core/sampling.h"
#include "core/schema/blas_core.h"
#include "core/threads.h"

namespace tailsweep {
namespace {

struct Case {
  const char* name;
  int64_t n, d, heads, layers;
  bool with_naive;
};

at::Tensor NaiveEnergy(const at::Tensor& x, const at::Tensor& y) {
  return 2 * at::cdist(x, y).mean({1, 2}) - at::cdist(x, x).mean({1, 2}) -
         at::cdist(y, y).mean({1, 2});
}

// Model FLOPs of one step: forward per layer 24 N d^2 (projections and a
// 4d FFN) + 4 N^2 d (scores and values), times 3 for forward + backward.
double StepFlops(const Case& c) {
  const double n = c.n, d = c.d;
  return 3.0 * c.layers * (24.0 * n * d * d + 4.0 * n * n * d);
}

// Float matmul rate of this machine, GFLOP/s (1024 x 1024, best of 5).
double MatmulRate() {
  const at::Tensor a = at::randn({1024, 1024}), b = at::randn({1024, 1024});
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    at::Tensor c = at::mm(a, b);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    best = std::min(best, s);
  }
  return 2.0 * 1024 * 1024 * 1024 / best / 1e9;
}

int Main(int argc, char** argv) {
  CLI::App app{"Tiled vs naive training step: time, peak memory, GFLOP/s"};
  bench::CommonFlags common;
  bench::AddCommonFlags(app, &common);
  std::string which = "all", kernel_name = "softmax";
  app.add_option("--case", which, "small, paper or all")
      ->check(CLI::IsMember({"small", "paper", "all"}))
      ->capture_default_str();
  app.add_option("--kernel", kernel_name, "softmax, quadratic, linear or log")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const absl::StatusOr<AttentionKernel> parsed =
      ParseAttentionKernel(kernel_name);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(parsed.status().message()).c_str());
    return 2;
  }
  const AttentionKernel kernel = *parsed;
  const int reps = common.reps, threads = common.threads;
  // The machine's rate: OpenBLAS with its own threads, before they are
  // handed over to torch.
  const double matmul = MatmulRate();
  SetComputeThreads(threads);
  std::printf(
      "training step, %s, float, batch 1, %d threads, median of %d; "
      "matmul rate %.1f GFLOP/s\n",
      std::string(AttentionKernelName(kernel)).c_str(), threads, reps, matmul);
  std::printf("%8s  %-7s %10s %12s %26s\n", "N", "version", "seconds",
              "peak_MiB", "loss");
  const Case cases[] = {{"small", 2048, 64, 4, 2, true},
                        {"paper", 16384, 256, 8, 6, false}};
  for (const Case& c : cases) {
    if (which != "all" && which != c.name) continue;
    std::unique_ptr<TaskSampler> sampler;
    PointTransformer model{nullptr};
    std::unique_ptr<torch::optim::AdamW> optimizer;
    auto setup = [&](bool naive) {
      ModelOptions o;
      o.layers = c.layers;
      o.d_model = c.d;
      o.heads = c.heads;
      o.kernel = kernel;
      o.naive_attention = naive;
      torch::manual_seed(0);
      model = PointTransformer(o);
      optimizer = std::make_unique<torch::optim::AdamW>(
          model->parameters(), torch::optim::AdamWOptions(1e-4));
      sampler = std::make_unique<TaskSampler>(
          Task{OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto}, 0);
    };
    auto step = [&](bool naive) {
      const EnsembleBatch batch = sampler->Next(1, c.n, at::kFloat);
      const at::Tensor prediction = model->forward(batch.input);
      const at::Tensor loss =
          (naive ? NaiveEnergy(prediction, batch.target)
                 : EnergyDistanceLoss(prediction, batch.target))
              .mean();
      optimizer->zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      optimizer->step();
      return FormatDouble(loss.item<double>());
    };
    const bench::Measurement tiled = bench::MeasureInChild(
        [&] { setup(false); }, [&] { return step(false); }, reps);
    if (c.with_naive) {
      const bench::Measurement naive = bench::MeasureInChild(
          [&] { setup(true); }, [&] { return step(true); }, reps);
      bench::PrintComparison(c.n, tiled, naive);
    } else {
      std::printf("%8lld  %-7s %10.4f %12.1f %26s%s\n",
                  static_cast<long long>(c.n), "tiled", tiled.seconds,
                  tiled.peak_bytes / (1 << 20), tiled.note.c_str(),
                  tiled.ok ? "" : "  (failed)");
    }
    const double gflops = StepFlops(c) / tiled.seconds / 1e9;
    std::printf(
        "%8lld  model %.3g GFLOP per step: tiled %.1f GFLOP/s = %.0f%% "
        "of the matmul rate\n",
        static_cast<long long>(c.n), StepFlops(c) / 1e9, gflops,
        100.0 * gflops / matmul);
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
