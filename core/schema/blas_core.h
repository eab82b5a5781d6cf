#ifndef TAILSWEEP_CORE_SCHEMA_BLAS_CORE_H_
#define TAILSWEEP_CORE_SCHEMA_BLAS_CORE_H_

// OpenBLAS picks its matrix kernels by the CPU's model number. A model
// newer than the library falls back to its oldest x86-64 kernels: Debian
// 12's OpenBLAS 0.3.21 on an Emerald Rapids machine (family 6, model 207,
// AVX-512) runs "Prescott" SSE3 code, and a training step takes 2.3x as
// long as with the machine's own kernels (kernel_steps_bench, N = 512:
// 0.26 s against 0.11 s). OPENBLAS_CORETYPE, read when the library loads,
// names the kernels to use instead. This file says when and which.

#include <string>
#include <string_view>

namespace tailsweep {

// The core type to ask for, given the one OpenBLAS chose and what the CPU
// supports (AVX-512 F/BW/VL/DQ; AVX2 with FMA): "SkylakeX" or "Haswell"
// when `chosen` is one of OpenBLAS's pre-AVX2 cores (a fallback, or a
// machine that really has nothing newer) and the CPU has more; else "".
// Pure.
std::string BlasCoreFor(std::string_view chosen, bool avx512, bool avx2_fma);

// BlasCoreFor for this machine and the OpenBLAS this process loads (the
// one already loaded, else libopenblas.so.0): "" when OPENBLAS_CORETYPE is
// already set (the user's choice stands), when there is no OpenBLAS, or
// when its choice is right.
std::string BlasCoreCorrection();

// Sets OPENBLAS_CORETYPE in this process's environment when
// BlasCoreCorrection() asks for a core, so every child started afterwards
// loads OpenBLAS with it; returns the core set, or "". Call before any
// thread starts (setenv).
std::string CorrectBlasCoreForChildren();

// For a program that computes with OpenBLAS itself (it is loaded before
// main runs): when BlasCoreCorrection() asks for a core, sets it and
// re-executes this program with the same arguments (/proc/self/exe), once;
// returns only when nothing needs changing or the re-exec failed.
void CorrectBlasCoreOrReexec(char** argv);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_BLAS_CORE_H_
