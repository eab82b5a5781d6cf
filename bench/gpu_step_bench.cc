// Benchmark: the training step on any device, for each attention kernel and
// precision, side by side in one process (science.md section 9's paper size
// by default: N = 16384, d = 256, 8 heads, 6 layers, batch 4). For each it
// reports the median time of a whole step (sample, forward, energy-distance
// loss, backward, clip, AdamW) and of attention alone (forward + backward of
// one layer's KernelAttention at the same shapes), and the peak device memory
// of the step (CUDA builds; "-" elsewhere). Made for the GPU device check
// (bench/gpu/device_check.sh), beside its FlexAttention baseline
// (bench/gpu/flex_baseline.py, same shapes); runs on a CPU at small sizes
// for the rehearsal.
//
//   build/bin/gpu_step_bench [--device cuda:0] [--n 16384] [--d 256]
//       [--heads 8] [--layers 6] [--batch 4] [--kernels softmax,log]
//       [--precisions float32,tf32,bfloat16] [--warmup 2] [--reps 5]
//
// One line per (kernel, precision) on stdout, as JSON, then a table on
// stderr. A configuration that fails (out of memory, say) prints its error
// and the others still run.

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/types.h>

// After torch/types.h: clip_grad.h uses torch::Tensor without including it.
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#if defined(TAILSWEEP_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "core/energy_distance.h"
#include "core/kernel_attention.h"
#include "core/model.h"
#include "core/sampling.h"
#include "core/threads.h"

