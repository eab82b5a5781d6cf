#ifndef TAILSWEEP_CORE_THREADS_H_
#define TAILSWEEP_CORE_THREADS_H_

// Sets the compute thread count of this process: LibTorch's intra-op
// (OpenMP) threads do all parallel work, and OpenBLAS, when it is the BLAS
// behind Debian's libblas.so.3, runs each product on the calling thread.
// OpenBLAS's own pthread pool, nested inside torch's parallel loops, spins
// on sched_yield and fights torch for the cores: measured on 2 cores, one
// training step at N = 2048 took 1.12 s with both pools at 2 threads and
// 0.18 s like this (bench/train_step_bench). REQUIRES: threads >= 1.
namespace tailsweep {

void SetComputeThreads(int threads);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_THREADS_H_
