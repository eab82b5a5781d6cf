#include "coordinator/notifier.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testing/status_matchers.h"

namespace tailsweep {
namespace {

using std::chrono::milliseconds;
using Strings = std::vector<std::string>;

// How long a test waits for what must happen; only a failing test waits
// this long.
constexpr milliseconds kNotifierPatience(30000);
constexpr char kHookA[] = "http://hook-a.test/a";
constexpr char kHookB[] = "http://hook-b.test/b";

Notice FailedJobNotice() {
  Notice n;
  n.kind = "failed";
  n.sweep = "lr-sweep";
  n.job_id = "1a2b3c4d5e6f7a8b";
  n.reason = "loss > 1e3 & nan <";
  n.link = "http://coord:8080/sweeps/lr-sweep?a=1&b=2";
  n.at_ms = 1700000000123;
  return n;
}

NotifyTarget JsonTarget(const std::string& url) {
  return NotifyTarget{url, "json", {"failed", "sweep_done"}};
}

// Strings appended from any thread, read back in order.
class NotifierRecord {
 public:
  void Add(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(s);
  }
  std::function<void(const std::string&)> Adder() {
    return [this](const std::string& s) { Add(s); };
  }
  Strings Items() {
    std::lock_guard<std::mutex> lock(mu_);
    return items_;
  }

