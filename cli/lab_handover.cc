#include "cli/lab_handover.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tailsweep::cli {

std::string ToolExecutable(const char* name) {
  std::error_code ec;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside = self.parent_path() / name;
    if (access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return name;
}

namespace {

// The index of the first command word of `args` (past the top-level
// options and their values), with the --threads words before it into
// *threads; nullopt when there is none (or "--" comes first).
std::optional<size_t> CommandWord(
    const std::vector<std::string>& args,
    const std::function<bool(const std::string&)>& takes_value,
    std::vector<std::string>* threads) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") return std::nullopt;
    if (word.size() < 2 || word[0] != '-') return i;
    const bool has_value = word.find('=') == std::string::npos &&
                           takes_value(word) && i + 1 < args.size();
    if (absl::StartsWith(word, "--threads")) {
      threads->push_back(word);
      if (has_value) threads->push_back(args[i + 1]);
    }
    if (has_value) ++i;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<std::string>> LabArguments(
    const std::vector<std::string>& args,
    const std::function<bool(const std::string&)>& takes_value) {
  std::vector<std::string> out;
  const std::optional<size_t> at = CommandWord(args, takes_value, &out);
  if (!at || args[*at] != "lab") return std::nullopt;
  out.push_back("lab");
  out.insert(out.end(), args.begin() + *at + 1, args.end());
  return out;
}

std::optional<std::vector<std::string>> OptimizeArguments(
    const std::vector<std::string>& args,
    const std::function<bool(const std::string&)>& takes_value) {
  std::vector<std::string> threads;
  const std::optional<size_t> at = CommandWord(args, takes_value, &threads);
  if (!at || args[*at] != "optimize") return std::nullopt;
  return std::vector<std::string>(args.begin() + *at + 1, args.end());
}

absl::Status ExecOptimize(const std::vector<std::string>& args) {
  std::error_code ec;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (const std::filesystem::path& dir :
       {exe / "../share/tailsweep/python", exe / "../../python"}) {
    if (std::filesystem::exists(dir / "tailsweep" / "optimize.py", ec)) {
      const char* old = std::getenv("PYTHONPATH");
      const std::string path = dir.lexically_normal().string();
      setenv("PYTHONPATH",
             old == nullptr || *old == '\0'
                 ? path.c_str()
                 : absl::StrCat(path, ":", old).c_str(),
             1);
      break;
    }
  }
  std::vector<std::string> words = {"-m", "tailsweep.optimize"};
  words.insert(words.end(), args.begin(), args.end());
  return ExecTool("python3", words, "`optimize`",
                  "python3 (with python3-optuna)");
}

absl::Status ExecTool(const std::string& executable,
                      const std::vector<std::string>& args,
                      const std::string& command, const char* target) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(executable.c_str()));
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (executable.find('/') == std::string::npos) {
    execvp(executable.c_str(), argv.data());
  } else {
    execv(executable.c_str(), argv.data());
  }
  const int error = errno;
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot run ", executable, ": ", std::strerror(error), "; ", command,
      " needs ", target,
      " next to tailsweep or in PATH: `cmake --build build --target ", target,
      "` builds it; a release has it in its lab archive, unpacked over the "
      "release (docs/operations.md, \"Install without root\")"));
}

}  // namespace tailsweep::cli
