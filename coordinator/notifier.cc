#include "coordinator/notifier.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace tailsweep {
namespace {

constexpr size_t kSlackJobIdChars = 12;  // as the logs and the CLI show it
constexpr size_t kLoggedPathChars = 12;
constexpr size_t kLoggedAnswerChars = 200;

// The URL for log lines and errors. Webhook URLs carry their secret in the
// path or the query (Slack's /services/T.../B.../SECRET), so the path is
// cut short and the query left out.
std::string NotifyUrlForLog(absl::string_view url) {
  const absl::StatusOr<NotifyUrlParts> parts = SplitNotifyUrl(url);
  if (!parts.ok()) return "(an invalid notify URL)";
  const absl::string_view path =
      absl::string_view(parts->path).substr(0, parts->path.find('?'));
  const bool cut =
      path.size() > kLoggedPathChars || path.size() < parts->path.size();
  return absl::StrCat(parts->origin, path.substr(0, kLoggedPathChars),
                      cut ? "..." : "");
}

// Slack's control characters; and one line.
std::string SlackEscape(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"},
                                    {"<", "&lt;"},
                                    {">", "&gt;"},
                                    {"\r\n", " "},
                                    {"\n", " "},
                                    {"\r", " "},
                                    {"\t", " "}});
}

std::string SlackText(const Notice& n) {
  const bool of_job = !n.job_id.empty();
  std::string text = "tailsweep: ";
  if (of_job) {
    absl::StrAppend(&text, "job ",
                    SlackEscape(n.job_id.substr(0, kSlackJobIdChars)), " of ");
  }
  absl::StrAppend(&text, "sweep ", SlackEscape(n.sweep), " ",
                  SlackEscape(n.kind == "sweep_done" ? "done" : n.kind));
  if (!n.reason.empty()) absl::StrAppend(&text, ": ", SlackEscape(n.reason));
  if (!n.link.empty()) {
    // '|' would end the link's address.
    absl::StrAppend(&text, " <",
                    SlackEscape(absl::StrReplaceAll(n.link, {{"|", "%7C"}})),
                    "|report>");
  }
  return text;
}

NotifierOptions WithDefaults(NotifierOptions options) {
  if (!options.post) options.post = HttpPost();
  options.max_attempts = std::max(1, options.max_attempts);
  return options;
}

// The wait before the next attempt, after `failed` failed ones.
std::chrono::milliseconds NoticeBackoff(const NotifierOptions& options,
                                        int failed) {
  std::chrono::milliseconds wait = options.first_backoff;
  for (int i = 1; i < failed && wait < options.max_backoff; ++i) wait *= 2;
  return std::min(wait, options.max_backoff);
}

}  // namespace

std::string NoticeBody(const Notice& n, absl::string_view format) {
  nlohmann::json doc = nlohmann::json::object();
  if (format == "slack") {
    doc["text"] = SlackText(n);
  } else {
    doc["event"] = n.kind;
    doc["sweep"] = n.sweep;
    doc["job"] = n.job_id;
    doc["reason"] = n.reason;
    doc["link"] = n.link;
    doc["at_ms"] = n.at_ms;
  }
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

PostFn HttpPost() {
  return [](const std::string& url, const std::string& body,
            std::chrono::milliseconds timeout) -> absl::Status {
    const absl::StatusOr<NotifyUrlParts> parts = SplitNotifyUrl(url);
    if (!parts.ok()) return parts.status();
    httplib::Client client(parts->origin);
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);
    client.set_url_encode(false);  // validated: no spaces; '+' stays '+'
    const httplib::Result res =
        client.Post(parts->path, body, "application/json");
    if (!res) {
      return absl::UnavailableError(
          absl::StrCat("POST to ", NotifyUrlForLog(url),
                       " failed: ", httplib::to_string(res.error())));
    }
    if (res->status < 200 || res->status > 299) {
      return absl::UnavailableError(absl::StrCat(
          "POST to ", NotifyUrlForLog(url), " answered HTTP ", res->status,
          res->body.empty() ? "" : ": ",
          absl::CHexEscape(res->body.substr(0, kLoggedAnswerChars))));
    }
    return absl::OkStatus();
  };
}

Notifier::Notifier(NotifierOptions options)
    : options_(WithDefaults(std::move(options))), thread_([this] { Run(); }) {}

Notifier::~Notifier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty()) {
    spdlog::warn(
        "notifier stopped with {} notice(s) not yet delivered; "
        "they are dropped",
        queue_.size());
  }
}

void Notifier::Send(const NotifyTarget& target, const Notice& n) {
  Pending p{target.url, n.kind, n.sweep, NoticeBody(n, target.format)};
  bool first_drop = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() < options_.max_queued) {
      dropping_ = false;
      queue_.emplace(std::chrono::steady_clock::now(), std::move(p));
      wake_.notify_one();
      return;
    }
    first_drop = !dropping_;
    dropping_ = true;
  }
  if (first_drop) {
    spdlog::warn(
        "notifier: {} notices queued (the most it holds); "
        "dropping the {} notice of sweep {} to {} and any more "
        "until one can be queued",
        options_.max_queued, p.kind, p.sweep, NotifyUrlForLog(p.url));
  }
  Outcome("dropped");
}

bool Notifier::Flush(std::chrono::milliseconds within) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, within,
                        [this] { return queue_.empty() && !in_flight_; });
}

void Notifier::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queue_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto first = queue_.begin();
    if (first->first > std::chrono::steady_clock::now()) {
      wake_.wait_until(lock, first->first);
      continue;
    }
    Pending p = std::move(first->second);
    queue_.erase(first);
    in_flight_ = true;
    lock.unlock();
    const absl::Status status = options_.post(p.url, p.body, options_.timeout);
    ++p.attempts;
    const std::optional<Due> retry_at = Settle(p, status);
    lock.lock();
    if (retry_at.has_value()) queue_.emplace(*retry_at, std::move(p));
    in_flight_ = false;
    idle_.notify_all();
  }
}

std::optional<Notifier::Due> Notifier::Settle(const Pending& p,
                                              const absl::Status& status) {
  if (status.ok()) {
    Outcome("sent");
    return std::nullopt;
  }
  if (status.code() == absl::StatusCode::kUnavailable &&
      p.attempts < options_.max_attempts) {
    Outcome("retried");
    return std::chrono::steady_clock::now() +
           NoticeBackoff(options_, p.attempts);
  }
  spdlog::warn(
      "notifier: gave up on the {} notice of sweep {} to {} after "
      "{} attempt(s): {}",
      p.kind, p.sweep, NotifyUrlForLog(p.url), p.attempts, status.ToString());
  Outcome("failed");
  return std::nullopt;
}

void Notifier::Outcome(const std::string& outcome) const {
  if (options_.on_outcome) options_.on_outcome(outcome);
}

}  // namespace tailsweep
