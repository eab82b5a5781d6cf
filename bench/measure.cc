#include "bench/measure.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace tailsweep::bench {
namespace {

// VmRSS or VmHWM of this process, in bytes.
double StatusField(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream fields(line.substr(field.size() + 1));
      double kb = 0;
      fields >> kb;
      return kb * 1024.0;
    }
  }
  return 0;
}

void ResetPeak() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

Measurement MeasureInChild(const std::function<void()>& setup,
                           const std::function<std::string()>& run,
                           int repetitions) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    setup();
    ResetPeak();
    const double baseline = StatusField("VmRSS");
    std::vector<double> times;
    std::string note;
    for (int r = 0; r < repetitions; ++r) {
      const auto start = std::chrono::steady_clock::now();
      note = run();
      times.push_back(std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
    std::sort(times.begin(), times.end());
    const double peak = StatusField("VmHWM") - baseline;
    std::ostringstream out;
    out.precision(17);
    out << times[times.size() / 2] << " " << peak << " " << note;
    const std::string text = out.str();
    if (write(fds[1], text.data(), text.size()) < 0) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  ssize_t got;
  while ((got = read(fds[0], buf, sizeof(buf))) > 0) text.append(buf, got);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Measurement m;
  std::istringstream in(text);
  m.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         static_cast<bool>(in >> m.seconds >> m.peak_bytes);
  std::getline(in >> std::ws, m.note);
  return m;
}

void AddCommonFlags(CLI::App& app, CommonFlags* flags) {
  flags->threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--reps", flags->reps, "Timed repetitions (median reported)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", flags->threads, "Compute threads")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void PrintComparison(int64_t n, const Measurement& tiled,
                     const Measurement& naive) {
  for (const auto& [name, m] :
       {std::pair{"tiled", tiled}, std::pair{"naive", naive}}) {
    std::printf("%8lld  %-7s %10.4f %12.1f %26s%s\n", static_cast<long long>(n),
                name, m.seconds, m.peak_bytes / (1 << 20), m.note.c_str(),
                m.ok ? "" : "  (failed)");
  }
  std::printf("%8lld  ratio   time %.3fx, memory %.2f%% of naive\n",
              static_cast<long long>(n), tiled.seconds / naive.seconds,
              100.0 * tiled.peak_bytes / naive.peak_bytes);
}

}  // namespace tailsweep::bench