 private:
  std::mutex mu_;
  Strings items_;
};

NotifierOptions FastRetries(NotifierRecord* outcomes) {
  NotifierOptions options;
  options.first_backoff = milliseconds(1);
  options.max_backoff = milliseconds(4);
  options.on_outcome = outcomes->Adder();
  return options;
}

TEST(NoticeBody, JsonCarriesEveryField) {
  const nlohmann::json doc =
      nlohmann::json::parse(NoticeBody(FailedJobNotice(), "json"));
  const nlohmann::json expected = {
      {"event", "failed"},
      {"sweep", "lr-sweep"},
      {"job", "1a2b3c4d5e6f7a8b"},
      {"reason", "loss > 1e3 & nan <"},
      {"link", "http://coord:8080/sweeps/lr-sweep?a=1&b=2"},
      {"at_ms", 1700000000123}};
  EXPECT_EQ(doc, expected);
}

TEST(NoticeBody, JsonReplacesBytesThatAreNotUtf8) {
  Notice n = FailedJobNotice();
  n.reason = "bad \xff byte";
  const nlohmann::json doc = nlohmann::json::parse(NoticeBody(n, "json"));
  EXPECT_EQ(doc["reason"], "bad \xEF\xBF\xBD byte");
}

TEST(NoticeBody, SlackIsOneEscapedLine) {
  const nlohmann::json doc =
      nlohmann::json::parse(NoticeBody(FailedJobNotice(), "slack"));
  const nlohmann::json expected = {
      {"text",
       "tailsweep: job 1a2b3c4d5e6f of sweep lr-sweep failed: "
       "loss &gt; 1e3 &amp; nan &lt; "
       "<http://coord:8080/sweeps/lr-sweep?a=1&amp;b=2|report>"}};
  EXPECT_EQ(doc, expected);
}

TEST(NoticeBody, SlackSweepDoneHasNoJob) {
  Notice n;
  n.kind = "sweep_done";
  n.sweep = "lr-sweep";
  const nlohmann::json doc = nlohmann::json::parse(NoticeBody(n, "slack"));
  EXPECT_EQ(doc["text"], "tailsweep: sweep lr-sweep done");
}

TEST(ValidateNotifyUrl, AcceptsHttpAndHttpsWithAHost) {
  for (const char* url : {"http://host:1/x", "https://h/", "https://h",
                          "https://hooks.example.com/services/T/B/x?y=1"}) {
    SCOPED_TRACE(url);
    TS_EXPECT_OK(ValidateNotifyUrl(url));
  }
}

TEST(ValidateNotifyUrl, RefusesOtherSchemesNoHostAndSpaces) {
  for (const char* url : {"ftp://x", "http://", "not a url", "http://a b",
                          "HTTP://x", "http://h:0/", "http://h:99999/",
                          "http://h:x/", "http://u@h/", "http://h/\n"}) {
    SCOPED_TRACE(url);
    const absl::Status status = ValidateNotifyUrl(url);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("http://HOST[:PORT][/PATH]"),
              std::string::npos)
        << status;
  }
}

TEST(Wants, OnlyTheListedKinds) {
  const NotifyTarget target{kHookA, "json", {"failed", "sweep_done"}};
  EXPECT_TRUE(Wants(target, "failed"));
  EXPECT_TRUE(Wants(target, "sweep_done"));
  EXPECT_FALSE(Wants(target, "done"));
  EXPECT_FALSE(Wants(NotifyTarget{kHookA, "json", {}}, "failed"));
}

TEST(Notifier, RetriesAnUnavailablePostThenDeliversOnce) {
  NotifierRecord outcomes, delivered;
  std::atomic<int> calls{0};
  NotifierOptions options = FastRetries(&outcomes);
  options.post = [&](const std::string& url, const std::string& body,
                     milliseconds) {
    if (++calls <= 2) return absl::UnavailableError("connection refused");
    delivered.Add(body);
    return absl::OkStatus();
  };
  Notifier notifier(options);
  notifier.Send(JsonTarget(kHookA), FailedJobNotice());
  ASSERT_TRUE(notifier.Flush(kNotifierPatience));
  EXPECT_EQ(delivered.Items(), Strings{NoticeBody(FailedJobNotice(), "json")});
  EXPECT_EQ(outcomes.Items(), (Strings{"retried", "retried", "sent"}));
}

TEST(Notifier, GivesUpAfterMaxAttempts) {
  NotifierRecord outcomes;
  std::atomic<int> calls{0};
  NotifierOptions options = FastRetries(&outcomes);
  options.max_attempts = 3;
  options.post = [&](const std::string&, const std::string&, milliseconds) {
    ++calls;
    return absl::UnavailableError("HTTP 503");
  };
  Notifier notifier(options);
  notifier.Send(JsonTarget(kHookA), FailedJobNotice());
  ASSERT_TRUE(notifier.Flush(kNotifierPatience));
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(outcomes.Items(), (Strings{"retried", "retried", "failed"}));
}

TEST(Notifier, DoesNotRetryAnErrorOtherThanUnavailable) {
  NotifierRecord outcomes;
  std::atomic<int> calls{0};
  NotifierOptions options = FastRetries(&outcomes);
  options.post = [&](const std::string&, const std::string&, milliseconds) {
    ++calls;
    return absl::InvalidArgumentError("bad URL");
  };
  Notifier notifier(options);
  notifier.Send(JsonTarget(kHookA), FailedJobNotice());
  ASSERT_TRUE(notifier.Flush(kNotifierPatience));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(outcomes.Items(), Strings{"failed"});
}

// The first post hangs until the test releases it; meanwhile 100 more
// Sends return.
TEST(Notifier, SendReturnsWhileAPostIsStuck) {
  NotifierRecord outcomes, history;
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  NotifierOptions options = FastRetries(&outcomes);
  options.post = [&](const std::string&, const std::string&, milliseconds) {
    if (++calls == 1) {
      started.set_value();
      if (released.wait_for(kNotifierPatience) != std::future_status::ready) {
        history.Add("post gave up waiting");
      }
      history.Add("first post returned");
    }
    return absl::OkStatus();
  };
  Notifier notifier(options);
  notifier.Send(JsonTarget(kHookA), FailedJobNotice());
  ASSERT_EQ(started.get_future().wait_for(kNotifierPatience),
            std::future_status::ready);
  for (int i = 0; i < 100; ++i) {
    notifier.Send(JsonTarget(kHookA), FailedJobNotice());
  }
  history.Add("100 sends returned");
  release.set_value();
  ASSERT_TRUE(notifier.Flush(kNotifierPatience));
  EXPECT_EQ(history.Items(),
            (Strings{"100 sends returned", "first post returned"}));
  EXPECT_EQ(calls.load(), 101);
}

TEST(Notifier, DropsWhatDoesNotFitTheQueue) {
  NotifierRecord outcomes;
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  NotifierOptions options = FastRetries(&outcomes);
  options.max_queued = 2;
  options.post = [&](const std::string&, const std::string&, milliseconds) {
    if (++calls == 1) {
      started.set_value();
      (void)released.wait_for(kNotifierPatience);
    }
    return absl::OkStatus();
  };
  Notifier notifier(options);
  notifier.Send(JsonTarget(kHookA), FailedJobNotice());  // in flight
  ASSERT_EQ(started.get_future().wait_for(kNotifierPatience),
            std::future_status::ready);
  for (int i = 0; i < 3; ++i) {  // two queued, one dropped
    notifier.Send(JsonTarget(kHookA), FailedJobNotice());
  }
  EXPECT_EQ(outcomes.Items(), Strings{"dropped"});
  release.set_value();
  ASSERT_TRUE(notifier.Flush(kNotifierPatience));
  EXPECT_EQ(calls.load(), 3);
}

// A's first post fails and its retry is a minute away; B, sent after, is
// posted meanwhile. Destroying the notifier drops A without waiting.
TEST(Notifier, ANoticeWaitingForItsRetryDoesNotHoldUpAnother) {
  NotifierRecord outcomes, urls;
  std::promise<void> a_failed, b_delivered;
  std::atomic<int> a_calls{0}, b_calls{0};
  NotifierOptions options;
  options.first_backoff = milliseconds(60000);
  options.max_backoff = milliseconds(60000);
  options.on_outcome = outcomes.Adder();
  options.post = [&](const std::string& url, const std::string&, milliseconds) {
    urls.Add(url);
    if (url == kHookA) {
      if (++a_calls == 1) a_failed.set_value();
      return absl::UnavailableError("HTTP 502");
    }
    if (++b_calls == 1) b_delivered.set_value();
    return absl::OkStatus();
  };
  Notifier notifier(options);
  notifier.Send(JsonTarget(kHookA), FailedJobNotice());
  ASSERT_EQ(a_failed.get_future().wait_for(kNotifierPatience),
            std::future_status::ready);
  notifier.Send(JsonTarget(kHookB), FailedJobNotice());
  ASSERT_EQ(b_delivered.get_future().wait_for(kNotifierPatience),
            std::future_status::ready);
  EXPECT_EQ(urls.Items(), (Strings{kHookA, kHookB}));
  EXPECT_FALSE(notifier.Flush(milliseconds(0)));  // A still waits
}

// A local webhook on 127.0.0.1: answers 500 to its first POST and 200
// after, keeping the bodies of the ones it accepted.
class NotifierHookServer {
 public:
  NotifierHookServer() {
    server_.Post(
        "/hook", [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mu_);
          if (++requests_ == 1) {
            res.status = 500;
            res.set_content("busy", "text/plain");
            return;
          }
          bodies_.push_back(req.body);
          content_types_.push_back(req.get_header_value("Content-Type"));
          res.status = 200;
        });
    // Once bound, the socket listens: connections wait in its backlog
    // until listen_after_bind accepts them.
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ > 0) {
      thread_ = std::thread([this] {
        server_.listen_after_bind();
        stopped_ = true;
      });
    }
  }
  ~NotifierHookServer() {
    if (!thread_.joinable()) return;
    // stop() reaches only a server that has begun accepting.
    while (!server_.is_running() && !stopped_) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

  std::string Url() const {
    return absl::StrCat("http://127.0.0.1:", port_, "/hook");
  }
  int port() const { return port_; }
  int requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  Strings bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  Strings content_types() {
    std::lock_guard<std::mutex> lock(mu_);
    return content_types_;
  }

 private:
  httplib::Server server_;
  std::mutex mu_;
  int requests_ = 0;                // guarded by mu_
  Strings bodies_, content_types_;  // guarded by mu_
  int port_ = -1;
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

TEST(HttpPost, ANon2xxAnswerIsUnavailableNamingTheStatus) {
  NotifierHookServer server;
  ASSERT_GT(server.port(), 0);
  const PostFn post = HttpPost();
  const absl::Status first = post(server.Url(), "{}", milliseconds(5000));
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable) << first;
  EXPECT_NE(first.message().find("HTTP 500"), std::string::npos) << first;
  TS_EXPECT_OK(post(server.Url(), "{}", milliseconds(5000)));
  EXPECT_EQ(server.content_types(), Strings{"application/json"});
}

TEST(HttpPost, RefusesAnInvalidUrl) {
  TS_EXPECT_CODE(HttpPost()("ftp://x/", "{}", milliseconds(5000)),
                 absl::StatusCode::kInvalidArgument);
}

TEST(Notifier, DeliversToARealServerAfterOneRetry) {
  NotifierHookServer server;
  ASSERT_GT(server.port(), 0);
  NotifierRecord outcomes;
  Notifier notifier(FastRetries(&outcomes));  // the real HttpPost
  notifier.Send(JsonTarget(server.Url()), FailedJobNotice());
  ASSERT_TRUE(notifier.Flush(kNotifierPatience));
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(server.bodies(), Strings{NoticeBody(FailedJobNotice(), "json")});
  EXPECT_EQ(outcomes.Items(), (Strings{"retried", "sent"}));
}

}  // namespace
}  // namespace tailsweep
