#include "core/schema/checkpoint_bundle.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/schema/file_util.h"

namespace tailsweep {
namespace {

namespace fs = std::filesystem;
constexpr char kMagic[] = "TAILSWEEP-BUNDLE 1\n";

absl::Status Damaged(const std::string& path, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("checkpoint bundle ", path, ": ", why));
}

// A relative path of plain components (no "", ".", ".." or absolute).
bool SafeRelative(absl::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<int64_t> CheckpointDirStep(absl::string_view name) {
  absl::string_view digits = name;
  int64_t step = 0;
  const bool ok = absl::ConsumePrefix(&digits, "step-") && !digits.empty() &&
                  digits.size() <= 18 &&
                  std::all_of(digits.begin(), digits.end(),
                              [](char c) { return absl::ascii_isdigit(c); }) &&
                  absl::SimpleAtoi(digits, &step) && step >= 1;
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint directory '", name, "': expected step-N (N >= 1)"));
  }
  return step;
}

absl::StatusOr<CheckpointDir> NewestCompleteCheckpointDir(
    const std::string& dir) {
  CheckpointDir newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code e2;
    if (!entry.is_directory(e2)) continue;
    absl::StatusOr<int64_t> step =
        CheckpointDirStep(entry.path().filename().string());
    if (!step.ok() || *step <= newest.step) continue;
    if (!fs::is_regular_file(entry.path() / kCheckpointCompleteMarker, e2)) {
      continue;
    }
    newest = {*step, entry.path().string()};
  }
  if (newest.step == 0) {
    return absl::NotFoundError(
        absl::StrCat("no complete checkpoint directory in ", dir));
  }
  return newest;
}

absl::Status PackCheckpointDir(const std::string& src, const std::string& out) {
  const fs::path root(src);
  const std::string top = root.filename().string();
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2) && !it->is_symlink(e2)) {
      files.push_back(it->path());
    }
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot read ", src, ": ", ec.message()));
  }
  std::sort(files.begin(), files.end());
  const std::string temp = TempPathFor(out);
  {
    std::ofstream o(temp, std::ios::binary | std::ios::trunc);
    if (!o) return absl::InternalError(absl::StrCat("cannot write ", temp));
    o << kMagic;
    for (const fs::path& f : files) {
      const std::string rel =
          (fs::path(top) / fs::relative(f, root)).generic_string();
      std::ifstream in(f, std::ios::binary);
      if (!in)
        return absl::InternalError(absl::StrCat("cannot read ", f.string()));
      const auto size = fs::file_size(f, ec);
      if (ec)
        return absl::InternalError(absl::StrCat("cannot stat ", f.string()));
      o << "F " << size << " " << rel << "\n";
      // (Streaming an empty file's buffer would mark `o` failed.)
      if (size > 0) o << in.rdbuf();
    }
    o << "E\n";
    if (!o.flush())
      return absl::InternalError(absl::StrCat("cannot write ", temp));
  }
  return CommitFile(temp, out);
}

bool IsCheckpointBundle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string first;
  std::getline(in, first);
  return in && first + "\n" == kMagic;
}

absl::Status UnpackCheckpointBundle(const std::string& bundle,
                                    const std::string& dest) {
  std::ifstream in(bundle, std::ios::binary);
  std::string line;
  if (!std::getline(in, line) || line + "\n" != kMagic) {
    return Damaged(bundle, "not a checkpoint bundle");
  }
  const fs::path staging =
      fs::path(dest) /
      absl::StrCat(".unpack-", fs::path(bundle).filename().string());
  std::error_code ec;
  fs::remove_all(staging, ec);
  std::string top;
  while (true) {
    if (!std::getline(in, line)) return Damaged(bundle, "truncated");
    if (line == "E") break;
    std::vector<std::string> parts =
        absl::StrSplit(line, absl::MaxSplits(' ', 2));
    int64_t size = -1;
    if (parts.size() != 3 || parts[0] != "F" ||
        !absl::SimpleAtoi(parts[1], &size) || size < 0 ||
        !SafeRelative(parts[2])) {
      return Damaged(bundle, absl::StrCat("bad entry '", line, "'"));
    }
    const std::string first(parts[2].substr(0, parts[2].find('/')));
    if (top.empty()) top = first;
    if (first != top || parts[2] == top) {
      return Damaged(bundle, "entries of more than one directory");
    }
    const fs::path target = staging / parts[2];
    fs::create_directories(target.parent_path(), ec);
    std::ofstream o(target, std::ios::binary | std::ios::trunc);
    std::string chunk;
    int64_t left = size;
    while (left > 0 && o) {
      chunk.resize(static_cast<size_t>(std::min<int64_t>(left, 1 << 20)));
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      if (in.gcount() != static_cast<std::streamsize>(chunk.size())) {
        return Damaged(bundle, "truncated");
      }
      o.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      left -= static_cast<int64_t>(chunk.size());
    }
    if (!o.flush())
      return absl::InternalError(
          absl::StrCat("cannot write ", target.string()));
  }
  if (top.empty()) return Damaged(bundle, "empty");
  const fs::path final_dir = fs::path(dest) / top;
  fs::remove_all(final_dir, ec);
  fs::rename(staging / top, final_dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot move the checkpoint into ",
                                            final_dir.string(), ": ",
                                            ec.message()));
  }
  fs::remove_all(staging, ec);
  return absl::OkStatus();
}

}  // namespace tailsweep
