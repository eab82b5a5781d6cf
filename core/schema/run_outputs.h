#ifndef TAILSWEEP_CORE_SCHEMA_RUN_OUTPUTS_H_
#define TAILSWEEP_CORE_SCHEMA_RUN_OUTPUTS_H_

// What a sweep's runs leave behind and who hears of them: the spec's
// output keys (sweeps/README.md, "What runs make"). None changes a job's
// identity.
//   checkpoints: {keep: best, metric: loss, goal: minimize, at_most: 3}
//       keep: last (the default: the newest, for resume), best (also the
//       best `at_most` checkpoints by the metric at their step; 1 by
//       default) or all (every checkpoint the worker sees; at_most caps
//       them if given)
//   artifacts: [plots/*.png, predictions.csv]
//       globs relative to the job directory ('*', '?', '[...]' within one
//       path component); the files they match are uploaded when an attempt
//       ends (done, failed or stopped); symbolic links and anything outside
//       the job directory are never taken
//   artifacts_max_mib: 100   per job (1..10240); files past it are named in
//                            the job's log and not uploaded
//   logs_max_mib: 32         stdout and stderr per attempt, each (1..10240);
//                            a longer one keeps its head and tail, and says so
//   notify: [{on: [failed, sweep_done], url: https://..., format: slack}]
//       a webhook POST per event: failed (a job failed for good), done (a
//       job), sweep_done (every job finished), stalled (a running job
//       logged no metric point for stall_after_s); format json (default)
//       or slack. Preemptions never notify.
//   stall_after_s: 1800      (60..604800; default 1800 when a target wants
//                            stalled)
// Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace tailsweep {

struct CheckpointKeep {
  std::string keep = "last";  // last | best | all
  std::string metric;         // best, all
  bool maximize = false;
  int64_t at_most = 0;  // best K kept; 0: every one (all)
};

struct NotifyTarget {
  std::string url;              // http:// or https:// (ValidateNotifyUrl)
  std::string format = "json";  // json | slack
  std::vector<std::string> on;  // failed, done, sweep_done, stalled
};

struct RunOutputs {
  CheckpointKeep checkpoints;
  std::vector<std::string> artifacts;
  int64_t artifacts_max_mib = 100;
  int64_t logs_max_mib = 32;
  std::vector<NotifyTarget> notify;
  double stall_after_s = 1800;
};

// A file an ended attempt sends the coordinator (UploadJobFile;
// worker/attempt_files.h makes them).
struct AttemptFile {
  std::string kind;            // log | artifact
  std::string name;            // stdout | stderr | the artifact's relative path
  std::string path;            // the file to send (a log: the gzip made of it)
  int64_t original_bytes = 0;  // its size in the job directory
  bool cut = false;            // a log's middle was cut
  bool gzip = false;
};

// What an attempt made that was not stored, as its end report carries it
// (not_kept): at most this many notes, each at most this many bytes.
inline constexpr int kMaxNotKeptNotes = 16;
inline constexpr int kMaxNotKeptBytes = 1024;
// `notes` within those bounds: each cut to kMaxNotKeptBytes (on a character
// boundary, valid UTF-8), and past kMaxNotKeptNotes - 1 the rest counted
// in a last note.
std::vector<std::string> NotKeptNotes(const std::vector<std::string>& notes);

inline constexpr char kNotifyEvents[] = "failed, done, sweep_done, stalled";
// Whether `event` is one of kNotifyEvents.
bool IsNotifyEvent(absl::string_view event);

// The output keys of the spec's root (the rest are left alone); defaults
// for those it leaves out. Errors "SOURCE:LINE:COL: ..." at the node.
absl::StatusOr<RunOutputs> ParseRunOutputs(absl::string_view source,
                                           const YAML::Node& root);
// Writes the keys whose values are not the defaults into an open map
// (SweepSpecYaml: the spec as submitted).
void EmitRunOutputs(YAML::Emitter& out, const RunOutputs& outputs);

// As JSON and back (how the store keeps a sweep's outputs); "" or text that
// does not parse gives the defaults.
std::string RunOutputsJson(const RunOutputs& outputs);
RunOutputs RunOutputsFromJson(absl::string_view json);

// OK for an artifact glob: relative, no '..' or '.' component, no empty
// component, at most 256 characters; else InvalidArgument saying why.
absl::Status CheckArtifactGlob(absl::string_view glob);
// Whether the relative path `path` matches `glob` (fnmatch, '*' not
// crossing '/').
bool ArtifactMatches(absl::string_view glob, absl::string_view path);

// A notify URL's parts: http://HOST[:PORT][/PATH] or https://..., HOST a
// name or an IPv4 address, no user@ part, no spaces or control characters.
struct NotifyUrlParts {
  std::string origin;  // scheme://host[:port]
  std::string path;    // from '/' or '?'; "/" when the URL has none
};
absl::StatusOr<NotifyUrlParts> SplitNotifyUrl(absl::string_view url);
// OK for such a URL; else InvalidArgument saying what is wrong and what is
// allowed (without repeating the URL, which may hold a secret).
absl::Status ValidateNotifyUrl(absl::string_view url);
// Whether `t` asked for notices of `kind`.
bool Wants(const NotifyTarget& t, absl::string_view kind);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_RUN_OUTPUTS_H_
