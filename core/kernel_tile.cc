#include "core/kernel_tile.h"

#include <cstdint>
#include <cstring>

namespace tailsweep {
namespace {

#define TAILSWEEP_INLINE inline __attribute__((always_inline))
// AVX-512 and AVX2+FMA bodies next to the baseline one, picked when the
// program loads. No reassociation, so a body's bits do not depend on where a
// row starts; the FMA bodies contract multiply-adds, so their last bits
// differ from the baseline's (as OpenBLAS's do between CPUs): a given
// machine always gives the same bits.
#define TAILSWEEP_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

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

// phi(s) and phi'(s) from one exp (and, for log, one log).
template <AttentionKernel K>
TAILSWEEP_INLINE void PhiAndPrime(float s, float& phi, float& prime) {
  const float e = ExpNonPositive(s < 0.0f ? s : 0.0f);
  const float p = s > 0.0f ? s : 0.0f;
  if constexpr (K == AttentionKernel::kQuadratic) {
    prime = e + p;
    phi = prime + 0.5f * p * p;
  } else if constexpr (K == AttentionKernel::kLinear) {
    prime = e;
    phi = e + p;
  } else {  // kLog
    const float u = 1.0f + p;
    prime = s > 0.0f ? 1.0f / u : e;
    phi = e + LogAtLeastOne(u);
  }
}

// phi(s) alone: the same formula (the compiler drops phi'), so forward and
// backward passes agree bit for bit.
template <AttentionKernel K>
TAILSWEEP_INLINE float Phi(float s) {
  float phi, prime;
  PhiAndPrime<K>(s, phi, prime);
  return phi;
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
TAILSWEEP_INLINE void PhiAndDerivativeBody(float* __restrict s,
                                           float* __restrict phi,
                                           int64_t count) {
  for (int64_t i = 0; i < count; ++i) PhiAndPrime<K>(s[i], phi[i], s[i]);
}

// One cloned entry point per kernel and pass (target_clones does not take
// templates reliably).
#define TAILSWEEP_TILE_FUNCTIONS(Name, K)                                      \
  TAILSWEEP_CLONES void PhiRowSums##Name(float* s, int64_t rows, int64_t cols, \
                                         float* row_sums) {                    \
    PhiRowSumsBody<K>(s, rows, cols, row_sums);                                \
  }                                                                            \
  TAILSWEEP_CLONES void PhiAndDerivative##Name(float* s, float* phi,           \
                                               int64_t count) {                \
    PhiAndDerivativeBody<K>(s, phi, count);                                    \
  }

TAILSWEEP_TILE_FUNCTIONS(Quadratic, AttentionKernel::kQuadratic)
TAILSWEEP_TILE_FUNCTIONS(Linear, AttentionKernel::kLinear)
TAILSWEEP_TILE_FUNCTIONS(Log, AttentionKernel::kLog)

TAILSWEEP_CLONES void ShiftedProductBody(const float* __restrict factor,
                                         const float* shift,
                                         float* __restrict g, int64_t rows,
                                         int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* frow = factor + r * cols;
    float* grow = g + r * cols;
    const float shift_r = shift[r];
    for (int64_t c = 0; c < cols; ++c) grow[c] = (grow[c] - shift_r) * frow[c];
  }
}

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

void KernelTilePhiAndDerivative(AttentionKernel kernel, float* s, float* phi,
                                int64_t count) {
  switch (kernel) {
    case AttentionKernel::kQuadratic:
      return PhiAndDerivativeQuadratic(s, phi, count);
    case AttentionKernel::kLinear:
      return PhiAndDerivativeLinear(s, phi, count);
    case AttentionKernel::kLog:
      return PhiAndDerivativeLog(s, phi, count);
    case AttentionKernel::kSoftmax:
      break;
  }
}

void TileShiftedProduct(const float* factor, const float* shift, float* g,
                        int64_t rows, int64_t cols) {
  ShiftedProductBody(factor, shift, g, rows, cols);
}

}  // namespace tailsweep
