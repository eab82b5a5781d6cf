#ifndef TAILSWEEP_TESTS_TESTING_RUN_COMMAND_H_
#define TAILSWEEP_TESTS_TESTING_RUN_COMMAND_H_

// Runs a shell command line for end-to-end tests of the executables and
// captures its exit code, stdout and stderr.

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tailsweep::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh empty directory under the system temp directory.
inline std::string MakeTempDir(const std::string& prefix) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

inline CommandResult RunCommand(const std::string& command_line) {
  const std::string dir = MakeTempDir("tailsweep_cmd_");
  const std::string out = dir + "/out", err = dir + "/err";
  const std::string full =
      command_line + " </dev/null >'" + out + "' 2>'" + err + "'";
  const int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_RUN_COMMAND_H_
