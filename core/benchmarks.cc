#include "core/benchmarks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/instance.h"
#include "core/marginal.h"
#include "core/schema/file_util.h"

namespace tailsweep {

const std::vector<Benchmark>& Benchmarks() {
  static const std::vector<Benchmark>* all = [] {
    auto* out = new std::vector<Benchmark>;
    // Gaussian matrix inverse is unidentifiable (science.md): not one.
    const std::pair<OperatorKind, MarginalFamily> tasks[] = {
        {OperatorKind::kShearedSwap, MarginalFamily::kMirroredPareto},
        {OperatorKind::kMatrixInverse, MarginalFamily::kMirroredPareto},
        {OperatorKind::kShearedSwap, MarginalFamily::kGaussian}};
    for (const auto& [op, marginal] : tasks) {
      for (const auto& [n, instances] :
           {std::pair<int64_t, int64_t>{512, 16},
            std::pair<int64_t, int64_t>{16384, 64}}) {
        out->push_back({absl::StrCat(OperatorName(op), "/",
                                     MarginalFamilyName(marginal), "/n", n),
                        op, marginal, n, instances, instances});
      }
    }
    return out;
  }();
  return *all;
}

namespace {

std::string Names() {
  std::string names;
  for (const Benchmark& b : Benchmarks()) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", b.name, " (",
                    b.min_instances, "+ instances)");
  }
  return names;
}

}  // namespace

absl::StatusOr<Benchmark> BenchmarkNamed(const std::string& name) {
  for (const Benchmark& b : Benchmarks()) {
    if (b.name == name) return b;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("no benchmark named '", name, "'; there are: ", Names()));
}

absl::StatusOr<Benchmark> BenchmarkOf(const JobConfig& config) {
  const std::string task = absl::StrCat(OperatorName(config.op), "/",
                                        MarginalFamilyName(config.marginal));
  for (const Benchmark& b : Benchmarks()) {
    if (b.op != config.op || b.marginal != config.marginal ||
        b.n_points != config.n_points) {
      continue;
    }
    if (config.eval_instances < b.min_instances) {
      return absl::InvalidArgumentError(absl::StrCat(
          "benchmark ", b.name, " judges at least ", b.min_instances,
          " instances (eval_instances is ", config.eval_instances, ")"));
    }
    if (config.reference_trials < b.min_reference_trials) {
      return absl::InvalidArgumentError(absl::StrCat(
          "benchmark ", b.name, " takes at least ", b.min_reference_trials,
          " reference trials (reference_trials is ", config.reference_trials,
          ")"));
    }
    if (!(config.prior == InstancePrior{})) {
      return absl::InvalidArgumentError(absl::StrCat(
          "benchmark ", b.name,
          " draws from the default instance prior (a changed tail_index, "
          "scale, mean or sd range is another task)"));
    }
    return b;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("no named benchmark is ", task, " at n_points ",
                   config.n_points, "; there are: ", Names()));
}

JobConfig BenchmarkConfig(const Benchmark& b, int64_t instances,
                          int64_t reference_trials) {
  JobConfig c;
  c.op = b.op;
  c.marginal = b.marginal;
  c.n_points = b.n_points;
  c.eval_instances = instances;
  c.reference_trials = reference_trials;
  return c;
}

std::string BenchmarkHash(const Benchmark& b, int64_t instances,
                          int64_t reference_trials) {
  const JobConfig c = BenchmarkConfig(b, instances, reference_trials);
  const InstancePrior& p = c.prior;
  const std::string definition = absl::StrFormat(
      "tailsweep-benchmark-1;%s;%s;%s;n=%d;instances=%d;reference=%d;"
      "batch=%d;a=%.17g..%.17g;lam1=%.17g..%.17g;lam2=%.17g..%.17g;"
      "m=%.17g..%.17g;s1=%.17g..%.17g;s2=%.17g..%.17g",
      b.name, OperatorName(c.op), MarginalFamilyName(c.marginal), c.n_points,
      c.eval_instances, c.reference_trials, c.batch, p.tail_index.min,
      p.tail_index.max, p.scale1.min, p.scale1.max, p.scale2.min, p.scale2.max,
      p.mean.min, p.mean.max, p.sd1.min, p.sd1.max, p.sd2.min, p.sd2.max);
  return Sha256Hex(definition).substr(0, 16);
}

uint64_t SealedSeed(const std::string& secret, const std::string& hash) {
  const std::string digest =
      Sha256Hex(absl::StrCat("tailsweep-sealed-seed;", secret, ";", hash));
  uint64_t seed = 0;
  absl::SimpleHexAtoi(digest.substr(0, 16), &seed);
  return seed >> 2;  // eval_seed + 1 seeds the reference: no overflow
}

std::string DefaultSecretPath() {
  const char* data = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  const std::string base =
      data != nullptr && data[0] != '\0'
          ? std::string(data)
          : absl::StrCat(home != nullptr ? home : ".", "/.local/share");
  return absl::StrCat(base, "/tailsweep/bench-seed");
}

std::string SecretFingerprint(const std::string& secret) {
  return Sha256Hex(absl::StrCat("tailsweep-seed-fingerprint;", secret))
      .substr(0, 16);
}

absl::StatusOr<std::string> LoadOrMakeSecret(const std::string& path) {
  if (absl::StatusOr<std::string> text = ReadFile(path); text.ok()) {
    const std::string secret(absl::StripAsciiWhitespace(*text));
    if (secret.size() < 32) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": a seed file holds at least 32 characters (it has ",
          secret.size(), "); remove it to make a new one"));
    }
    return secret;
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(),
                                      ec);
  unsigned char bytes[32];
  const int random = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  const bool read_all = random >= 0 && read(random, bytes, sizeof bytes) ==
                                           static_cast<ssize_t>(sizeof bytes);
  if (random >= 0) close(random);
  if (!read_all) {
    return absl::InternalError("cannot read /dev/urandom for a seed file");
  }
  std::string secret;
  for (unsigned char b : bytes) absl::StrAppendFormat(&secret, "%02x", b);
  // Made readable by its owner only, and never replaced: O_EXCL.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                      S_IRUSR | S_IWUSR);
  if (fd < 0) {
    if (errno == EEXIST) return LoadOrMakeSecret(path);  // made meanwhile
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": cannot make the seed file: ", std::strerror(errno)));
  }
  const std::string line = secret + "\n";
  const bool wrote = write(fd, line.data(), line.size()) ==
                         static_cast<ssize_t>(line.size()) &&
                     fsync(fd) == 0;
  close(fd);
  if (!wrote) {
    return absl::InternalError(absl::StrCat(path, ": cannot write it"));
  }
  return secret;
}

}  // namespace tailsweep
