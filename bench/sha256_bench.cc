// Benchmark: SHA-256 of a checkpoint-sized stream, as DigestFile and the
// checkpoint transfers feed it (256 KiB parts), through Sha256 (OpenSSL's
// libcrypto in this build) and PortableSha256 (the code written out in
// core/schema/file_util.cc) side by side, with their digests compared.
//
//   build/bin/sha256_bench [--mib 2048] [--runs 3]

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/schema/file_util.h"

namespace tailsweep {
namespace {

// Seconds to hash `mib` MiB of `block` (repeated) in 256 KiB parts, and
// the digest.
template <typename Hasher>
double Hash(const std::string& block, int64_t mib, std::string* digest) {
  constexpr size_t kPart = 256 * 1024;
  const auto t0 = std::chrono::steady_clock::now();
  Hasher sha;
  int64_t left = mib << 20;
  size_t at = 0;
  while (left > 0) {
    const size_t n =
        std::min<size_t>({kPart, static_cast<size_t>(left), block.size() - at});
    sha.Update(absl::string_view(block.data() + at, n));
    left -= static_cast<int64_t>(n);
    at = (at + n) % block.size();
  }
  *digest = sha.Hex();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

int Main(int argc, char** argv) {
  CLI::App app{"SHA-256 throughput: OpenSSL against the portable code"};
  int64_t mib = 2048;
  int runs = 3;
  app.add_option("--mib", mib, "MiB to hash per run")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--runs", runs, "Runs of each (the median is shown)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // 64 MiB of random bytes, repeated: no file system in the figure.
  std::string block(64 << 20, '\0');
  std::mt19937_64 rng(49);
  for (size_t i = 0; i + 8 <= block.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(block.data() + i, &v, 8);
  }
  std::vector<double> fast, portable;
  std::string a, b;
  for (int r = 0; r < runs; ++r) {  // alternated
    fast.push_back(Hash<Sha256>(block, mib, &a));
    portable.push_back(Hash<PortableSha256>(block, mib, &b));
  }
  std::sort(fast.begin(), fast.end());
  std::sort(portable.begin(), portable.end());
  const double f = fast[fast.size() / 2], p = portable[portable.size() / 2];
  std::printf("SHA-256 of %lld MiB in 256 KiB parts, median of %d runs\n",
              static_cast<long long>(mib), runs);
  std::printf("  Sha256 (%s): %.2f s = %.0f MB/s\n", Sha256::Implementation(),
              f, mib * 1.048576 / f);
  std::printf("  PortableSha256: %.2f s = %.0f MB/s\n", p, mib * 1.048576 / p);
  std::printf("  ratio: %.2fx faster; digests %s\n", p / f,
              a == b ? "equal" : "DIFFER");
  return a == b ? 0 : 1;
}

}  // namespace
}  // namespace tailsweep

int main(int argc, char** argv) { return tailsweep::Main(argc, argv); }
