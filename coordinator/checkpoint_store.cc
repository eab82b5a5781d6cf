#include "coordinator/checkpoint_store.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/schema/checkpoint_name.h"
#include "proto/checkpoint_transfer.h"

namespace tailsweep {

absl::StatusOr<int64_t> CheckpointStore::Upload(
    const v1::CheckpointHeader& header,
    const std::function<bool(v1::CheckpointChunk*)>& next) {
  if (absl::Status s = store_->CheckLease(header.worker_id(), header.job_id(),
                                          header.epoch());
      !s.ok()) {
    return s;
  }
  if (absl::StatusOr<int64_t> step = CheckpointStepOf(header.name());
      !step.ok()) {
    return step.status();
  } else if (*step != header.step()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint name ", header.name(), " is not step ", header.step()));
  }
  // The job id is known to the store, so it is one of our hex digests.
  const std::filesystem::path job_dir =
      std::filesystem::path(data_dir_) / "checkpoints" / header.job_id();
  const std::string relative = absl::StrCat(
      "checkpoints/", header.job_id(), "/", header.epoch(), "/", header.name());
  const std::string path =
      (std::filesystem::path(data_dir_) / relative).string();
  if (absl::Status s = transfer::ReceiveFile(header, next, path); !s.ok()) {
    return s;
  }
  CheckpointRow row;
  row.step = header.step();
  row.file = relative;
  row.bytes = header.bytes();
  row.sha256 = header.sha256();
  absl::StatusOr<CheckpointRow> stored = store_->RecordCheckpoint(
      header.worker_id(), header.job_id(), header.epoch(), row);
  std::error_code ec;
  if (!stored.ok()) {
    std::filesystem::remove(path, ec);
    return stored.status();
  }
  // Keep only the file the store points to.
  const std::filesystem::path keep =
      std::filesystem::path(data_dir_) / stored->file;
  for (const auto& epoch_dir :
       std::filesystem::directory_iterator(job_dir, ec)) {
    for (const auto& file :
         std::filesystem::directory_iterator(epoch_dir.path(), ec)) {
      if (file.path() != keep && file.path().extension() == ".pt") {
        std::filesystem::remove(file.path(), ec);
      }
    }
  }
  return stored->step;
}

absl::Status CheckpointStore::Download(
    const std::string& worker, const std::string& job_id, int64_t epoch,
    const std::function<bool(const v1::CheckpointChunk&)>& send) {
  if (absl::Status s = store_->CheckLease(worker, job_id, epoch); !s.ok())
    return s;
  absl::StatusOr<CheckpointRow> row = store_->Checkpoint(job_id);
  if (!row.ok()) return row.status();
  v1::CheckpointHeader header;
  header.set_job_id(job_id);
  header.set_epoch(epoch);
  header.set_step(row->step);
  header.set_name(std::filesystem::path(row->file).filename().string());
  header.set_bytes(row->bytes);
  header.set_sha256(row->sha256);
  return transfer::SendFile(
      (std::filesystem::path(data_dir_) / row->file).string(), header, send);
}

}  // namespace tailsweep
