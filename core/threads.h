#ifndef TAILSWEEP_CORE_THREADS_H_
#define TAILSWEEP_CORE_THREADS_H_

// Sets the compute thread count of this process: LibTorch's intra-op
// threads and, when the process runs on OpenBLAS (Debian's libblas.so.3
// alternative), OpenBLAS's own pool, whose spinning threads otherwise compete
// with torch's. REQUIRES: threads >= 1.
namespace tailsweep {

void SetComputeThreads(int threads);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_THREADS_H_
