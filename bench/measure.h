#ifndef TAILSWEEP_BENCH_MEASURE_H_
#define TAILSWEEP_BENCH_MEASURE_H_

// Side-by-side measurement for benchmarks: runs a function in a forked child
// process and reports its wall time and its peak resident memory above the
// child's starting point (Linux: clear_refs resets VmHWM, then VmHWM is read
// after the run). Each measurement therefore starts from the same baseline
// and cannot see memory freed or cached by an earlier one.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tailsweep::bench {

struct Measurement {
  double seconds = 0;     // median wall time over the repetitions
  double peak_bytes = 0;  // peak RSS above the baseline, bytes
  std::string note;       // what the function printed back, if anything
  bool ok = false;
};

// `setup` runs once in the child before the baseline is taken (allocate
// inputs there); `run` is timed `repetitions` times. `run` returns a short
// string (e.g. the computed value) passed back in Measurement::note.
Measurement MeasureInChild(const std::function<void()>& setup,
                           const std::function<std::string()>& run,
                           int repetitions);

// Flags every benchmark takes: --reps (default 3) and --threads (default:
// the machine's cores; LibTorch's own default here is 1).
struct CommonFlags {
  int reps = 3;
  int threads = 1;
};
void AddCommonFlags(CLI::App& app, CommonFlags* flags);

// Prints the two rows "N tiled ..." and "N naive ..." (seconds, peak MiB,
// note) and a ratio line, the layout every side-by-side benchmark shares.
void PrintComparison(int64_t n, const Measurement& tiled,
                     const Measurement& naive);

}  // namespace tailsweep::bench

#endif  // TAILSWEEP_BENCH_MEASURE_H_
