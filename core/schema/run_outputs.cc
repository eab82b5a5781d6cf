// A sweep's output keys (run_outputs.h): parsing, JSON, globs, notify URLs.

#include "core/schema/run_outputs.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/schema/spec_yaml.h"
#include "core/schema/status_macros.h"
#include "core/schema/utf8.h"

namespace tailsweep {
namespace {

constexpr char kNotifyUrlForm[] =
    "; a notify URL is http://HOST[:PORT][/PATH] or https://HOST[:PORT]"
    "[/PATH], HOST a name or an IPv4 address, with no spaces";
constexpr int64_t kMaxMib = 10240;
constexpr size_t kMaxArtifactGlobs = 64;
constexpr size_t kMaxNotifyTargets = 8;

absl::Status BadNotifyUrl(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("notify URL ", what, kNotifyUrlForm));
}

// Keys of a mapping `node` named `what`, each one of `allowed`.
absl::Status CheckKeys(absl::string_view source, const YAML::Node& node,
                       absl::string_view what,
                       const std::vector<std::string>& allowed) {
  TS_RETURN_IF_ERROR(CheckNoDuplicateKeys(source, node, what));
  for (const auto& item : node) {
    absl::StatusOr<std::string> k = Key(source, item.first);
    if (!k.ok()) return k.status();
    if (std::find(allowed.begin(), allowed.end(), *k) == allowed.end()) {
      std::string list;
      for (const std::string& a : allowed) {
        absl::StrAppend(&list, list.empty() ? "" : ", ", a);
      }
      return ErrorAt(
          source, item.first,
          absl::StrCat(what, ": unknown key '", *k, "'; allowed: ", list));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseKeep(absl::string_view source, const YAML::Node& node,
                       CheckpointKeep& out) {
  constexpr char kShape[] =
      "'checkpoints' must be {keep: last|best|all, metric: NAME, goal: "
      "minimize|maximize, at_most: K}";
  if (!node.IsMap()) return ErrorAt(source, node, kShape);
  TS_RETURN_IF_ERROR(CheckKeys(source, node, "'checkpoints'",
                               {"keep", "metric", "goal", "at_most"}));
  if (node["keep"]) {
    absl::StatusOr<std::string> keep = Scalar(source, node["keep"], "'keep'");
    if (!keep.ok()) return keep.status();
    if (*keep != "last" && *keep != "best" && *keep != "all") {
      return ErrorAt(
          source, node["keep"],
          absl::StrCat("keep '", *keep, "'; allowed: last, best, all"));
    }
    out.keep = *keep;
  }
  if (out.keep != "last" && !node["metric"]) {
    return ErrorAt(source, node,
                   absl::StrCat("keep: ", out.keep,
                                " needs 'metric' (the metric whose value at "
                                "a checkpoint's step ranks it)"));
  }
  if (node["metric"]) {
    absl::StatusOr<std::string> m = Scalar(source, node["metric"], "'metric'");
    if (!m.ok()) return m.status();
    if (m->empty()) return ErrorAt(source, node["metric"], "empty metric name");
    out.metric = *m;
  }
  if (node["goal"]) {
    absl::StatusOr<std::string> g = Scalar(source, node["goal"], "'goal'");
    if (!g.ok()) return g.status();
    if (*g != "minimize" && *g != "maximize") {
      return ErrorAt(
          source, node["goal"],
          absl::StrCat("goal '", *g, "'; allowed: minimize, maximize"));
    }
    out.maximize = *g == "maximize";
  }
  out.at_most = out.keep == "best" ? 1 : 0;
  if (node["at_most"]) {
    absl::StatusOr<int64_t> k =
        IntIn(source, node["at_most"], "'at_most'", 1, 1000);
    if (!k.ok()) return k.status();
    out.at_most = *k;
  }
  return absl::OkStatus();
}

absl::Status ParseArtifacts(absl::string_view source, const YAML::Node& node,
                            RunOutputs& out) {
  if (!node.IsSequence()) {
    return ErrorAt(source, node,
                   "'artifacts' must be a list of globs relative to the job "
                   "directory, e.g. [plots/*.png, predictions.csv]");
  }
  if (node.size() > kMaxArtifactGlobs) {
    return ErrorAt(source, node,
                   absl::StrCat("'artifacts' holds at most ", kMaxArtifactGlobs,
                                " globs"));
  }
  for (const YAML::Node& g : node) {
    absl::StatusOr<std::string> glob = Scalar(source, g, "an artifact glob");
    if (!glob.ok()) return glob.status();
    if (absl::Status s = CheckArtifactGlob(*glob); !s.ok()) {
      return ErrorAt(source, g, s.message());
    }
    out.artifacts.push_back(*glob);
  }
  return absl::OkStatus();
}

absl::StatusOr<NotifyTarget> ParseTarget(absl::string_view source,
                                         const YAML::Node& node) {
  constexpr char kShape[] =
      "each 'notify' entry is {on: [failed, done, sweep_done, stalled], "
      "url: https://..., format: json|slack}";
  if (!node.IsMap() || !node["url"]) return ErrorAt(source, node, kShape);
  TS_RETURN_IF_ERROR(
      CheckKeys(source, node, "a 'notify' entry", {"on", "url", "format"}));
  NotifyTarget t;
  absl::StatusOr<std::string> url = Scalar(source, node["url"], "'url'");
  if (!url.ok()) return url.status();
  if (absl::Status s = ValidateNotifyUrl(*url); !s.ok()) {
    return ErrorAt(source, node["url"], s.message());
  }
  t.url = *url;
  if (node["format"]) {
    absl::StatusOr<std::string> f = Scalar(source, node["format"], "'format'");
    if (!f.ok()) return f.status();
    if (*f != "json" && *f != "slack") {
      return ErrorAt(source, node["format"],
                     absl::StrCat("format '", *f, "'; allowed: json, slack"));
    }
    t.format = *f;
  }
  t.on = {"failed", "sweep_done"};
  if (const YAML::Node on = node["on"]) {
    if (!on.IsSequence() || on.size() == 0) {
      return ErrorAt(source, on,
                     absl::StrCat("'on' is a list of events: ", kNotifyEvents));
    }
    t.on.clear();
    for (const YAML::Node& e : on) {
      absl::StatusOr<std::string> event = Scalar(source, e, "an event");
      if (!event.ok()) return event.status();
      if (!IsNotifyEvent(*event)) {
        return ErrorAt(
            source, e,
            absl::StrCat("event '", *event, "'; allowed: ", kNotifyEvents,
                         " (preemptions never notify)"));
      }
      t.on.push_back(*event);
    }
  }
  return t;
}

absl::Status ParseNotify(absl::string_view source, const YAML::Node& node,
                         RunOutputs& out) {
  if (!node.IsSequence() || node.size() > kMaxNotifyTargets) {
    return ErrorAt(
        source, node,
        absl::StrCat("'notify' must be a list of at most ", kMaxNotifyTargets,
                     " entries {on: [...], url: ..., format: ...}"));
  }
  for (const YAML::Node& n : node) {
    absl::StatusOr<NotifyTarget> t = ParseTarget(source, n);
    if (!t.ok()) return t.status();
    out.notify.push_back(*t);
  }
  return absl::OkStatus();
}

}  // namespace

bool IsNotifyEvent(absl::string_view event) {
  return event == "failed" || event == "done" || event == "sweep_done" ||
         event == "stalled";
}

absl::StatusOr<RunOutputs> ParseRunOutputs(absl::string_view source,
                                           const YAML::Node& root) {
  RunOutputs out;
  if (const YAML::Node n = root["checkpoints"]) {
    TS_RETURN_IF_ERROR(ParseKeep(source, n, out.checkpoints));
  }
  if (const YAML::Node n = root["artifacts"]) {
    TS_RETURN_IF_ERROR(ParseArtifacts(source, n, out));
  }
  for (const auto& [key, field] :
       {std::pair{"artifacts_max_mib", &out.artifacts_max_mib},
        std::pair{"logs_max_mib", &out.logs_max_mib}}) {
    if (const YAML::Node n = root[key]) {
      absl::StatusOr<int64_t> mib =
          IntIn(source, n, absl::StrCat("'", key, "' (MiB)"), 1, kMaxMib);
      if (!mib.ok()) return mib.status();
      *field = *mib;
    }
  }
  if (const YAML::Node n = root["notify"]) {
    TS_RETURN_IF_ERROR(ParseNotify(source, n, out));
  }
  if (const YAML::Node n = root["stall_after_s"]) {
    absl::StatusOr<double> s = NumberOf(source, n, "'stall_after_s'");
    if (!s.ok()) return s.status();
    if (!(*s >= 60) || *s > 604800) {
      return ErrorAt(source, n,
                     "'stall_after_s' is seconds without a metric point: "
                     "60..604800 (a week)");
    }
    out.stall_after_s = *s;
  }
  return out;
}

void EmitRunOutputs(YAML::Emitter& out, const RunOutputs& o) {
  const RunOutputs defaults;
  const CheckpointKeep& k = o.checkpoints;
  if (k.keep != "last") {
    out << YAML::Key << "checkpoints" << YAML::Value << YAML::Flow
        << YAML::BeginMap << YAML::Key << "keep" << YAML::Value << k.keep
        << YAML::Key << "metric" << YAML::Value << k.metric << YAML::Key
        << "goal" << YAML::Value << (k.maximize ? "maximize" : "minimize");
    if (k.at_most > 0)
      out << YAML::Key << "at_most" << YAML::Value << k.at_most;
    out << YAML::EndMap;
  }
  if (!o.artifacts.empty()) {
    out << YAML::Key << "artifacts" << YAML::Value << YAML::Flow << o.artifacts;
  }
  if (o.artifacts_max_mib != defaults.artifacts_max_mib) {
    out << YAML::Key << "artifacts_max_mib" << YAML::Value
        << o.artifacts_max_mib;
  }
  if (o.logs_max_mib != defaults.logs_max_mib) {
    out << YAML::Key << "logs_max_mib" << YAML::Value << o.logs_max_mib;
  }
  if (!o.notify.empty()) {
    out << YAML::Key << "notify" << YAML::Value << YAML::BeginSeq;
    for (const NotifyTarget& t : o.notify) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "on" << YAML::Value
          << YAML::Flow << t.on << YAML::Key << "url" << YAML::Value << t.url
          << YAML::Key << "format" << YAML::Value << t.format << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (o.stall_after_s != defaults.stall_after_s) {
    out << YAML::Key << "stall_after_s" << YAML::Value << o.stall_after_s;
  }
}

std::string RunOutputsJson(const RunOutputs& o) {
  nlohmann::json notify = nlohmann::json::array();
  for (const NotifyTarget& t : o.notify) {
    notify.push_back({{"url", t.url}, {"format", t.format}, {"on", t.on}});
  }
  return nlohmann::json{
      {"checkpoints",
       {{"keep", o.checkpoints.keep},
        {"metric", o.checkpoints.metric},
        {"goal", o.checkpoints.maximize ? "maximize" : "minimize"},
        {"at_most", o.checkpoints.at_most}}},
      {"artifacts", o.artifacts},
      {"artifacts_max_mib", o.artifacts_max_mib},
      {"logs_max_mib", o.logs_max_mib},
      {"notify", notify},
      {"stall_after_s", o.stall_after_s}}
      .dump();
}

RunOutputs RunOutputsFromJson(absl::string_view json) {
  RunOutputs o;
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (!doc.is_object()) return o;
  try {
    const nlohmann::json& c =
        doc.value("checkpoints", nlohmann::json::object());
    o.checkpoints.keep = c.value("keep", "last");
    o.checkpoints.metric = c.value("metric", "");
    o.checkpoints.maximize = c.value("goal", "") == "maximize";
    o.checkpoints.at_most = c.value("at_most", int64_t{0});
    o.artifacts = doc.value("artifacts", std::vector<std::string>{});
    o.artifacts_max_mib = doc.value("artifacts_max_mib", int64_t{100});
    o.logs_max_mib = doc.value("logs_max_mib", int64_t{32});
    o.stall_after_s = doc.value("stall_after_s", 1800.0);
    for (const nlohmann::json& t :
         doc.value("notify", nlohmann::json::array())) {
      o.notify.push_back({t.value("url", ""), t.value("format", "json"),
                          t.value("on", std::vector<std::string>{})});
    }
  } catch (const nlohmann::json::exception&) {
    return RunOutputs();
  }
  return o;
}

absl::Status CheckArtifactGlob(absl::string_view glob) {
  if (glob.empty() || glob.size() > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact glob '", glob,
                     "': 1..256 characters, relative to the job "
                     "directory"));
  }
  if (glob.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact glob '", glob,
                     "' is absolute; globs are relative to the job directory"));
  }
  for (absl::string_view part : absl::StrSplit(glob, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact glob '", glob,
          "' has a '..', '.' or empty component; it may not reach outside "
          "the job directory"));
    }
  }
  for (char c : glob) {
    if (static_cast<unsigned char>(c) < 0x20) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact glob '", glob, "' has a control character"));
    }
  }
  return absl::OkStatus();
}

