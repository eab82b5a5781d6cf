#include "core/schema/disk_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tailsweep {

absl::StatusOr<int64_t> FreeBytes(const std::string& path) {
  std::filesystem::path at = std::filesystem::absolute(path);
  std::error_code ec;
  while (!std::filesystem::exists(at, ec) && at.has_parent_path() &&
         at != at.parent_path()) {
    at = at.parent_path();
  }
  struct statvfs fs;
  if (statvfs(at.c_str(), &fs) != 0) {
    return absl::InternalError(
        absl::StrCat("statvfs ", at.string(), ": ", std::strerror(errno)));
  }
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

std::string Megabytes(int64_t bytes) {
  return absl::StrFormat("%.1f MB", static_cast<double>(bytes) / 1e6);
}

}  // namespace tailsweep
