#include "coordinator/checkpoint_store.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/file_util.h"
#include "proto/checkpoint_transfer.h"

namespace tailsweep {

CheckpointStore::CheckpointStore(Store* store, std::string data_dir,
                                 CheckpointBudget budget)
    : store_(store),
      data_dir_(std::move(data_dir)),
      budget_(std::move(budget)) {
  if (!budget_.free_bytes) budget_.free_bytes = FreeBytes;
}

int64_t CheckpointStore::DataBytes() const {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           std::filesystem::path(data_dir_) / "checkpoints", ec);
       !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      total += static_cast<int64_t>(it->file_size(ec));
    }
  }
  return total;
}

std::string CheckpointStore::OverJobCap(const v1::CheckpointHeader& header) {
  if (budget_.max_job_bytes <= 0) return "";
  // After the upload the job keeps it, its newest now (the fallback then)
  // and those kept for their metric: not its fallback now, unless kept.
  absl::StatusOr<std::vector<CheckpointRow>> last =
      store_->Checkpoints(header.job_id());
  absl::StatusOr<std::vector<CheckpointRow>> all =
      store_->Checkpoints(header.job_id(), /*with_kept=*/true);
  if (!last.ok() || !all.ok()) return "";  // none yet (or unknown): fits
  std::map<std::string, const CheckpointRow*> files;
  for (const CheckpointRow& row : *all) files.emplace(row.file, &row);
  if (last->size() > 1) {
    auto fallback = files.find((*last)[1].file);
    if (fallback != files.end() && !fallback->second->best) {
      files.erase(fallback);
    }
  }
  int64_t held = 0;
  std::string steps;
  for (const auto& [file, row] : files) {
    held += row->bytes;
    absl::StrAppend(&steps, steps.empty() ? "" : ", ", row->step);
  }
  if (held + header.bytes() <= budget_.max_job_bytes) return "";
  return absl::StrCat("with it the job's checkpoints would take ",
                      Megabytes(held + header.bytes()), " (steps ", steps,
                      " kept: ", Megabytes(held), "), over its cap of ",
                      Megabytes(budget_.max_job_bytes),
                      " (--max-job-checkpoint-bytes)");
}

