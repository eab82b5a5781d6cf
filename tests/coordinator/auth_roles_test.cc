// Tokens with roles (auth.h): every gRPC method and every HTTP route with
// each role's token, allowed or refused (PERMISSION_DENIED / 403) as the
// roles say, each refusal counted; several tokens a file, revoked by
// deleting a line and reloading; bad token files refused saying why.

#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/auth.h"
#include "coordinator/http_api.h"
#include "coordinator/http_gateway.h"
#include "coordinator/telemetry.h"
#include "tests/coordinator/service_fixture.h"
#include "tests/testing/raw_call.h"
#include "tests/testing/run_command.h"

namespace tailsweep {
namespace {

// What the issue says each role may do, written out here on its own (not
// read from AccessOf): the reads, and a worker's calls for its jobs.
const std::set<std::string>& ReadMethods() {
  static const std::set<std::string> m = {
      "GetSweepStatus", "ListJobs",   "GetResults",       "ListWorkers",
      "ListSweeps",     "GetMetrics", "ListSweepMetrics", "GetJobLog",
      "GetJob",         "GetSweep",   "GetBoundaries",    "ReadJobFile",
      "FetchCheckpoint"};
  return m;
}
const std::set<std::string>& WorkerMethods() {
  static const std::set<std::string> m = {
      "LeaseJobs",    "Heartbeat",  "ReportMetrics",    "CompleteJob",
      "FailJob",      "ReleaseJob", "UploadCheckpoint", "DownloadCheckpoint",
      "UploadJobFile"};
  return m;
}
bool Allowed(const std::string& role, const std::string& method) {
  if (role == "admin" || method == "Check") return true;
  return role == "read" ? ReadMethods().count(method) > 0
                        : WorkerMethods().count(method) > 0;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

class AuthRolesTest : public ServiceTest {
 protected:
  void SetUp() override {
    files_dir_ = testing::MakeTempDir("tailsweep_tokens_");
    files_ = {files_dir_ + "/admin", files_dir_ + "/read",
              files_dir_ + "/worker"};
    WriteFile(files_.admin, "# the admin\nadmin-token-1\n");
    WriteFile(files_.read, "read-token-1\n\nread-token-2\n");
    WriteFile(files_.worker, "worker-token-1\n");
    absl::StatusOr<std::unique_ptr<TokenAuth>> auth = TokenAuth::Load(files_);
    ASSERT_TRUE(auth.ok()) << auth.status();
    auth_ = *std::move(auth);
    ServiceTest::SetUp();
  }
  void TearDown() override {
    ServiceTest::TearDown();
    std::filesystem::remove_all(files_dir_);
  }
  // The HTTP gateway in front of the service, with the same tokens.
  absl::StatusOr<std::unique_ptr<HttpGateway>> StartGateway() {
    HttpGatewayOptions options;
    options.listen = "127.0.0.1:0";
    options.auth = auth_;
    return HttpGateway::Start(
        options,
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()),
        [] { return std::string("# metrics\n"); });
  }
  const std::map<std::string, std::string> kTokens = {
      {"admin", "admin-token-1"},
      {"read", "read-token-2"},
      {"worker", "worker-token-1"}};
  std::string files_dir_;
  TokenFiles files_;
};

TEST_F(AuthRolesTest, EveryMethodTakesExactlyTheRolesThatMayCallIt) {
  const int methods = ForEachServedMethod(
      [&](const std::string& path, const std::string& name, bool streaming) {
        std::string answer;
        for (const auto& [role, token] : kTokens) {
          const grpc::StatusCode code =
              testing::RawCall(address_, path, "", &answer, streaming,
                               "Bearer " + token)
                  .error_code();
          if (Allowed(role, name)) {
            EXPECT_NE(code, grpc::StatusCode::PERMISSION_DENIED)
                << role << " " << path;
            EXPECT_NE(code, grpc::StatusCode::UNAUTHENTICATED)
                << role << " " << path;
          } else {
            EXPECT_EQ(code, grpc::StatusCode::PERMISSION_DENIED)
                << role << " " << path;
          }
        }
        EXPECT_EQ(testing::RawCall(address_, path, "", &answer, streaming,
                                   "Bearer read-token-3")
                      .error_code(),
                  grpc::StatusCode::UNAUTHENTICATED)
            << path;
      });
  EXPECT_EQ(methods, 29);  // 28 Coordinator calls and Health.Check
}

TEST_F(AuthRolesTest, ARefusalSaysWhichRoleAndWhatItNeeds) {
  const absl::Status s =
      auth_->Check("Bearer worker-token-1", Access::kAdmin, "call SubmitSweep");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "a worker token may not call SubmitSweep: it needs the admin "
            "token");
}

TEST_F(AuthRolesTest, RefusalsAreCountedByRoleAndMethod) {
  Telemetry telemetry(dir_ + "/db");
  grpc::ServerContext ctx;  // no metadata: no token at all
  EXPECT_FALSE(Authorize(*auth_, &telemetry, &ctx, "SubmitSweep").ok());
  EXPECT_NE(telemetry.Text(*store_).find(
                "tailsweep_auth_refused_total{method=\"SubmitSweep\","
                "role=\"none\"} 1"),
            std::string::npos)
      << telemetry.Text(*store_);
}

TEST_F(AuthRolesTest, ADeletedLineRevokesItsTokenOnReload) {
  EXPECT_TRUE(auth_->Authenticate("Bearer read-token-1").ok());
  WriteFile(files_.read, "read-token-2\n");
  EXPECT_TRUE(auth_->Authenticate("Bearer read-token-1").ok());  // not yet
  ASSERT_TRUE(auth_->Reload().ok());
  EXPECT_EQ(auth_->Authenticate("Bearer read-token-1").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth_->Authenticate("Bearer read-token-2").ok());
  // A file that breaks meanwhile: the reload fails, the tokens stay.
  WriteFile(files_.read, "\n# none\n");
  const absl::Status broken = auth_->Reload();
  EXPECT_EQ(broken.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(broken.message().find("--read-token-file"), std::string::npos);
  EXPECT_TRUE(auth_->Authenticate("Bearer read-token-2").ok());
}

TEST(TokenFilesTest, BadFilesAreRefusedSayingWhy) {
  const std::string dir = testing::MakeTempDir("tailsweep_tokens_");
  WriteFile(dir + "/a", "same\n");
  WriteFile(dir + "/r", "same\n");
  WriteFile(dir + "/empty", "# nothing\n");
  const auto message = [](const TokenFiles& files) {
    absl::StatusOr<std::unique_ptr<TokenAuth>> auth = TokenAuth::Load(files);
    return auth.ok() ? std::string("ok") : std::string(auth.status().message());
  };
  EXPECT_NE(message({"", dir + "/r", ""}).find("need --token-file"),
            std::string::npos);
  EXPECT_NE(message({dir + "/a", dir + "/r", ""}).find("also an admin token"),
            std::string::npos);
  EXPECT_NE(message({dir + "/empty", "", ""}).find("no token in it"),
            std::string::npos);
  EXPECT_NE(message({dir + "/missing", "", ""}).find("cannot read"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// Every HTTP route (and the pages and /metrics) with each role: 403 exactly
// where the role may not; never 401 for a good token.
TEST_F(AuthRolesTest, EveryHttpRouteTakesExactlyTheRolesThatMayUseIt) {
  absl::StatusOr<std::unique_ptr<HttpGateway>> gateway = StartGateway();
  ASSERT_TRUE(gateway.ok()) << gateway.status();
  httplib::Client http("127.0.0.1", (*gateway)->port());
  struct Route {
    std::string method, path, call;
  };
  std::vector<Route> routes = {
      {"GET", "/", ""}, {"GET", "/sweeps/x", ""}, {"GET", "/metrics", ""}};
  for (const http_api::ApiRoute& r : http_api::ApiRoutes()) {
    std::string path = r.path;
    for (const char* var : {"{sweep}", "{job}", "{stream}", "{path}"}) {
      for (size_t at; (at = path.find(var)) != std::string::npos;) {
        path.replace(at, std::string(var).size(), "x");
      }
    }
    routes.push_back({r.method, path, r.call});
  }
  for (const Route& route : routes) {
    for (const auto& [role, token] : kTokens) {
      const httplib::Headers headers = {{"Authorization", "Bearer " + token}};
      const httplib::Result answer =
          route.method == "POST"
              ? http.Post(route.path, headers, "{}", "application/json")
              : http.Get(route.path, headers);
      ASSERT_TRUE(answer) << route.path;
      // A route of its own (a page, the report, /metrics): a read.
      const bool allowed =
          route.call.empty() ? role != "worker" : Allowed(role, route.call);
      if (allowed) {
        EXPECT_NE(answer->status, 403) << role << " " << route.method << " "
                                       << route.path << ": " << answer->body;
      } else {
        EXPECT_EQ(answer->status, 403) << role << " " << route.method << " "
                                       << route.path << ": " << answer->body;
      }
      EXPECT_NE(answer->status, 401) << role << " " << route.path;
    }
  }
  gateway->reset();
}

TEST_F(AuthRolesTest, ABrowserSignsInWithAFormAndTheTokenStaysOutOfTheUrl) {
  absl::StatusOr<std::unique_ptr<HttpGateway>> gateway = StartGateway();
  ASSERT_TRUE(gateway.ok()) << gateway.status();
  httplib::Client http("127.0.0.1", (*gateway)->port());
  const httplib::Result form = http.Get("/");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 401);
  EXPECT_NE(form->body.find("action=\"/login\""), std::string::npos);
  const httplib::Result login = http.Post("/login", "token=read-token-1",
                                          "application/x-www-form-urlencoded");
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Location"), "/");
  const std::string cookie = login->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  const httplib::Result page =
      http.Get("/", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  // A worker token opens nothing; a wrong one gets the form again.
  const httplib::Result worker = http.Post("/login", "token=worker-token-1",
                                           "application/x-www-form-urlencoded");
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->status, 403);
  const httplib::Result wrong =
      http.Post("/login", "token=nope", "application/x-www-form-urlencoded");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  gateway->reset();
}

}  // namespace
}  // namespace tailsweep
