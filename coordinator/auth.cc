#include "coordinator/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <fstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tailsweep {
namespace {

std::string Sha256(absl::string_view text) {
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
         reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

// The tokens of one file: one a line, blank and '#' lines skipped.
absl::StatusOr<std::vector<std::string>> ReadTokens(const std::string& flag,
                                                    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot read"));
  }
  std::vector<std::string> tokens;
  for (std::string line; std::getline(in, line);) {
    const absl::string_view token = absl::StripAsciiWhitespace(line);
    if (!token.empty() && !absl::StartsWith(token, "#")) {
      tokens.emplace_back(token);
    }
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": no token in it (one token a line)"));
  }
  return tokens;
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kAdmin:
      return "admin";
    case Role::kRead:
      return "read";
    case Role::kWorker:
      return "worker";
  }
  return "?";
}

Access AccessOf(absl::string_view method) {
  static const auto* table = new absl::flat_hash_map<std::string, Access>{
      // Health: any caller may ask whether the coordinator serves.
      {"Check", Access::kAny},
      // A worker's calls, for the jobs it holds.
      {"LeaseJobs", Access::kWorker},
      {"Heartbeat", Access::kWorker},
      {"ReportMetrics", Access::kWorker},
      {"CompleteJob", Access::kWorker},
      {"FailJob", Access::kWorker},
      {"ReleaseJob", Access::kWorker},
      {"UploadCheckpoint", Access::kWorker},
      {"DownloadCheckpoint", Access::kWorker},
      {"UploadJobFile", Access::kWorker},
      // Reads.
      {"GetSweepStatus", Access::kRead},
      {"ListJobs", Access::kRead},
      {"GetResults", Access::kRead},
      {"ListWorkers", Access::kRead},
      {"ListSweeps", Access::kRead},
      {"GetMetrics", Access::kRead},
      {"ListSweepMetrics", Access::kRead},
      {"GetJobLog", Access::kRead},
      {"GetJob", Access::kRead},
      {"GetSweep", Access::kRead},
      {"GetBoundaries", Access::kRead},
      {"ReadJobFile", Access::kRead},
      {"FetchCheckpoint", Access::kRead},
      // Everything else (SubmitSweep, AddJobs, CancelSweep, ResumeSweep,
      // UpdateSweep, RemoveSweep, and any method added later): admin.
  };
  auto it = table->find(method);
  return it == table->end() ? Access::kAdmin : it->second;
}

TokenAuth::TokenAuth(absl::string_view admin_token) {
  auto tokens = std::make_shared<Tokens>();
  if (!admin_token.empty()) {
    tokens->enabled = true;
    tokens->digests.emplace_back(Sha256(absl::StrCat("Bearer ", admin_token)),
                                 Role::kAdmin);
  }
  tokens_ = std::move(tokens);
}

absl::StatusOr<std::shared_ptr<const TokenAuth::Tokens>> TokenAuth::Read(
    const TokenFiles& files) {
  auto tokens = std::make_shared<Tokens>();
  if (files.admin.empty()) {
    if (!files.read.empty() || !files.worker.empty()) {
      return absl::InvalidArgumentError(
          "--read-token-file and --worker-token-file need --token-file (the "
          "admin's token): without it every call is allowed");
    }
    return std::shared_ptr<const Tokens>(std::move(tokens));
  }
  tokens->enabled = true;
  for (const auto& [flag, path, role] :
       {std::make_tuple("--token-file", files.admin, Role::kAdmin),
        std::make_tuple("--read-token-file", files.read, Role::kRead),
        std::make_tuple("--worker-token-file", files.worker, Role::kWorker)}) {
    if (path.empty()) continue;
    absl::StatusOr<std::vector<std::string>> read = ReadTokens(flag, path);
    if (!read.ok()) return read.status();
    for (const std::string& token : *read) {
      const std::string digest = Sha256(absl::StrCat("Bearer ", token));
      for (const auto& [other, other_role] : tokens->digests) {
        if (other == digest && other_role != role) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag, " ", path, ": a token in it is also ",
              other_role == Role::kAdmin ? "an " : "a ", RoleName(other_role),
              " token; give each role its own"));
        }
      }
      tokens->digests.emplace_back(digest, role);
    }
  }
  return std::shared_ptr<const Tokens>(std::move(tokens));
}

absl::StatusOr<std::unique_ptr<TokenAuth>> TokenAuth::Load(TokenFiles files) {
  absl::StatusOr<std::shared_ptr<const Tokens>> tokens = Read(files);
  if (!tokens.ok()) return tokens.status();
  auto auth = std::make_unique<TokenAuth>();
  auth->files_ = std::move(files);
  absl::MutexLock lock(&auth->mu_);
  auth->tokens_ = *std::move(tokens);
  return auth;
}

absl::Status TokenAuth::Reload() {
  absl::StatusOr<std::shared_ptr<const Tokens>> tokens = Read(files_);
  if (!tokens.ok()) return tokens.status();
  absl::MutexLock lock(&mu_);
  tokens_ = *std::move(tokens);
  return absl::OkStatus();
}

std::shared_ptr<const TokenAuth::Tokens> TokenAuth::tokens() const {
  absl::MutexLock lock(&mu_);
  return tokens_;
}

bool TokenAuth::enabled() const { return tokens()->enabled; }

std::vector<int> TokenAuth::counts() const {
  std::vector<int> out(3, 0);
  for (const auto& [digest, role] : tokens()->digests) {
    ++out[static_cast<int>(role)];
  }
  return out;
}

absl::StatusOr<Role> TokenAuth::Authenticate(
    absl::string_view authorization) const {
  const std::shared_ptr<const Tokens> tokens = this->tokens();
  if (!tokens->enabled) return Role::kAdmin;
  const std::string got = Sha256(authorization);
  // Every digest is compared, so the time does not say which role matched.
  const Role* found = nullptr;
  for (const auto& [digest, role] : tokens->digests) {
    if (CRYPTO_memcmp(got.data(), digest.data(), digest.size()) == 0) {
      found = &role;
    }
  }
  if (found != nullptr) return *found;
  return absl::UnauthenticatedError(
      authorization.empty()
          ? "this coordinator needs a token: pass --token-file"
          : "wrong token (see the coordinator's --token-file)");
}

absl::Status TokenAuth::Check(absl::string_view authorization, Access access,
                              absl::string_view what) const {
  absl::StatusOr<Role> role = Authenticate(authorization);
  if (!role.ok()) return role.status();
  const bool allowed = *role == Role::kAdmin || access == Access::kAny ||
                       (access == Access::kRead && *role == Role::kRead) ||
                       (access == Access::kWorker && *role == Role::kWorker);
  if (allowed) return absl::OkStatus();
  const char* needs = access == Access::kRead     ? "a read or admin token"
                      : access == Access::kWorker ? "a worker or admin token"
                                                  : "the admin token";
  return absl::PermissionDeniedError(
      absl::StrCat(*role == Role::kAdmin ? "an " : "a ", RoleName(*role),
                   " token may not ", what, ": it needs ", needs));
}

}  // namespace tailsweep
