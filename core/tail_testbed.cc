#include "core/tail_testbed.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/energy_1d.h"
#include "core/statistics.h"

namespace tailsweep {

double SplicedPareto::Seam() const {
  return std::pow(1.0 - seam_quantile, -1.0 / reference_index);
}

double SplicedPareto::Survival(double z) const {
  if (z < 1.0) return 1.0;
  const double z0 = Seam();
  if (z <= z0) return std::pow(z, -reference_index);
  return (1.0 - seam_quantile) *
         std::pow(1.0 + reference_index * (z - z0) / (index * z0), -index);
}

double SplicedPareto::Density(double z) const {
  if (z < 1.0) return 0.0;
  const double z0 = Seam();
  if (z <= z0) return reference_index * std::pow(z, -reference_index - 1.0);
  const double base = 1.0 + reference_index * (z - z0) / (index * z0);
  return (1.0 - seam_quantile) * reference_index / z0 *
         std::pow(base, -index - 1.0);
}

double SplicedPareto::Quantile(double u) const {
  if (u <= seam_quantile) return std::pow(1.0 - u, -1.0 / reference_index);
  const double z0 = Seam();
  const double s = (1.0 - u) / (1.0 - seam_quantile);
  return z0 + index * z0 / reference_index * (std::pow(s, -1.0 / index) - 1.0);
}

namespace {

absl::Status Validate(const TailsConfig& c) {
  if (c.indices.empty() || c.seams.empty() || c.budgets.empty()) {
    return absl::InvalidArgumentError(
        "indices, seams and budgets must each list at least one value");
  }
  bool has_reference = false;
  for (double a : c.indices) {
    if (!(a > 0) || !std::isfinite(a)) {
      return absl::InvalidArgumentError(
          absl::StrCat("index must be > 0 (got ", a, ")"));
    }
    has_reference |= std::fabs(a - c.reference_index) < 1e-9;
  }
  if (!has_reference) {
    return absl::InvalidArgumentError(
        absl::StrCat("the index grid must contain the reference index ",
                     c.reference_index, " (noise units are relative to it)"));
  }
  for (double q : c.seams) {
    if (!(q > 0 && q < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("seam quantile must be in (0, 1) (got ", q, ")"));
    }
  }
  for (int64_t n : c.budgets) {
    if (n < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("budget must be >= 2 (got ", n, ")"));
    }
  }
  if (c.trials < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("trials must be >= 2 (got ", c.trials, ")"));
  }
  return absl::OkStatus();
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// n sorted uniforms in (0, 1): (k + 1/2) 2^-53 for 53 random bits k.
std::vector<double> SortedUniforms(std::mt19937_64& rng, int64_t n) {
  std::vector<double> u(n);
  for (double& v : u) v = (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
  std::sort(u.begin(), u.end());
  return u;
}

struct TrialValues {
  std::vector<double> ed;  // [seam][index], flattened
  std::vector<double> w2;
};

// The stream of a trial depends on (seed, budget, trial) only, not on which
// other budgets or seams run beside it: a (seam, budget) job of a tails sweep
// gives the same rows as `lab tails` over all of them.
TrialValues RunTrial(const TailsConfig& c, int64_t n, int64_t trial) {
  std::mt19937_64 rng(SplitMix64(SplitMix64(c.seed) ^
                                 SplitMix64((static_cast<uint64_t>(n) << 24) ^
                                            static_cast<uint64_t>(trial))));
  const std::vector<double> u_ref = SortedUniforms(rng, n);
  const std::vector<double> u_cand = SortedUniforms(rng, n);
  std::vector<double> reference(n), candidate(n);
  for (int64_t i = 0; i < n; ++i) {
    reference[i] = std::pow(1.0 - u_ref[i], -1.0 / c.reference_index);
  }
  TrialValues out;
  for (double q : c.seams) {
    for (double a : c.indices) {
      const SplicedPareto law{c.reference_index, q, a};
      for (int64_t i = 0; i < n; ++i) candidate[i] = law.Quantile(u_cand[i]);
      out.ed.push_back(
          EnergyDistance1DSorted(candidate.data(), n, reference.data(), n));
      out.w2.push_back(
          Wasserstein2Sorted(candidate.data(), reference.data(), n));
    }
  }
  return out;
}

std::vector<double> Column(const std::vector<TrialValues>& trials,
                           std::vector<double> TrialValues::*field,
                           size_t cell) {
  std::vector<double> out;
  for (const TrialValues& t : trials) out.push_back((t.*field)[cell]);
  return out;
}

}  // namespace

absl::StatusOr<std::vector<TailsRow>> RunTailTestbed(const TailsConfig& c) {
  if (absl::Status s = Validate(c); !s.ok()) return s;
  const int64_t total = c.trials * static_cast<int64_t>(c.budgets.size());
  const int64_t wave = std::max<int64_t>(1, at::get_num_threads());
  int64_t done = 0;
  // results[budget][trial]
  std::vector<std::vector<TrialValues>> results(c.budgets.size());
  for (size_t b = 0; b < c.budgets.size(); ++b) {
    results[b].resize(c.trials);
    for (int64_t t0 = 0; t0 < c.trials; t0 += wave) {
      const int64_t t1 = std::min(c.trials, t0 + wave);
      at::parallel_for(t0, t1, 1, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          results[b][t] = RunTrial(c, c.budgets[b], t);
        }
      });
      done += t1 - t0;
      if (c.progress) c.progress(done, total);
    }
  }
  const size_t reference_slot =
      std::find_if(
          c.indices.begin(), c.indices.end(),
          [&](double a) { return std::fabs(a - c.reference_index) < 1e-9; }) -
      c.indices.begin();
  std::vector<TailsRow> rows;
  for (size_t s = 0; s < c.seams.size(); ++s) {
    for (size_t b = 0; b < c.budgets.size(); ++b) {
      const size_t ref_cell = s * c.indices.size() + reference_slot;
      const std::vector<double> ed_ref =
          Column(results[b], &TrialValues::ed, ref_cell);
      const std::vector<double> w2_ref =
          Column(results[b], &TrialValues::w2, ref_cell);
      for (size_t i = 0; i < c.indices.size(); ++i) {
        const size_t cell = s * c.indices.size() + i;
        const std::vector<double> ed =
            Column(results[b], &TrialValues::ed, cell);
        const std::vector<double> w2 =
            Column(results[b], &TrialValues::w2, cell);
        TailsRow row;
        row.seam = c.seams[s];
        row.n = c.budgets[b];
        row.index = c.indices[i];
        row.ed_mean = Mean(ed);
        row.ed_sd = SampleStd(ed);
        row.w2_mean = Mean(w2);
        row.w2_sd = SampleStd(w2);
        row.ed_noise = (row.ed_mean - Mean(ed_ref)) / SampleStd(ed_ref);
        row.w2_noise = (row.w2_mean - Mean(w2_ref)) / SampleStd(w2_ref);
        rows.push_back(row);
      }
    }
  }
  return rows;
}

}  // namespace tailsweep
