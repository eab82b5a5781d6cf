#include "core/schema/blas_core.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tailsweep {
namespace {

// OpenBLAS's fallback for a CPU model it does not know is corrected to the
// newest kernels the CPU can run; a choice of its own that is AVX2 or newer
// stands, and so does a machine that has nothing newer.
TEST(BlasCoreTest, AFallbackCoreIsCorrectedToWhatTheCpuSupports) {
  EXPECT_EQ(BlasCoreFor("Prescott", /*avx512=*/true, /*avx2_fma=*/true),
            "SkylakeX");
  EXPECT_EQ(BlasCoreFor("Prescott", false, true), "Haswell");
  EXPECT_EQ(BlasCoreFor("Nehalem", false, true), "Haswell");
  EXPECT_EQ(BlasCoreFor("Sandybridge", true, true), "SkylakeX");
  EXPECT_EQ(BlasCoreFor("Prescott", false, false), "");
  for (const char* own : {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                          "SapphireRapids", "Excavator"}) {
    EXPECT_EQ(BlasCoreFor(own, true, true), "") << own;
  }
  EXPECT_EQ(BlasCoreFor("", true, true), "");  // no OpenBLAS
}

TEST(BlasCoreTest, ACoreTypeTheUserSetIsKept) {
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  EXPECT_EQ(BlasCoreCorrection(), "");
  EXPECT_EQ(CorrectBlasCoreForChildren(), "");
  EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), "Haswell");
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace
}  // namespace tailsweep
