#include "cli/slurm.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/schema/file_util.h"
#include "core/schema/sweep_spec.h"
#include "process/child_process.h"
#include "proto/run_dir.h"

namespace tailsweep::cli {
namespace fs = std::filesystem;
namespace {

constexpr char kCoordinatorScript[] = "coordinator.sbatch";
constexpr char kWorkersScript[] = "workers.sbatch";

// argv[0] as a path: itself when it has a slash, else the first match in
// PATH that is executable.
absl::StatusOr<std::string> Which(const std::string& name) {
  if (absl::StrContains(name, '/')) return name;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path ? path : "/usr/bin:/bin", ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat("'", name, "' is not in PATH"));
}

absl::StatusOr<std::string> RandomHex(int bytes) {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string raw(static_cast<size_t>(bytes), '\0');
  if (!in.read(raw.data(), bytes)) {
    return absl::InternalError("cannot read /dev/urandom");
  }
  std::string hex;
  for (unsigned char c : raw)
    absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2));
  return hex;
}

absl::Status Chmod(const std::string& path, fs::perms perms) {
  std::error_code ec;
  fs::permissions(path, perms, fs::perm_options::replace, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("chmod ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// A file only its owner reads (the run directory is 0700 as well).
absl::Status WriteSecret(const std::string& path, const std::string& text) {
  if (absl::Status s = WriteFileAtomic(path, text); !s.ok()) return s;
  return Chmod(path, fs::perms::owner_read | fs::perms::owner_write);
}

// Runs `argv`; a failure (not found, or a non-zero exit) quotes its stderr.
absl::StatusOr<std::string> RunOrSay(const ProgramRunner& run,
                                     const std::vector<std::string>& argv) {
  absl::StatusOr<ProgramResult> r = run(argv);
  if (!r.ok()) {
    return absl::Status(r.status().code(),
                        absl::StrCat(argv[0], ": ", r.status().message()));
  }
  if (r->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("`", absl::StrJoin(argv, " "), "` exited with ",
                     r->exit_code, ": ", absl::StripAsciiWhitespace(r->err)));
  }
  return r->out;
}

// sbatch --parsable prints "ID" or "ID;CLUSTER".
absl::StatusOr<std::string> SubmitJob(const ProgramRunner& run,
                                      const std::vector<std::string>& argv) {
  absl::StatusOr<std::string> out = RunOrSay(run, argv);
  if (!out.ok()) return out.status();
  std::string id(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(*out, ';'))[0]));
  uint64_t number = 0;
  if (!absl::SimpleAtoi(id, &number)) {
    return absl::InternalError(
        absl::StrCat("sbatch printed '", *out, "', not a job id"));
  }
  return id;
}

// The Slurm options both jobs share.
void AddCommon(const SlurmUpOptions& o, std::vector<std::string>* argv) {
  if (!o.partition.empty()) {
    argv->insert(argv->end(), {"--partition", o.partition});
  }
  argv->push_back(absl::StrCat("--export=ALL,TAILSWEEP_BIN_DIR=", o.bin_dir));
}

}  // namespace

