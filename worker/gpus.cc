#include "worker/gpus.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "process/child_process.h"

namespace tailsweep {
namespace {

constexpr int64_t kListTimeoutMs = 10000;
constexpr size_t kMaxQuotedChars = 80;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The first line of `text`, cut to a readable length.
std::string FirstLine(absl::string_view text) {
  std::string line(absl::StripAsciiWhitespace(
      text.substr(0, std::min(text.find('\n'), text.size()))));
  if (line.size() > kMaxQuotedChars)
    line = line.substr(0, kMaxQuotedChars) + "...";
  return line;
}

// The comma-separated fields of each non-empty line, trimmed; an error
// naming the line when one does not have `columns` of them.
absl::StatusOr<std::vector<std::vector<std::string>>> Rows(
    absl::string_view csv, size_t columns, absl::string_view expected) {
  std::vector<std::vector<std::string>> rows;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<std::string> fields;
    for (absl::string_view f : absl::StrSplit(line, ',')) {
      fields.emplace_back(absl::StripAsciiWhitespace(f));
    }
    if (fields.size() != columns || fields[0].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("nvidia-smi printed '", FirstLine(line), "' (line ",
                       number, "); expected ", expected));
    }
    rows.push_back(std::move(fields));
  }
  return rows;
}

// A number of the query's output; "[N/A]" and the like are NaN.
double Number(const std::string& field) {
  double value = 0;
  if (absl::SimpleAtod(field, &value) && std::isfinite(value)) return value;
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

GpuTool RunGpuTool(std::string scratch_dir) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  return [scratch_dir = std::move(scratch_dir), calls](
             const std::vector<std::string>& argv,
             int64_t timeout_ms) -> absl::StatusOr<std::string> {
    std::error_code ec;
    std::filesystem::create_directories(scratch_dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot make ", scratch_dir, " for ", argv[0],
                       "'s output: ", ec.message()));
    }
    const std::string base =
        absl::StrCat(scratch_dir, "/gpu-query-", calls->fetch_add(1) % 4);
    ChildProcessOptions options;
    options.search_path = true;
    options.process_group = true;
    absl::StatusOr<ChildProcess> child =
        ChildProcess::Start(argv, {}, base + ".out", base + ".err", options);
    if (!child.ok()) return child.status();
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(timeout_ms);
    std::optional<int> code;
    while (!(code = child->Poll())) {
      if (std::chrono::steady_clock::now() >= until) {
        child->Signal(SIGKILL);
        while (!child->Poll()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return absl::DeadlineExceededError(
            absl::StrCat(argv[0], " did not answer in ", timeout_ms / 1000.0,
                         " s (killed); is the driver wedged?"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string err = FirstLine(ReadFile(base + ".err"));
    if (*code == 127) {
      return absl::NotFoundError(absl::StrCat(argv[0], " not found on PATH"));
    }
    if (*code != 0) {
      return absl::UnknownError(absl::StrCat(argv[0], " exited with status ",
                                             *code, err.empty() ? "" : ": ",
                                             err));
    }
    return ReadFile(base + ".out");
  };
}

absl::StatusOr<std::vector<GpuInfo>> ParseGpuList(absl::string_view csv) {
  absl::StatusOr<std::vector<std::vector<std::string>>> rows =
      Rows(csv, 4, "index, uuid, name, memory.total (MiB)");
  if (!rows.ok()) return rows.status();
  std::vector<GpuInfo> out;
  for (std::vector<std::string>& r : *rows) {
    GpuInfo gpu;
    int index = 0;
    if (!absl::SimpleAtoi(r[0], &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("nvidia-smi printed GPU index '", FirstLine(r[0]),
                       "'; expected a whole number"));
    }
    gpu.index = std::move(r[0]);
    gpu.uuid = std::move(r[1]);
    gpu.name = std::move(r[2]);
    const double mib = Number(r[3]);
    gpu.memory_mib = std::isnan(mib) ? 0 : static_cast<int64_t>(mib);
    out.push_back(std::move(gpu));
  }
  return out;
}

absl::StatusOr<std::vector<GpuSample>> ParseGpuSamples(absl::string_view csv) {
  absl::StatusOr<std::vector<std::vector<std::string>>> rows =
      Rows(csv, 4, "index, uuid, utilization.gpu (%), memory.used (MiB)");
  if (!rows.ok()) return rows.status();
  std::vector<GpuSample> out;
  for (std::vector<std::string>& r : *rows) {
    out.push_back(
        {std::move(r[0]), std::move(r[1]), Number(r[2]), Number(r[3])});
  }
  return out;
}

AutoDevices ChooseAutoDevices(
    const Allocation& allocation,
    const absl::StatusOr<std::vector<GpuInfo>>& found) {
  AutoDevices out;
  auto cpu = [&](std::string why) {
    out.devices = {"cpu"};
    out.why = absl::StrCat("cpu: ", why);
    return out;
  };
  if (allocation.gpus && allocation.gpus->empty()) {
    return cpu(absl::StrCat(allocation.gpus_from, " gives this worker no GPU"));
  }
  if (!found.ok()) {
    return cpu(absl::StrCat(
        allocation.gpus
            ? absl::StrCat(allocation.gpus_from, " names GPUs, but ")
            : "",
        "no NVIDIA driver answered (", found.status().message(), ")"));
  }
  if (found->empty()) return cpu("nvidia-smi lists no GPU");
  std::vector<std::string> named;
  if (allocation.gpus) {
    for (const std::string& entry : *allocation.gpus) {
      std::string seen = absl::StrCat(entry, " (not listed by nvidia-smi)");
      for (const GpuInfo& g : *found) {
        if (g.index == entry || g.uuid == entry) {
          seen =
              absl::StrCat(g.index, " ", g.name, " (", g.memory_mib, " MiB)");
        }
      }
      named.push_back(std::move(seen));
    }
  } else {
    for (const GpuInfo& g : *found) {
      named.push_back(
          absl::StrCat(g.index, " ", g.name, " (", g.memory_mib, " MiB)"));
    }
  }
  for (size_t i = 0; i < named.size(); ++i) {
    out.devices.push_back(absl::StrCat("cuda:", i));
  }
  out.why = absl::StrCat(named.size(), " GPU(s) ",
                         allocation.gpus
                             ? absl::StrCat("given by ", allocation.gpus_from)
                             : std::string("from nvidia-smi"),
                         ": ", absl::StrJoin(named, ", "));
  return out;
}

AutoDevices FindAutoDevices(const Allocation& allocation, const GpuTool& tool) {
  absl::StatusOr<std::string> answer =
      tool({kNvidiaSmi, kListQuery, kCsvFormat}, kListTimeoutMs);
  if (!answer.ok()) return ChooseAutoDevices(allocation, answer.status());
  return ChooseAutoDevices(allocation, ParseGpuList(*answer));
}

std::vector<MetricPoint> GpuPointsFor(const Allocation& allocation,
                                      const std::vector<std::string>& devices,
                                      const std::vector<GpuSample>& samples,
                                      int64_t step) {
  std::vector<MetricPoint> out;
  int n = 0;
  for (const std::string& device : devices) {
    if (device == "cpu") continue;
    const int local = n++;
    absl::StatusOr<std::string> entry = VisibleDeviceFor(allocation, device);
    if (!entry.ok()) continue;
    for (const GpuSample& s : samples) {
      if (s.index != *entry && s.uuid != *entry) continue;
      if (!std::isnan(s.util_percent)) {
        out.push_back(
            {absl::StrCat(kGpuUtilMetric, local), step, s.util_percent});
      }
      if (!std::isnan(s.memory_used_mib)) {
        out.push_back(
            {absl::StrCat(kGpuMemMetric, local), step, s.memory_used_mib});
      }
      break;
    }
  }
  return out;
}

GpuSampler::GpuSampler(GpuTool tool, int64_t period_ms)
    : tool_(std::move(tool)), period_ms_(period_ms) {
  thread_ = std::thread([this] { Loop(); });
}

GpuSampler::~GpuSampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int64_t GpuSampler::Latest(std::vector<GpuSample>* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (seq_ > 0) *out = latest_;
  return seq_;
}

void GpuSampler::Loop() {
  bool failing = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    // At most one period: a slower driver only makes samples rarer.
    absl::StatusOr<std::string> answer =
        tool_({kNvidiaSmi, kSampleQuery, kCsvFormat},
              std::max<int64_t>(period_ms_, 1000));
    absl::StatusOr<std::vector<GpuSample>> samples =
        answer.ok() ? ParseGpuSamples(*answer)
                    : absl::StatusOr<std::vector<GpuSample>>(answer.status());
    if (!samples.ok() && !failing) {
      spdlog::warn("GPU sampling: {}; the jobs' system/gpu_* metrics wait",
                   std::string(samples.status().message()));
    } else if (samples.ok() && failing) {
      spdlog::info("GPU sampling answers again");
    }
    failing = !samples.ok();
    lock.lock();
    if (samples.ok()) {
      latest_ = std::move(*samples);
      ++seq_;
    }
    wake_.wait_for(lock, std::chrono::milliseconds(period_ms_),
                   [this] { return stop_; });
  }
}

}  // namespace tailsweep
