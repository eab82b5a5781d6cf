// Benchmark: tiled kernel attention against the naive materialised one, side
// by side in one run: forward + backward of one attention call on
// q, k, v [1, H, N, d/H] in float, wall time and peak memory above baseline.
//
//   build/bin/attention_bench [--sizes 2048,8192] [--d 64] [--heads 4]
//                             [--kernel softmax|quadratic|linear|log]
//                             [--reps 3] [--threads T]
//
// The naive version needs B H N^2 floats per score tensor (several live at
// once in the backward pass); keep N <= 8192 on a 24 GB machine.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "core/kernel_attention.h"
#include "core/number_text.h"
#include "core/threads.h"

namespace tailsweep {
namespace {

int Main(int argc, char** argv) {
  CLI::App app{"Tiled vs naive kernel attention: time and peak memory"};
  bench::CommonFlags common;
  bench::AddCommonFlags(app, &common);
  std::vector<int64_t> sizes = {2048, 8192};
  int64_t d = 64, heads = 4;
  std::string kernel_name = "softmax";
  app.add_option("--sizes", sizes, "Sequence lengths N")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--d", d, "Model width")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--heads", heads, "Heads (dividing d)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--kernel", kernel_name, "softmax, quadratic, linear or log")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const absl::StatusOr<AttentionKernel> parsed =
      ParseAttentionKernel(kernel_name);
  if (!parsed.ok() || d % heads != 0) {
    std::fprintf(stderr, "%s\n",
                 parsed.ok() ? "--heads must divide --d"
                             : std::string(parsed.status().message()).c_str());
    return 2;
  }
  const AttentionKernel kernel = *parsed;
  const int reps = common.reps, threads = common.threads;
  SetComputeThreads(threads);
  std::printf(
      "kernel attention %s, forward+backward, float, d=%lld, heads=%lld, "
      "%d threads, median of %d runs\n",
      std::string(AttentionKernelName(kernel)).c_str(),
      static_cast<long long>(d), static_cast<long long>(heads), threads, reps);
  std::printf("%8s  %-7s %10s %12s %26s\n", "N", "version", "seconds",
              "peak_MiB", "sum(grad q)");
  for (int64_t n : sizes) {
    at::Tensor q, k, v;
    auto setup = [&] {
      at::manual_seed(0);
      q = at::randn({1, heads, n, d / heads}).requires_grad_(true);
      k = at::randn({1, heads, n, d / heads}).requires_grad_(true);
      v = at::randn({1, heads, n, d / heads}).requires_grad_(true);
    };
    auto step = [&](bool naive) {
      q.mutable_grad() = at::Tensor();
      const at::Tensor out = naive ? NaiveKernelAttention(q, k, v, kernel)
                                   : KernelAttention(q, k, v, kernel);
      out.square().sum().backward();
      return FormatDouble(q.grad().sum().item<double>());
    };
    const bench::Measurement tiled = bench::MeasureInChild(
        setup, [&] { return step(false); }, reps);
    const bench::Measurement naive = bench::MeasureInChild(
        setup, [&] { return step(true); }, reps);
    bench::PrintComparison(n, tiled, naive);
  }
  return 0;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
