#ifndef TAILSWEEP_COORDINATOR_NOTIFIER_H_
#define TAILSWEEP_COORDINATOR_NOTIFIER_H_

// Webhook notices from the coordinator: a job failed, finished or stalled,
// a sweep finished. Each is POSTed as JSON to the targets that asked for
// its kind, in one of two bodies (NoticeBody): our own JSON object, or a
// Slack incoming-webhook message.
//
// The Notifier queues notices and posts them from one background thread,
// so the caller (an RPC handler) never waits on the network:
// - Send only enqueues. A full queue (max_queued) drops the new notice.
// - A post that fails with UNAVAILABLE (a transport error or a non-2xx
//   answer) is tried again after a backoff: first_backoff, doubling, at
//   most max_backoff; after max_attempts attempts in all it is given up
//   (logged). Any other error (a URL HttpPost cannot use) gives up at once.
// - Every queued notice has a due time and the earliest due is posted
//   first, so a notice waiting for its retry does not hold up the others.
//   A post in progress does hold up the thread, for at most the sender's
//   timeout (HttpPost: per connect, write and read).
// - A notice is posted at most max_attempts times (a post that timed out
//   may still have arrived, so a receiver can see it twice); order is not
//   guaranteed once a notice has been retried.
// Every outcome is reported to on_outcome ("sent", "retried", "failed",
// "dropped") for /metrics.
// Thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/schema/run_outputs.h"

namespace tailsweep {

// Where to send notices, from a sweep spec.
// NotifyTarget, ValidateNotifyUrl and Wants: core/schema/run_outputs.h.

// One thing that happened.
struct Notice {
  std::string kind;    // failed | done | sweep_done | stalled
  std::string sweep;   // the sweep's name
  std::string job_id;  // "" for sweep_done
  std::string reason;  // may be ""
  std::string link;    // the sweep's report page; may be ""
  int64_t at_ms = 0;   // wall ms
};

// The POST body of `n` for a target of `format`:
//   "json":  {"event", "sweep", "job", "reason", "link", "at_ms"} (at_ms a
//            number, the rest strings, "job" "" for sweep_done)
//   "slack": {"text": "tailsweep: job 1a2b3c4d5e6f of sweep S failed:
//            REASON <LINK|report>"}, one line with &, < and > escaped as
//            Slack requires; the job id cut to 12 characters.
// Anything else is "json". Bytes that are not UTF-8 become U+FFFD.
std::string NoticeBody(const Notice& n, absl::string_view format);

// Posts `body` as application/json to `url`, waiting at most `timeout` for
// each of connect, write and read. OK on a 2xx answer.
using PostFn =
    std::function<absl::Status(const std::string& url, const std::string& body,
                               std::chrono::milliseconds timeout)>;

// The real sender (cpp-httplib; https verifies the server's certificate
// against the system's CAs). UNAVAILABLE for a transport error or a non-2xx
// answer, naming the URL (its path cut short: a webhook URL holds its
// secret there) and the error or HTTP status; InvalidArgument for a URL
// ValidateNotifyUrl refuses.
PostFn HttpPost();

struct NotifierOptions {
  // Attempts per notice in all, the first included. Default: 5.
  // Values below 1 count as 1.
  int max_attempts = 5;
  // Wait before the first retry, doubling for each next one up to
  // max_backoff. Default: 1 s, 30 s.
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  // Passed to `post`. Default: 5 s.
  std::chrono::milliseconds timeout{5000};
  // Notices queued (waiting or waiting to be retried) at most; past it new
  // ones are dropped. Default: 10000.
  size_t max_queued = 10000;
  // The sender. Default (empty): HttpPost().
  PostFn post;
  // Called once per outcome ("sent"; "retried" each time a failed attempt
  // is scheduled again; "failed" when a notice is given up; "dropped" when
  // the queue was full), on the notifier's thread or Send's caller's,
  // never under the notifier's lock. May be empty.
  std::function<void(const std::string& outcome)> on_outcome;
};

class Notifier {
 public:
  // Starts the posting thread.
  explicit Notifier(NotifierOptions options);
  // Stops the thread: waits for a post in progress (bounded by the
  // timeout), then drops what is still queued, with one log line counting
  // it (no on_outcome for these).
  ~Notifier();

  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Queues `n` for `target` and returns; never waits on the network. The
  // caller checks Wants() first: Send posts whatever it is given.
  void Send(const NotifyTarget& target, const Notice& n);

  // Waits until nothing is queued or being posted (true), or `within` has
  // passed (false). For tests.
  bool Flush(std::chrono::milliseconds within);

 private:
  struct Pending {
    std::string url;
    std::string kind;   // for the log
    std::string sweep;  // for the log
    std::string body;
    int attempts = 0;  // made so far
  };
  using Due = std::chrono::steady_clock::time_point;

  void Run();
  // After an attempt at `p` ended with `status`: logs and reports the
  // outcome, and says when to try again (nullopt: done with it).
  std::optional<Due> Settle(const Pending& p, const absl::Status& status);
  void Outcome(const std::string& outcome) const;

  const NotifierOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;  // a new notice, or stopping
  std::condition_variable idle_;  // an attempt ended (Flush)
  // Earliest due first; equal due times in the order they were queued.
  std::multimap<Due, Pending> queue_;  // guarded by mu_
  bool in_flight_ = false;             // guarded by mu_
  bool stopping_ = false;              // guarded by mu_
  // Dropping since the last notice queued; logged once.
  bool dropping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_NOTIFIER_H_
