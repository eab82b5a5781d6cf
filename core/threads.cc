#include "core/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

namespace tailsweep {

void SetComputeThreads(int threads) {
  at::set_num_threads(threads);
  // Looked up at run time: the BLAS behind libblas.so.3 is chosen by the
  // system, and only OpenBLAS has this entry point. See threads.h for why 1.
  using SetFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetFn>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(1);
  }
}

}  // namespace tailsweep