namespace tailsweep {
namespace {

struct Shape {
  int64_t n, d, heads, layers, batch;
};

void Sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

// Median of `reps` timed calls after `warmup` untimed ones.
template <typename Fn>
double MedianSeconds(const torch::Device& device, int warmup, int reps, Fn fn) {
  for (int i = 0; i < warmup; ++i) fn();
  Sync(device);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    Sync(device);
    times.push_back(Seconds(t0));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void ResetPeak(const torch::Device& device) {
#if defined(TAILSWEEP_CUDA)
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
  }
#endif
}

// Peak bytes allocated on `device` since ResetPeak; -1 where not known.
double PeakMiB(const torch::Device& device) {
#if defined(TAILSWEEP_CUDA)
  if (device.is_cuda()) {
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return static_cast<double>(stats.allocated_bytes[0].peak) / (1 << 20);
  }
#endif
  return -1;
}

struct Result {
  double step_s = 0, attention_s = 0, peak_mib = -1;
  std::string error;
};

Result Measure(const Shape& s, AttentionKernel kernel, Precision precision,
               const torch::Device& device, int warmup, int reps) {
  Result r;
  try {
    if (device.is_cuda()) {
      at::globalContext().setAllowTF32CuBLAS(precision == Precision::kTF32);
      at::globalContext().setAllowTF32CuDNN(precision == Precision::kTF32);
    }
    const at::ScalarType type = ModelScalarType(precision);
    const at::ScalarType loss_type = LossScalarType(precision);
    ModelOptions o;
    o.layers = s.layers;
    o.d_model = s.d;
    o.heads = s.heads;
    o.kernel = kernel;
    torch::manual_seed(0);
    PointTransformer model(o);
    model->to(device, type);
    torch::optim::AdamW optimizer(model->parameters(),
                                  torch::optim::AdamWOptions(1e-4));
    TaskSampler sampler(
        Task{OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto}, 0);
    const at::TensorOptions on_device =
        at::TensorOptions().dtype(loss_type).device(device);
    ResetPeak(device);
    r.step_s = MedianSeconds(device, warmup, reps, [&] {
      const EnsembleBatch batch = sampler.Next(s.batch, s.n, on_device);
      const at::Tensor prediction =
          model->forward(batch.input.to(type)).to(loss_type);
      const at::Tensor loss =
          EnergyDistanceLoss(prediction, batch.target).mean();
      optimizer.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      optimizer.step();
    });
    r.peak_mib = PeakMiB(device);
    // Attention alone: one layer's shapes, forward and backward.
    const int64_t dh = s.d / s.heads;
    const at::TensorOptions t = at::TensorOptions().dtype(type).device(device);
    const at::Tensor q =
        at::randn({s.batch, s.heads, s.n, dh}, t).requires_grad_(true);
    const at::Tensor k =
        at::randn({s.batch, s.heads, s.n, dh}, t).requires_grad_(true);
    const at::Tensor v =
        at::randn({s.batch, s.heads, s.n, dh}, t).requires_grad_(true);
    const at::Tensor up = at::randn({s.batch, s.heads, s.n, dh}, t);
    r.attention_s = MedianSeconds(device, warmup, reps, [&] {
      const at::Tensor out = KernelAttention(q, k, v, kernel);
      (out * up).sum().backward();
    });
  } catch (const std::exception& e) {
    r.error = e.what();
    r.error = r.error.substr(0, r.error.find('\n'));
    std::replace(r.error.begin(), r.error.end(), '"', '\'');
    std::replace(r.error.begin(), r.error.end(), '\\', '/');
  }
  return r;
}

int Main(int argc, char** argv) {
  CLI::App app{"Training step and attention per kernel and precision"};
  std::string device_name = "cuda:0";
  Shape s{16384, 256, 8, 6, 4};
  std::string kernels = "softmax,quadratic,linear,log";
  std::string precisions = "float32,tf32,bfloat16";
  int warmup = 2, reps = 5, threads = 1;
  app.add_option("--device", device_name, "cpu or cuda:N")
      ->capture_default_str();
  app.add_option("--n", s.n, "Points per cloud")->capture_default_str();
  app.add_option("--d", s.d, "Model width")->capture_default_str();
  app.add_option("--heads", s.heads, "Heads")->capture_default_str();
  app.add_option("--layers", s.layers, "Blocks")->capture_default_str();
  app.add_option("--batch", s.batch, "Clouds per step")->capture_default_str();
  app.add_option("--kernels", kernels, "Comma-separated kernels")
      ->capture_default_str();
  app.add_option("--precisions", precisions, "Comma-separated precisions")
      ->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed steps")->capture_default_str();
  app.add_option("--reps", reps, "Timed steps (median reported)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU compute threads")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  SetComputeThreads(threads);
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(device_name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "--device '%s': allowed: cpu, cuda:N\n",
                 device_name.c_str());
    return 2;
  }
  if (device.is_cuda() && !torch::cuda::is_available()) {
    std::fprintf(stderr, "--device %s: this LibTorch sees no CUDA device\n",
                 device_name.c_str());
    return 2;
  }
  std::fprintf(stderr, "%-10s %-9s %12s %14s %10s\n", "kernel", "precision",
               "step_ms", "attention_ms", "peak_MiB");
  int failures = 0;
  for (absl::string_view kname : absl::StrSplit(kernels, ',')) {
    const absl::StatusOr<AttentionKernel> kernel = ParseAttentionKernel(kname);
    if (!kernel.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(kernel.status().message()).c_str());
      return 2;
    }
    for (absl::string_view pname : absl::StrSplit(precisions, ',')) {
      const absl::StatusOr<Precision> precision = ParsePrecision(pname);
      if (!precision.ok()) {
        std::fprintf(stderr, "%s\n",
                     std::string(precision.status().message()).c_str());
        return 2;
      }
      const Result r = Measure(s, *kernel, *precision, device, warmup, reps);
      std::printf(
          "{\"kernel\": \"%s\", \"precision\": \"%s\", \"device\": \"%s\", "
          "\"n\": %lld, \"d\": %lld, \"heads\": %lld, \"layers\": %lld, "
          "\"batch\": %lld, \"step_ms\": %.3f, \"attention_ms\": %.3f, "
          "\"peak_mib\": %.1f, \"error\": \"%s\"}\n",
          std::string(kname).c_str(), std::string(pname).c_str(),
          device.str().c_str(), static_cast<long long>(s.n),
          static_cast<long long>(s.d), static_cast<long long>(s.heads),
          static_cast<long long>(s.layers), static_cast<long long>(s.batch),
          r.step_s * 1e3, r.attention_s * 1e3, r.peak_mib, r.error.c_str());
      std::fflush(stdout);
      if (!r.error.empty()) {
        ++failures;
        std::fprintf(stderr, "%-10s %-9s failed: %s\n",
                     std::string(kname).c_str(), std::string(pname).c_str(),
                     r.error.c_str());
        continue;
      }
      std::fprintf(
          stderr, "%-10s %-9s %12.2f %14.2f %10s\n", std::string(kname).c_str(),
          std::string(pname).c_str(), r.step_s * 1e3, r.attention_s * 1e3,
          r.peak_mib < 0
              ? "-"
              : std::to_string(static_cast<long long>(r.peak_mib)).c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