absl::Status CheckpointStore::MakeRoom(const v1::CheckpointHeader& header) {
  const int64_t bytes = header.bytes();
  if (std::string why = OverJobCap(header); !why.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("checkpoint of job ", header.job_id(), " step ",
                     header.step(), " (", Megabytes(bytes), ") refused: ", why,
                     "; the job goes on, and later checkpoints are tried"));
  }
  auto over = [&]() -> std::string {
    if (budget_.max_data_bytes > 0) {
      const int64_t used = DataBytes();
      if (used + bytes > budget_.max_data_bytes) {
        return absl::StrCat("the data directory ", data_dir_, " holds ",
                            Megabytes(used), " of its ",
                            Megabytes(budget_.max_data_bytes),
                            " budget (--max-data-bytes)");
      }
    }
    if (budget_.min_free_bytes > 0) {
      const absl::StatusOr<int64_t> free = budget_.free_bytes(data_dir_);
      if (free.ok() && *free - bytes < budget_.min_free_bytes) {
        return absl::StrCat("it would leave less than ",
                            Megabytes(budget_.min_free_bytes), " free at ",
                            data_dir_, " (", Megabytes(*free),
                            " free), kept for the database (--min-free-bytes)");
      }
    }
    return "";
  };
  std::lock_guard<std::mutex> lock(room_mu_);
  std::string why = over();
  if (why.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<Store::SpareCheckpoint>> spare =
      store_->SpareCheckpoints();
  if (spare.ok()) {
    for (const Store::SpareCheckpoint& c : *spare) {
      if (!store_->ForgetCheckpoint(c).ok()) break;
      std::error_code ec;
      std::filesystem::remove(std::filesystem::path(data_dir_) / c.file, ec);
      spdlog::info("checkpoint {} of job {} pruned to make room ({})", c.file,
                   c.job_id, c.why);
      why = over();
      if (why.empty()) return absl::OkStatus();
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("checkpoint of job ", header.job_id(), " step ",
                   header.step(), " (", Megabytes(bytes), ") refused: ", why,
                   "; the job goes on, and later checkpoints are tried"));
}

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
  if (absl::Status room = MakeRoom(header); !room.ok()) {
    spdlog::warn("{}", std::string(room.message()));
    return room;
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
  // Kept for its metric too (`checkpoints: {keep: best | all}`).
  const v1::JobOutputs& k = header.keep();
  if ((k.keep() == "best" || k.keep() == "all") && stored->step == row.step &&
      std::isfinite(header.metric())) {
    CheckpointKeep policy;
    policy.keep = k.keep();
    policy.metric = k.keep_metric();
    policy.maximize = k.keep_maximize();
    policy.at_most = k.keep_at_most();
    absl::StatusOr<std::vector<std::string>> dropped = store_->KeepCheckpoint(
        header.job_id(), header.epoch(), row, header.metric(), policy);
    if (!dropped.ok()) {
      spdlog::warn("job {}: checkpoint of step {} not kept for its {}: {}",
                   header.job_id(), row.step, k.keep_metric(),
                   dropped.status().ToString());
    }
  }
  // Keep only the files the store points to: the newest, the one before
  // it (the fallback should the newest be found damaged) and those kept
  // for their metric.
  std::set<std::filesystem::path> keep;
  if (absl::StatusOr<std::vector<CheckpointRow>> rows =
          store_->Checkpoints(header.job_id(), /*with_kept=*/true);
      rows.ok()) {
    for (const CheckpointRow& r : *rows) {
      keep.insert(std::filesystem::path(data_dir_) / r.file);
    }
  } else {
    return stored->step;  // unsure what to keep: remove nothing
  }
  for (const auto& epoch_dir :
       std::filesystem::directory_iterator(job_dir, ec)) {
    for (const auto& file :
         std::filesystem::directory_iterator(epoch_dir.path(), ec)) {
      if (!keep.count(file.path()) && file.path().extension() == ".pt") {
        std::filesystem::remove(file.path(), ec);
      }
    }
  }
  return stored->step;
}

namespace {

v1::CheckpointHeader HeaderOf(const std::string& job_id, int64_t epoch,
                              const CheckpointRow& row) {
  v1::CheckpointHeader header;
  header.set_job_id(job_id);
  header.set_epoch(epoch);
  header.set_step(row.step);
  header.set_name(std::filesystem::path(row.file).filename().string());
  header.set_bytes(row.bytes);
  header.set_sha256(row.sha256);
  return header;
}

}  // namespace

absl::Status CheckpointStore::Download(
    const std::string& worker, const std::string& job_id, int64_t epoch,
    const std::function<bool(const v1::CheckpointChunk&)>& send) {
  if (absl::Status s = store_->CheckLease(worker, job_id, epoch); !s.ok())
    return s;
  absl::StatusOr<std::vector<CheckpointRow>> rows = store_->Checkpoints(job_id);
  if (!rows.ok()) return rows.status();
  // The newest intact one: SendFile checks each file against its recorded
  // size and SHA-256 before it sends a byte, so a file damaged on this
  // disk costs one checkpoint's work, not the job's.
  std::string damaged;
  for (const CheckpointRow& row : *rows) {
    const std::string path =
        (std::filesystem::path(data_dir_) / row.file).string();
    if (!damaged.empty()) {
      spdlog::warn("job {}: resumes from its checkpoint of step {} instead",
                   job_id, row.step);
      store_
          ->RecordEvent(job_id, epoch, "checkpoint_fallback",
                        absl::StrCat("resumed from step ", row.step,
                                     " (newer ones damaged: ", damaged, ")"))
          .IgnoreError();
    }
    absl::Status sent =
        transfer::SendFile(path, HeaderOf(job_id, epoch, row), send);
    if (sent.code() != absl::StatusCode::kDataLoss &&
        sent.code() != absl::StatusCode::kNotFound) {
      return sent;
    }
    const std::string why(sent.message());
    absl::StrAppend(&damaged, damaged.empty() ? "" : "; ", "step ", row.step,
                    " (", row.file, "): ", why);
    spdlog::error("job {}: checkpoint of step {} is damaged ({}): {}", job_id,
                  row.step, why,
                  &row == &rows->back() ? "no older one is kept"
                                        : "the one before it is tried");
    store_
        ->RecordEvent(job_id, epoch, "checkpoint_damaged",
                      absl::StrCat("step ", row.step, ": ", why))
        .IgnoreError();  // the log line says it too
  }
  return absl::NotFoundError(absl::StrCat("every stored checkpoint of job ",
                                          job_id, " is damaged (", damaged,
                                          "); it starts from step 0"));
}

absl::Status CheckpointStore::Fetch(
    const std::string& job_id, int64_t step,
    const std::function<bool(const v1::CheckpointChunk&)>& send) {
  absl::StatusOr<std::vector<CheckpointRow>> rows =
      store_->Checkpoints(job_id, /*with_kept=*/true);
  if (!rows.ok()) return rows.status();
  std::string steps;
  for (const CheckpointRow& row : *rows) {
    absl::StrAppend(&steps, steps.empty() ? "" : ", ", row.step);
  }
  for (const CheckpointRow& row : *rows) {
    if (step != 0 && row.step != step) continue;
    const std::string path =
        (std::filesystem::path(data_dir_) / row.file).string();
    absl::Status sent =
        transfer::SendFile(path, HeaderOf(job_id, 0, row), send);
    if (sent.code() == absl::StatusCode::kDataLoss ||
        sent.code() == absl::StatusCode::kNotFound) {
      return absl::DataLossError(
          absl::StrCat("the checkpoint of job ", job_id, " at step ", row.step,
                       " is damaged on the coordinator: ", sent.message(),
                       " (steps kept: ", steps, ")"));
    }
    return sent;
  }
  return absl::NotFoundError(absl::StrCat("job ", job_id,
                                          " has no checkpoint of step ", step,
                                          " (steps kept: ", steps, ")"));
}

int64_t CheckpointStore::RemoveFiles(const std::vector<std::string>& files,
                                     bool dry_run) {
  namespace fs = std::filesystem;
  const fs::path checkpoints = fs::path(data_dir_) / "checkpoints";
  int64_t bytes = 0;
  for (const std::string& file : files) {
    const fs::path path = fs::path(data_dir_) / file;
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (ec) continue;
    bytes += static_cast<int64_t>(size);
    if (dry_run) continue;
    fs::remove(path, ec);
    // Up to checkpoints/: the epoch's and the job's directories, if empty.
    for (fs::path dir = path.parent_path();
         dir != checkpoints && dir.has_parent_path() &&
         dir.string().size() > checkpoints.string().size();
         dir = dir.parent_path()) {
      if (!fs::is_empty(dir, ec) || ec || !fs::remove(dir, ec)) break;
    }
  }
  return bytes;
}

}  // namespace tailsweep
