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
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/measure.h"
#include "core/kernel_attention.h"
#include "core/number_text.h"
#include "core/threads.h"

namespace tailsweep {
namespace {

int Main(int argc, char** argv) {
  std::vector<int64_t> sizes = {2048, 8192};
  int64_t d = 64, heads = 4;
  int reps = 3;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  AttentionKernel kernel = AttentionKernel::kSoftmax;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--sizes") {
      sizes.clear();
      for (absl::string_view s : absl::StrSplit(value, ',')) {
        int64_t n = 0;
        ok = ok && absl::SimpleAtoi(s, &n) && n >= 1;
        sizes.push_back(n);
      }
    } else if (flag == "--d") {
      ok = absl::SimpleAtoi(value, &d) && d >= 1;
    } else if (flag == "--heads") {
      ok = absl::SimpleAtoi(value, &heads) && heads >= 1 && d % heads == 0;
    } else if (flag == "--reps") {
      ok = absl::SimpleAtoi(value, &reps) && reps >= 1;
    } else if (flag == "--threads") {
      ok = absl::SimpleAtoi(value, &threads) && threads >= 1;
    } else if (flag == "--kernel") {
      auto parsed = ParseAttentionKernel(value);
      ok = parsed.ok();
      if (ok) kernel = *parsed;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "bad flag or value: %s %s; allowed: --sizes, --d, --heads "
                   "(dividing d), --kernel, --reps, --threads\n",
                   flag.c_str(), value.c_str());
      return 2;
    }
  }
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
