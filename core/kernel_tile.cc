#include "core/kernel_tile.h"

#include <cstdint>
#include <cstring>

namespace tailsweep {
namespace {

#define TAILSWEEP_INLINE inline __attribute__((always_inline))
// An AVX2 body next to the baseline one, picked when the program loads.
// Both give the same bits: the build has no FP contraction (ISO C++ mode)
// and no reassociation, so only the vector width differs.
#define TAILSWEEP_CLONES __attribute__((target_clones("avx2", "default")))

TAILSWEEP_INLINE float BitsToFloat(int32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TAILSWEEP_INLINE int32_t FloatToBits(float f) {
  int32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// exp(x) for x <= 0 (Cephes expf): x = n ln2 + r, |r| <= ln2 / 2, then a
// degree-5 polynomial for exp(r) scaled by 2^n built from its bits. Below
// -87.33 (where exp underflows to subnormals) it returns 2^-126.
TAILSWEEP_INLINE float ExpNonPositive(float x) {
  x = x < -87.3365447f ? -87.3365447f : x;
  // Round x / ln2 to the nearest integer by adding 1.5 * 2^23.
  const float shifter = 12582912.0f;
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  return y * BitsToFloat((static_cast<int32_t>(n) + 127) << 23);
}

// log(u) for finite u >= 1 (Cephes logf): u = m 2^k with m in
// [sqrt(1/2), sqrt(2)), then a degree-8 polynomial in m - 1.
TAILSWEEP_INLINE float LogAtLeastOne(float u) {
  const int32_t bits = FloatToBits(u);
  float k = static_cast<float>((bits >> 23) - 127);
  float m = BitsToFloat((bits & 0x007fffff) | 0x3f800000);  // [1, 2)
  const bool high = m > 1.41421356237f;
  m = high ? m * 0.5f : m;
  k = high ? k + 1.0f : k;
  const float x = m - 1.0f;
  const float z = x * x;
  float y = 7.0376836292e-2f;
  y = y * x - 1.1514610310e-1f;
  y = y * x + 1.1676998740e-1f;
  y = y * x - 1.2420140846e-1f;
  y = y * x + 1.4249322787e-1f;
  y = y * x - 1.6668057665e-1f;
  y = y * x + 2.0000714765e-1f;
  y = y * x - 2.4999993993e-1f;
  y = y * x + 3.3333331174e-1f;
  y = y * x * z;
  y = y - 2.12194440e-4f * k;
  y = y - 0.5f * z;
  return (x + y) + 0.693359375f * k;
}

template <AttentionKernel K>
TAILSWEEP_INLINE float Phi(float s) {
  const float e = ExpNonPositive(s < 0.0f ? s : 0.0f);
  const float p = s > 0.0f ? s : 0.0f;
  if constexpr (K == AttentionKernel::kQuadratic) return e + p + 0.5f * p * p;
  if constexpr (K == AttentionKernel::kLinear) return e + p;
  return e + LogAtLeastOne(1.0f + p);  // kLog
}

template <AttentionKernel K>
TAILSWEEP_INLINE float PhiPrime(float s) {
  const float e = ExpNonPositive(s < 0.0f ? s : 0.0f);
  const float p = s > 0.0f ? s : 0.0f;
  if constexpr (K == AttentionKernel::kQuadratic) return e + p;
  if constexpr (K == AttentionKernel::kLinear) return e;
  return s > 0.0f ? 1.0f / (1.0f + p) : e;  // kLog
}

// Sums a row in 8 fixed lanes (vectorised without reassociating), then the
// lanes in order: the same bits at every vector width.
TAILSWEEP_INLINE float RowSum(const float* x, int64_t n) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int k = 0; k < 8; ++k) lanes[k] += x[j + k];
  }
  for (int k = 0; j < n; ++j, ++k) lanes[k] += x[j];
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

template <AttentionKernel K>
TAILSWEEP_INLINE void PhiRowSumsBody(float* s, int64_t rows, int64_t cols,
                                     float* row_sums) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * cols;
    for (int64_t c = 0; c < cols; ++c) row[c] = Phi<K>(row[c]);
    row_sums[r] += RowSum(row, cols);
  }
}

