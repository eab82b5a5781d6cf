#include "core/checkpoint.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/file_util.h"

namespace tailsweep {
namespace {

std::string ConfigText(const JobConfig& config) {
  std::string out;
  for (const auto& [key, value] : JobConfigToKeyValues(config)) {
    absl::StrAppend(&out, key, "=", value, "\n");
  }
  return out;
}

absl::StatusOr<JobConfig> ParseConfigText(const std::string& text,
                                          const std::string& path) {
  JobConfig config;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (absl::Status s = SetJobKey(config, kv.first, kv.second); !s.ok()) {
      return absl::DataLossError(
          absl::StrCat(path, ": bad config in checkpoint: ", s.message()));
    }
  }
  return config;
}

torch::Tensor Scalar(int64_t v) { return torch::tensor({v}, torch::kLong); }

// Tensors land on `device`: a checkpoint written on CUDA opens on a CPU
// and the reverse.
absl::StatusOr<torch::serialize::InputArchive> OpenArchive(
    const std::string& path, torch::Device device) {
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such checkpoint"));
  }
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat(
        path, ": unreadable checkpoint: ", e.what_without_backtrace()));
  }
  return archive;
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int64_t step) {
  return (std::filesystem::path(dir) / CheckpointFileName(step)).string();
}

absl::Status SaveCheckpoint(const std::string& path, PointTransformer& model,
                            torch::optim::Optimizer& optimizer,
                            const TrainingState& state) {
  const std::filesystem::path target(path);
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  torch::serialize::OutputArchive archive, model_archive, optimizer_archive;
  model->save(model_archive);
  optimizer.save(optimizer_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("config", c10::IValue(ConfigText(state.config)));
  archive.write("step", Scalar(state.step));
  archive.write("data_rng_state", state.data_rng_state);
  archive.write("collapse_onset", Scalar(state.collapse_onset));
  archive.write("diverged_step", Scalar(state.diverged_step));
  const std::string temp = TempPathFor(path);
  archive.save_to(temp);
  return CommitFile(temp, path);
}

absl::StatusOr<JobConfig> ReadCheckpointConfig(const std::string& path) {
  absl::StatusOr<torch::serialize::InputArchive> archive =
      OpenArchive(path, torch::Device(torch::kCPU));
  if (!archive.ok()) return archive.status();
  c10::IValue text;
  if (!archive->try_read("config", text) || !text.isString()) {
    return absl::DataLossError(
        absl::StrCat(path, ": checkpoint has no config"));
  }
  return ParseConfigText(text.toStringRef(), path);
}

absl::StatusOr<TrainingState> LoadCheckpoint(
    const std::string& path, PointTransformer& model,
    torch::optim::Optimizer* optimizer) {
  absl::StatusOr<JobConfig> config = ReadCheckpointConfig(path);
  if (!config.ok()) return config.status();
  // Onto the model's device, where the optimizer's state must be too.
  const std::vector<torch::Tensor> parameters = model->parameters();
  const torch::Device device =
      parameters.empty() ? torch::Device(torch::kCPU) : parameters[0].device();
  absl::StatusOr<torch::serialize::InputArchive> archive =
      OpenArchive(path, device);
  if (!archive.ok()) return archive.status();
  TrainingState state;
  state.config = *config;
  try {
    torch::serialize::InputArchive model_archive, optimizer_archive;
    archive->read("model", model_archive);
    model->load(model_archive);
    if (optimizer != nullptr) {
      archive->read("optimizer", optimizer_archive);
      optimizer->load(optimizer_archive);
    }
    torch::Tensor t;
    archive->read("step", t);
    state.step = t.item<int64_t>();
    archive->read("data_rng_state", state.data_rng_state);
    // A CPU generator's state, whatever the model's device.
    state.data_rng_state = state.data_rng_state.to(torch::kCPU);
    archive->read("collapse_onset", t);
    state.collapse_onset = t.item<int64_t>();
    archive->read("diverged_step", t);
    state.diverged_step = t.item<int64_t>();
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat(
        path,
        ": checkpoint does not match the model: ", e.what_without_backtrace()));
  }
  return state;
}

}  // namespace tailsweep
