#include "cli/submit.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/render.h"
#include "core/schema/job_kinds.h"
#include "core/schema/submission.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep::cli {

namespace {

// The spec at `path` with `overrides`, checked and expanded here (what
// only this machine knows, a command's workdir and code hash, is resolved
// here, where the files are).
absl::StatusOr<Submission> Prepare(const std::string& path,
                                   const std::vector<std::string>& overrides) {
  absl::StatusOr<SweepSpec> spec = LoadSweepSpec(path);
  if (!spec.ok()) return spec.status();
  return PrepareSubmission(*std::move(spec), path, overrides,
                           std::filesystem::path(path).parent_path().string());
}

}  // namespace

// A word as /bin/sh would need it to read it back.
std::string Quoted(const std::string& word) {
  const bool plain =
      !word.empty() && word.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
                           "XYZ0123456789_-+=./:,@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char ch : word) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

absl::Status DryRunSpecFile(const std::string& path, std::ostream& out,
                            const std::vector<std::string>& overrides,
                            bool print_commands) {
  absl::StatusOr<Submission> p = Prepare(path, overrides);
  if (!p.ok()) return p.status();
  if (print_commands) {
    // Each job as a worker would start it (its job directory under a
    // worker's --work-dir, here WORK; attempt 1, nothing to resume).
    for (const JobSpec& job : p->jobs) {
      ChildJob child;
      child.lab_bin = "tailsweep-lab";
      child.kind = std::string(JobKindName(p->spec.kind));
      child.params = job.params;
      child.dir = JobPath("/WORK", job.id);
      child.job_id = job.id;
      absl::StatusOr<ChildCommand> command = ChildCommandFor(child);
      if (!command.ok()) return command.status();
      std::vector<std::string> words;
      for (const std::string& w : command->argv) words.push_back(Quoted(w));
      out << "job " << job.id.substr(0, 12)
          << "\n  argv: " << EscapeControl(absl::StrJoin(words, " ")) << "\n";
      if (!command->workdir.empty()) {
        out << "  workdir: " << EscapeControl(command->workdir) << "\n";
      }
      for (const std::string& e : command->env) {
        out << "  env: " << EscapeControl(e) << "\n";
      }
    }
  }
  out << "sweep " << EscapeControl(p->spec.name) << ": " << p->jobs.size()
      << " jobs (dry run, nothing submitted)\n";
  if (p->spec.search) {
    out << "a boundary search along " << EscapeControl(p->spec.search->key)
        << ": these are its first probes (both ends); the coordinator adds "
           "the next as results come\n";
  }
  if (!overrides.empty()) {
    out << "the spec as it would be submitted:\n"
        << EscapeControl(p->spec.text, Lines::kKeep);
  }
  return absl::OkStatus();
}

absl::Status SubmitSpecFile(Connection& c, const std::string& path,
                            std::ostream& out, std::string* name,
                            const std::vector<std::string>& overrides) {
  absl::StatusOr<Submission> prepared = Prepare(path, overrides);
  if (!prepared.ok()) return prepared.status();
  const SweepSpec* spec = &prepared->spec;
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(spec->text);
  req.set_source_name(overrides.empty() ? path : path + " with overrides");
  v1::SubmitSweepResponse resp;
  if (absl::Status s = c.Call(&CoordinatorApi::SubmitSweep, req, &resp);
      !s.ok()) {
    return s;
  }
  out << "sweep " << EscapeControl(resp.sweep()) << ": " << resp.jobs_added()
      << " jobs added, " << resp.jobs_existing() << " already there\n";
  if (name != nullptr) *name = resp.sweep();
  return absl::OkStatus();
}

}  // namespace tailsweep::cli