template <AttentionKernel K>
TAILSWEEP_INLINE void PhiBody(const float* __restrict s, float* __restrict phi,
                              int64_t count) {
  for (int64_t i = 0; i < count; ++i) phi[i] = Phi<K>(s[i]);
}

template <AttentionKernel K>
TAILSWEEP_INLINE void ShiftedDerivativeBody(const float* __restrict s,
                                            const float* shift,
                                            float* __restrict g, int64_t rows,
                                            int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* srow = s + r * cols;
    float* grow = g + r * cols;
    const float shift_r = shift[r];
    for (int64_t c = 0; c < cols; ++c) {
      grow[c] = (grow[c] - shift_r) * PhiPrime<K>(srow[c]);
    }
  }
}

// One cloned entry point per kernel and pass (target_clones does not take
// templates reliably).
#define TAILSWEEP_TILE_FUNCTIONS(Name, K)                                      \
  TAILSWEEP_CLONES void PhiRowSums##Name(float* s, int64_t rows, int64_t cols, \
                                         float* row_sums) {                    \
    PhiRowSumsBody<K>(s, rows, cols, row_sums);                                \
  }                                                                            \
  TAILSWEEP_CLONES void Phi##Name(const float* s, float* phi, int64_t count) { \
    PhiBody<K>(s, phi, count);                                                 \
  }                                                                            \
  TAILSWEEP_CLONES void ShiftedDerivative##Name(const float* s,                \
                                                const float* shift, float* g,  \
                                                int64_t rows, int64_t cols) {  \
    ShiftedDerivativeBody<K>(s, shift, g, rows, cols);                         \
  }

TAILSWEEP_TILE_FUNCTIONS(Quadratic, AttentionKernel::kQuadratic)
TAILSWEEP_TILE_FUNCTIONS(Linear, AttentionKernel::kLinear)
TAILSWEEP_TILE_FUNCTIONS(Log, AttentionKernel::kLog)

}  // namespace

void KernelTilePhiRowSums(AttentionKernel kernel, float* s, int64_t rows,
                          int64_t cols, float* row_sums) {
  switch (kernel) {
    case AttentionKernel::kQuadratic:
      return PhiRowSumsQuadratic(s, rows, cols, row_sums);
    case AttentionKernel::kLinear:
      return PhiRowSumsLinear(s, rows, cols, row_sums);
    case AttentionKernel::kLog:
      return PhiRowSumsLog(s, rows, cols, row_sums);
    case AttentionKernel::kSoftmax:
      break;
  }
}

void KernelTilePhi(AttentionKernel kernel, const float* s, float* phi,
                   int64_t count) {
  switch (kernel) {
    case AttentionKernel::kQuadratic:
      return PhiQuadratic(s, phi, count);
    case AttentionKernel::kLinear:
      return PhiLinear(s, phi, count);
    case AttentionKernel::kLog:
      return PhiLog(s, phi, count);
    case AttentionKernel::kSoftmax:
      break;
  }
}

void KernelTileShiftedDerivative(AttentionKernel kernel, const float* s,
                                 const float* shift, float* g, int64_t rows,
                                 int64_t cols) {
  switch (kernel) {
    case AttentionKernel::kQuadratic:
      return ShiftedDerivativeQuadratic(s, shift, g, rows, cols);
    case AttentionKernel::kLinear:
      return ShiftedDerivativeLinear(s, shift, g, rows, cols);
    case AttentionKernel::kLog:
      return ShiftedDerivativeLog(s, shift, g, rows, cols);
    case AttentionKernel::kSoftmax:
      break;
  }
}

}  // namespace tailsweep
