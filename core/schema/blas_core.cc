#include "core/schema/blas_core.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace tailsweep {
namespace {

// OpenBLAS's names for x86 cores older than AVX2 (the corename table of
// its driver/others/dynamic.c), its fallbacks among them.
constexpr std::string_view kPreAvx2[] = {
    "Unknown", "Katmai",      "Coppermine", "Northwood",    "Prescott",
    "Banias",  "Atom",        "Core2",      "Penryn",       "Dunnington",
    "Nehalem", "Athlon",      "Opteron",    "Opteron_SSE3", "Barcelona",
    "Nano",    "Sandybridge", "Bobcat",     "Bulldozer",    "Piledriver"};

std::string CoreNameOf(void* symbol) {
  if (symbol == nullptr) return "";
  const char* name = reinterpret_cast<char* (*)()>(symbol)();
  return name == nullptr ? "" : name;
}

std::string LoadedCoreName() {
  if (void* symbol = dlsym(RTLD_DEFAULT, "openblas_get_corename")) {
    return CoreNameOf(symbol);
  }
  // Not loaded by this program (the worker): load it to ask, copy the
  // answer, and unload it (its thread pool is not wanted here).
  void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return "";
  std::string name = CoreNameOf(dlsym(lib, "openblas_get_corename"));
  dlclose(lib);
  return name;
}

}  // namespace

std::string BlasCoreFor(std::string_view chosen, bool avx512, bool avx2_fma) {
  bool old = false;
  for (std::string_view core : kPreAvx2) old = old || chosen == core;
  if (!old) return "";
  if (avx512) return "SkylakeX";
  if (avx2_fma) return "Haswell";
  return "";
}

std::string BlasCoreCorrection() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool avx2_fma =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!avx512 && !avx2_fma) return "";
  return BlasCoreFor(LoadedCoreName(), avx512, avx2_fma);
#else
  return "";
#endif
}

std::string CorrectBlasCoreForChildren() {
  const std::string core = BlasCoreCorrection();
  if (!core.empty()) setenv("OPENBLAS_CORETYPE", core.c_str(), 0);
  return core;
}

void CorrectBlasCoreOrReexec(char** argv) {
  const std::string core = BlasCoreCorrection();
  if (core.empty()) return;
  // Set whether or not the exec works, so a second start never loops.
  setenv("OPENBLAS_CORETYPE", core.c_str(), 0);
  execv("/proc/self/exe", argv);
}

}  // namespace tailsweep
