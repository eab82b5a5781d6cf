#include "worker/job_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/schema/checkpoint_bundle.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "core/schema/lease_file.h"
#include "core/schema/metrics_line.h"

namespace tailsweep {
absl::Status LocalJobFiles::MakeJobDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(JobPath(dir, kCheckpointDirName), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

FileChunk LocalJobFiles::ReadFrom(const std::string& path, int64_t offset,
                                  int64_t max_bytes) {
  FileChunk out;
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return out;
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    out.exists = true;
    out.inode = st.st_ino;
    out.size = static_cast<int64_t>(st.st_size);
    const int64_t n = std::min(out.size - offset, max_bytes);
    if (n > 0) {
      out.bytes.resize(static_cast<size_t>(n));
      const ssize_t got = ::pread(fd, out.bytes.data(), out.bytes.size(),
                                  static_cast<off_t>(offset));
      out.bytes.resize(got > 0 ? static_cast<size_t>(got) : 0);
    }
  }
  ::close(fd);
  return out;
}

absl::StatusOr<CheckpointFile> LocalJobFiles::NewestCheckpoint(
    const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string checkpoints = JobPath(dir, kCheckpointDirName);
  absl::StatusOr<CheckpointDir> newest =
      NewestCompleteCheckpointDir(checkpoints);
  if (!newest.ok()) return NewestCheckpointIn(checkpoints);
  const std::string bundles = JobPath(dir, kCheckpointBundleDirName);
  const std::string bundle = JobPath(bundles, CheckpointFileName(newest->step));
  std::error_code ec;
  if (!fs::exists(bundle, ec)) {
    fs::create_directories(bundles, ec);
    if (absl::Status s = PackCheckpointDir(newest->path, bundle); !s.ok()) {
      return s;
    }
    // Older checkpoints (complete or not) and their bundles are not needed
    // once a newer one is complete.
    for (const auto& entry : fs::directory_iterator(checkpoints, ec)) {
      absl::StatusOr<int64_t> step =
          CheckpointDirStep(entry.path().filename().string());
      if (step.ok() && *step < newest->step) fs::remove_all(entry.path(), ec);
    }
    for (const auto& entry : fs::directory_iterator(bundles, ec)) {
      if (entry.path().string() != bundle) fs::remove(entry.path(), ec);
    }
  }
  return CheckpointFile{newest->step, bundle};
}

absl::Status LocalJobFiles::UnpackCheckpoints(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string checkpoints = JobPath(dir, kCheckpointDirName);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints, ec)) {
    const std::string path = entry.path().string();
    if (!CheckpointStepOf(entry.path().filename().string()).ok() ||
        !IsCheckpointBundle(path)) {
      continue;
    }
    if (absl::StatusOr<std::string> top =
            UnpackCheckpointBundle(path, checkpoints);
        !top.ok()) {
      return top.status();
    }
    fs::remove(path, ec);
  }
  return absl::OkStatus();
}

FinishedJob LocalJobFiles::ReadFinished(const std::string& kind,
                                        const std::string& dir, int exit_code) {
  return ReadFinishedJob(kind, dir, exit_code);
}

std::string LocalJobFiles::StderrTail(const std::string& dir,
                                      int64_t max_bytes) {
  return ReadFileTail(JobPath(dir, kStderrFileName), max_bytes);
}

absl::Status LocalJobFiles::WriteLease(const std::string& dir,
                                       int64_t run_until_ms) {
  return WriteLeaseFile(dir, run_until_ms);
}

absl::Status LocalJobFiles::KeepMetricsUpTo(const std::string& path,
                                            int64_t step) {
  return tailsweep::KeepMetricsUpTo(path, step);
}

bool LocalJobFiles::HasAttemptFiles(const std::string& dir,
                                    const RunOutputs& outputs) {
  return tailsweep::HasAttemptFiles(dir, outputs);
}

AttemptFiles LocalJobFiles::PrepareAttemptFiles(const std::string& dir,
                                                const RunOutputs& outputs) {
  return tailsweep::PrepareAttemptFiles(dir, outputs);
}

}  // namespace tailsweep
