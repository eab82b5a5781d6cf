// A driver for the fuzz targets without libFuzzer (any compiler): runs
// every file of the given directories through LLVMFuzzerTestOneInput, then
// `--mutations N` inputs made from them by random byte edits (a fixed seed,
// so a failure reproduces). CTest runs it over each target's corpus and
// regressions; real fuzzing uses libFuzzer (fuzz/README.md).
//
//   <target>_replay [--mutations N] [--seed S] DIR...

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, written to ./crash-input by the crash handler.
const std::string* current = nullptr;

void OnCrash(int sig) {
  if (current != nullptr) {
    const int fd = ::open("crash-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!::write(fd, current->data(), current->size());
      ::close(fd);
    }
    static const char kMessage[] =
        "replay: crashed; the input is in ./crash-input (add it to "
        "fuzz/regressions/TARGET/ once fixed)\n";
    (void)!::write(2, kMessage, sizeof(kMessage) - 1);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void Run(const std::string& input) {
  current = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()),
                         input.size());
  current = nullptr;
}

std::string Mutate(std::string s, std::mt19937_64& rng,
                   const std::vector<std::string>& pool) {
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:  // flip a byte
        if (!s.empty()) s[at % s.size()] = static_cast<char>(rng());
        break;
      case 1:  // insert a byte
        s.insert(s.begin() + at, static_cast<char>(rng()));
        break;
      case 2:  // erase a run
        if (!s.empty()) s.erase(at % s.size(), 1 + rng() % 16);
        break;
      case 3:  // duplicate a run
        if (!s.empty()) {
          const size_t from = rng() % s.size();
          s.insert(at, s.substr(from, 1 + rng() % 64));
        }
        break;
      case 4: {  // splice in a piece of another input
        const std::string& other = pool[rng() % pool.size()];
        if (!other.empty()) {
          const size_t from = rng() % other.size();
          s.insert(at, other.substr(from, 1 + rng() % 64));
        }
        break;
      }
      default:  // an interesting character
        s.insert(s.begin() + at, "\n:[]{},-#'\"\\0\xff 9e"[rng() % 18]);
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    std::signal(sig, OnCrash);
  }
  int64_t mutations = 0;
  uint64_t seed = 1;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--mutations") == 0 && i + 1 < argc) {
      mutations = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: %s [--mutations N] [--seed S] DIR...\n", argv[0]);
      return 0;
    } else {
      std::error_code ec;
      for (const auto& entry :
           std::filesystem::directory_iterator(argv[i], ec)) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        inputs.push_back(text.str());
      }
    }
  }
  if (inputs.empty()) inputs.push_back("");
  for (const std::string& input : inputs) Run(input);
  std::mt19937_64 rng(seed);
  for (int64_t m = 0; m < mutations; ++m) {
    Run(Mutate(inputs[rng() % inputs.size()], rng, inputs));
  }
  std::printf("%zu inputs and %lld mutations: no crash\n", inputs.size(),
              static_cast<long long>(mutations));
  return 0;
}