bool ArtifactMatches(absl::string_view glob, absl::string_view path) {
  return ::fnmatch(std::string(glob).c_str(), std::string(path).c_str(),
                   FNM_PATHNAME | FNM_PERIOD) == 0;
}

absl::StatusOr<NotifyUrlParts> SplitNotifyUrl(absl::string_view url) {
  for (size_t i = 0; i < url.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(url[i]);
    if (c <= 0x20 || c == 0x7f) {
      return BadNotifyUrl(
          absl::StrCat("has a space or control character at offset ", i));
    }
  }
  absl::string_view rest = url;
  const bool secure = absl::ConsumePrefix(&rest, "https://");
  if (!secure && !absl::ConsumePrefix(&rest, "http://")) {
    return BadNotifyUrl("does not start with http:// or https://");
  }
  const size_t end = rest.find_first_of("/?#");
  const absl::string_view authority = rest.substr(0, end);
  absl::string_view path =
      end == absl::string_view::npos ? "" : rest.substr(end);
  path = path.substr(0, path.find('#'));  // fragments are not sent
  if (authority.find('@') != absl::string_view::npos) {
    return BadNotifyUrl("has a user@ part (not supported)");
  }
  const size_t colon = authority.find(':');
  const absl::string_view host = authority.substr(0, colon);
  if (host.empty()) return BadNotifyUrl("has no host");
  for (char c : host) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_') {
      return BadNotifyUrl(
          absl::StrCat("has a '", std::string(1, c), "' in its host"));
    }
  }
  if (colon != absl::string_view::npos) {
    const absl::string_view port = authority.substr(colon + 1);
    int number = 0;
    if (port.empty() ||
        !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(port, &number) || number < 1 || number > 65535) {
      return BadNotifyUrl("has a port that is not a number in 1..65535");
    }
  }
  NotifyUrlParts parts;
  parts.origin = absl::StrCat(secure ? "https://" : "http://", authority);
  parts.path = std::string(path);
  if (parts.path.empty() || parts.path[0] == '?') parts.path.insert(0, "/");
  return parts;
}

absl::Status ValidateNotifyUrl(absl::string_view url) {
  return SplitNotifyUrl(url).status();
}

bool Wants(const NotifyTarget& t, absl::string_view kind) {
  return std::find(t.on.begin(), t.on.end(), kind) != t.on.end();
}

std::vector<std::string> NotKeptNotes(const std::vector<std::string>& notes) {
  std::vector<std::string> out;
  for (const std::string& note : notes) {
    if (out.size() + 1 == kMaxNotKeptNotes && notes.size() > out.size() + 1) {
      out.push_back(absl::StrCat("and ", notes.size() - out.size(),
                                 " more (the worker's log names each)"));
      break;
    }
    std::string n = ValidUtf8(note);
    if (n.size() > kMaxNotKeptBytes) {
      size_t cut = kMaxNotKeptBytes - 3;
      while (cut > 0 && (static_cast<unsigned char>(n[cut]) & 0xC0) == 0x80) {
        --cut;  // not inside a character
      }
      n = absl::StrCat(n.substr(0, cut), "...");
    }
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace tailsweep
