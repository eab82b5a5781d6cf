#include "worker/attempt_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/schema/checkpoint_bundle.h"
#include "core/schema/disk_space.h"
#include "core/schema/job_protocol.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;
constexpr char kOutputsDir[] = ".tailsweep-outputs";
constexpr int64_t kMib = int64_t{1} << 20;
// A job directory walked for artifacts is not walked past this many entries.
constexpr int64_t kMaxWalkEntries = 200000;

int64_t SizeOf(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<int64_t>(st.st_size);
}

// Appends bytes [from, from + n) of `fd` to `gz`.
bool CopyRange(int fd, int64_t from, int64_t n, gzFile gz) {
  std::string buffer(static_cast<size_t>(std::min<int64_t>(n, kMib)), '\0');
  while (n > 0) {
    const ssize_t got = ::pread(fd, buffer.data(),
                                static_cast<size_t>(std::min<int64_t>(
                                    n, static_cast<int64_t>(buffer.size()))),
                                static_cast<off_t>(from));
    if (got <= 0) return false;
    if (gzwrite(gz, buffer.data(), static_cast<unsigned>(got)) != got) {
      return false;
    }
    from += got;
    n -= got;
  }
  return true;
}

// The gzip of the log at `path` (whole, or head and tail of max_bytes in
// all) into `out`; false when it cannot be read or written.
bool GzipLog(const std::string& path, int64_t size, int64_t max_bytes,
             const std::string& out, bool* cut) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  gzFile gz = gzopen(out.c_str(), "wb6");
  bool ok = gz != nullptr;
  *cut = size > max_bytes;
  if (ok && !*cut) {
    ok = CopyRange(fd, 0, size, gz);
  } else if (ok) {
    const int64_t half = max_bytes / 2;
    const std::string marker = CutMarker(size - 2 * half, size);
    ok = CopyRange(fd, 0, half, gz) &&
         gzwrite(gz, marker.data(), static_cast<unsigned>(marker.size())) ==
             static_cast<int>(marker.size()) &&
         CopyRange(fd, size - half, half, gz);
  }
  if (gz != nullptr && gzclose(gz) != Z_OK) ok = false;
  ::close(fd);
  return ok;
}

// Whether the relative path is one of the worker's own (checkpoints, the
// gzip copies, bundles, the child's protocol files).
bool WorkersOwn(const std::string& rel) {
  const std::string first = rel.substr(0, rel.find('/'));
  return first == kOutputsDir || first == kCheckpointDirName ||
         first == kCheckpointBundleDirName;
}

void AddArtifacts(const std::string& dir, const RunOutputs& outputs,
                  AttemptFiles* out) {
  std::vector<std::pair<std::string, int64_t>> matched;
  std::error_code ec;
  int64_t walked = 0;
  const fs::path root(dir);
  for (fs::recursive_directory_iterator it(root, ec), end;
       !ec && it != end && walked < kMaxWalkEntries; it.increment(ec)) {
    ++walked;
    const std::string rel = fs::relative(it->path(), root, ec).generic_string();
    std::error_code e2;
    if (it->is_symlink(e2) || !it->is_regular_file(e2) || WorkersOwn(rel)) {
      continue;  // (a symlinked directory is not entered either)
    }
    for (const std::string& glob : outputs.artifacts) {
      if (!ArtifactMatches(glob, rel)) continue;
      matched.emplace_back(rel, SizeOf(it->path().string()));
      break;
    }
  }
  std::sort(matched.begin(), matched.end());
  const int64_t cap = outputs.artifacts_max_mib * kMib;
  int64_t total = 0;
  for (const auto& [rel, size] : matched) {
    if (size < 0) continue;
    if (!CheckArtifactGlob(rel).ok()) {
      out->notes.push_back(absl::StrCat("artifact ", rel,
                                        " not uploaded: its path is longer "
                                        "than 256 characters"));
      continue;
    }
    if (total + size > cap) {
      out->notes.push_back(absl::StrCat(
          "artifact ", rel, " (", Megabytes(size),
          ") not uploaded: it would take the job's artifacts past "
          "artifacts_max_mib (",
          outputs.artifacts_max_mib, " MiB; ", Megabytes(total), " taken)"));
      continue;
    }
    total += size;
    out->files.push_back(
        {"artifact", rel, (root / rel).string(), size, false, false});
  }
}

}  // namespace

std::string CutMarker(int64_t cut_bytes, int64_t total_bytes) {
  return absl::StrCat("\n[tailsweep: ", cut_bytes, " bytes cut here of ",
                      total_bytes,
                      " (logs_max_mib keeps the head and the tail)]\n");
}

bool HasAttemptFiles(const std::string& dir, const RunOutputs& outputs) {
  return !outputs.artifacts.empty() ||
         SizeOf(JobPath(dir, kStdoutFileName)) > 0 ||
         SizeOf(JobPath(dir, kStderrFileName)) > 0;
}

AttemptFiles PrepareAttemptFiles(const std::string& dir,
                                 const RunOutputs& outputs) {
  AttemptFiles out;
  AddArtifacts(dir, outputs, &out);
  // What was left out is said in the job's own log, where its author looks
  // (`tailsweep logs`, and the stderr tail of its report).
  if (!out.notes.empty()) {
    std::ofstream err(JobPath(dir, kStderrFileName), std::ios::app);
    for (const std::string& note : out.notes) {
      err << "[tailsweep-worker] " << note << "\n";
    }
  }
  const std::string gz_dir = JobPath(dir, kOutputsDir);
  std::error_code ec;
  fs::create_directories(gz_dir, ec);
  std::vector<AttemptFile> logs;
  for (const auto& [name, file] : {std::pair{"stdout", kStdoutFileName},
                                   std::pair{"stderr", kStderrFileName}}) {
    const std::string path = JobPath(dir, file);
    const int64_t size = SizeOf(path);
    if (size <= 0) continue;
    const std::string gz = JobPath(gz_dir, absl::StrCat(name, ".gz"));
    bool cut = false;
    if (!GzipLog(path, size, outputs.logs_max_mib * kMib, gz, &cut)) {
      out.notes.push_back(
          absl::StrCat(name, " not uploaded: it could not be compressed"));
      continue;
    }
    logs.push_back({"log", name, gz, size, cut, true});
  }
  out.files.insert(out.files.begin(), logs.begin(), logs.end());
  return out;
}

}  // namespace tailsweep
