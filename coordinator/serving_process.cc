#include "coordinator/serving_process.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

namespace tailsweep {

void PrepareServingProcess(bool tune_malloc) {
  if (rlimit files; getrlimit(RLIMIT_NOFILE, &files) == 0 &&
                    files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tune_malloc &&
      (tunables == nullptr || std::strstr(tunables, "malloc.") == nullptr)) {
    // Setting either one turns off glibc's own adjustment of both.
    mallopt(M_MMAP_THRESHOLD, 16 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
  }
}

}  // namespace tailsweep