ProgramRunner SystemProgramRunner() {
  return [](const std::vector<std::string>& argv)
             -> absl::StatusOr<ProgramResult> {
    absl::StatusOr<std::string> path = Which(argv.at(0));
    if (!path.ok()) return path.status();
    std::vector<std::string> args = argv;
    args[0] = *path;
    const fs::path dir = fs::temp_directory_path();
    absl::StatusOr<std::string> tag = RandomHex(8);
    if (!tag.ok()) return tag.status();
    const std::string out = (dir / ("tailsweep-" + *tag + ".out")).string();
    const std::string err = (dir / ("tailsweep-" + *tag + ".err")).string();
    absl::StatusOr<ChildProcess> child =
        ChildProcess::Start(args, {}, out, err);
    if (!child.ok()) return child.status();
    std::optional<int> code;
    while (!(code = child->Poll())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ProgramResult result{*code, ReadFile(out).value_or(""),
                         ReadFile(err).value_or("")};
    std::error_code ec;
    fs::remove(out, ec);
    fs::remove(err, ec);
    if (*code == 127 && result.err.empty()) {
      return absl::NotFoundError(absl::StrCat("cannot run ", *path));
    }
    return result;
  };
}

namespace {

// The run directory's tokens, CA and the spec: the file as it is, or the
// spec with its overrides.
absl::Status WriteRunFiles(const SlurmUpOptions& o, const SweepSpec& spec,
                           const ProgramRunner& run, const std::string& dir) {
  // The admin's token (the CLI's) and the workers' own.
  for (const char* name : {kRunToken, kRunWorkerToken}) {
    absl::StatusOr<std::string> token = RandomHex(32);
    if (!token.ok()) return token.status();
    if (absl::Status s = WriteSecret(RunPath(dir, name), *token + "\n");
        !s.ok()) {
      return s;
    }
  }
  const std::string ca_key = RunPath(dir, kRunCaKey);
  absl::StatusOr<std::string> ca =
      RunOrSay(run, {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                     "-keyout", ca_key, "-out", RunPath(dir, kRunCaCert),
                     "-days", "365", "-subj", "/CN=tailsweep run CA", "-addext",
                     "basicConstraints=critical,CA:TRUE", "-addext",
                     "keyUsage=critical,keyCertSign,cRLSign"});
  if (!ca.ok()) return ca.status();
  if (absl::Status s =
          Chmod(ca_key, fs::perms::owner_read | fs::perms::owner_write);
      !s.ok()) {
    return s;
  }
  return WriteFileAtomic(RunPath(dir, kRunSpec), spec.text);
}

// The sbatch command lines of the two jobs.
std::vector<std::string> CoordinatorJob(const SlurmUpOptions& o,
                                        const std::string& dir) {
  std::vector<std::string> coordinator = {
      "sbatch",     "--parsable",
      "--job-name", "tailsweep-coordinator",
      "--output",   RunPath(dir, kRunCoordinatorLog),
      "--time",     o.coordinator_time};
  AddCommon(o, &coordinator);
  coordinator.insert(
      coordinator.end(),
      {(fs::path(o.scripts_dir) / kCoordinatorScript).string(), dir});
  return coordinator;
}

std::vector<std::string> WorkersJob(const SlurmUpOptions& o,
                                    const std::string& dir) {
  std::vector<std::string> workers = {
      "sbatch",     "--parsable",
      "--job-name", "tailsweep-workers",
      "--array",    absl::StrCat("0-", o.workers - 1),
      "--output",   RunPath(dir, "workers-%A_%a.log"),
      "--time",     o.time};
  if (o.gpus_per_node > 0) {
    workers.push_back(absl::StrCat("--gres=gpu:", o.gpus_per_node));
  }
  if (o.cpus_per_worker > 0) {
    workers.push_back(absl::StrCat("--cpus-per-task=", o.cpus_per_worker));
  }
  AddCommon(o, &workers);
  workers.insert(workers.end(),
                 {(fs::path(o.scripts_dir) / kWorkersScript).string(), dir});
  return workers;
}

}  // namespace

absl::StatusOr<SlurmJobIds> SlurmUp(const SlurmUpOptions& o,
                                    const ProgramRunner& run) {
  // The spec first: its errors need no cluster.
  absl::StatusOr<SweepSpec> spec = LoadSweepSpec(o.spec_path);
  if (!spec.ok()) return spec.status();
  if (!o.overrides.empty()) {
    spec = ApplyOverrides(*spec, o.overrides);
    if (!spec.ok()) return spec.status();
  }
  if (absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
      !jobs.ok()) {
    return jobs.status();
  }
  for (const char* script : {kCoordinatorScript, kWorkersScript}) {
    if (!fs::exists(fs::path(o.scripts_dir) / script)) {
      return absl::NotFoundError(absl::StrCat(
          "--scripts ", o.scripts_dir, ": no ", script,
          " (deploy/slurm/ of the source tree, or share/tailsweep/slurm/ "
          "of an install)"));
    }
  }
  std::error_code ec;
  if (fs::exists(o.run_dir, ec) && !fs::is_empty(o.run_dir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run directory ", o.run_dir,
        " exists and is not empty: see it with `tailsweep --run-dir ",
        o.run_dir, " status`, or pick another with --run-dir"));
  }
  fs::create_directories(o.run_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run directory ", o.run_dir, ": cannot create (", ec.message(), ")"));
  }
  // Until both jobs are submitted, a failure (no sbatch or openssl here, a
  // refused submission) leaves no run directory behind to block a retry.
  bool submitted = false;
  absl::Cleanup remove_on_error = [&] {
    std::error_code ignored;
    if (!submitted) fs::remove_all(o.run_dir, ignored);
  };
  if (absl::Status s = Chmod(o.run_dir, fs::perms::owner_all); !s.ok()) {
    return s;
  }
  const std::string dir = fs::absolute(o.run_dir).lexically_normal().string();
  if (absl::Status s = WriteRunFiles(o, *spec, run, dir); !s.ok()) return s;

  SlurmJobIds ids;
  absl::StatusOr<std::string> id = SubmitJob(run, CoordinatorJob(o, dir));
  if (!id.ok()) return id.status();
  ids.coordinator = *id;

  id = SubmitJob(run, WorkersJob(o, dir));
  if (!id.ok()) {
    (void)run({"scancel", ids.coordinator});
    return absl::Status(
        id.status().code(),
        absl::StrCat(id.status().message(), " (the coordinator job ",
                     ids.coordinator, " was cancelled)"));
  }
  ids.workers = *id;
  submitted = true;
  if (absl::Status s =
          WriteFileAtomic(RunPath(dir, kRunSlurmJobs),
                          absl::StrCat("coordinator ", ids.coordinator,
                                       "\nworkers ", ids.workers, "\n"));
      !s.ok()) {
    return s;
  }
  return ids;
}

absl::StatusOr<SlurmJobIds> ReadSlurmJobIds(const std::string& run_dir) {
  const std::string path = RunPath(run_dir, kRunSlurmJobs);
  if (!fs::exists(path)) {
    return absl::NotFoundError(
        absl::StrCat(path, " is missing: not a `tailsweep slurm up` run"));
  }
  SlurmJobIds ids;
  for (absl::string_view line :
       absl::StrSplit(ReadFile(path).value_or(""), '\n')) {
    std::vector<std::string> kv =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (kv.size() != 2) continue;
    if (kv[0] == "coordinator") ids.coordinator = kv[1];
    if (kv[0] == "workers") ids.workers = kv[1];
  }
  if (ids.coordinator.empty() || ids.workers.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected 'coordinator ID' and 'workers ID'"));
  }
  return ids;
}

}  // namespace tailsweep::cli
