#include "proto/run_dir.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tailsweep {

std::string RunPath(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

absl::StatusOr<ChannelOptions> RunDirChannel(const std::string& dir,
                                             bool as_worker) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run directory ", dir, ": not a directory"));
  }
  const std::string path = RunPath(dir, kRunAddress);
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        path, " is not there yet: the run's coordinator has not started"));
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string address(absl::StripAsciiWhitespace(text.str()));
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port <= 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": '", address, "' is not HOST:PORT"));
  }
  ChannelOptions out;
  out.address = address;
  out.token_file = RunPath(dir, kRunToken);
  if (as_worker) {
    const std::string worker = RunPath(dir, kRunWorkerToken);
    std::error_code ec;
    if (std::filesystem::exists(worker, ec)) out.token_file = worker;
  }
  out.tls_ca = RunPath(dir, kRunCaCert);
  return out;
}

}  // namespace tailsweep
