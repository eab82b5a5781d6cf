#ifndef TAILSWEEP_COORDINATOR_AUTH_H_
#define TAILSWEEP_COORDINATOR_AUTH_H_

// Bearer tokens with roles. Every call must carry the metadata
// "authorization: Bearer TOKEN" (HTTP: the same header, or the dashboard's
// cookie for reads); the token's role says what it may do:
//
//   admin   (--token-file)         everything
//   read    (--read-token-file)    the dashboard, the API's reads, /metrics,
//                                  any job's files and checkpoints: no
//                                  writes, no worker calls
//   worker  (--worker-token-file)  the calls a worker makes for the jobs it
//                                  holds (lease, heartbeat, metrics,
//                                  results, checkpoints, files): no submit,
//                                  cancel or resume, no reads of sweeps
//
// A file holds one token per line (blank lines and lines starting with '#'
// are skipped), so a token is revoked by deleting its line and reloading
// (SIGHUP: Reload). Tokens are compared as SHA-256 digests in constant time,
// so neither a token's bytes nor its length leak through timing. With no
// admin token, authentication is off. Thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace tailsweep {

enum class Role { kAdmin, kRead, kWorker };
// "admin", "read", "worker".
const char* RoleName(Role role);

// Who may make a call: kAny (every role), kRead (read, admin), kWorker
// (worker, admin), kAdmin (admin only).
enum class Access { kAny, kRead, kWorker, kAdmin };

// What a gRPC method ("LeaseJobs", "Check") of the coordinator or its health
// service needs. A method it does not know needs kAdmin.
Access AccessOf(absl::string_view method);

// The token files of each role; "": none of that role.
struct TokenFiles {
  std::string admin, read, worker;
};

class TokenAuth {
 public:
  // Authentication off: every call is the admin's.
  TokenAuth() = default;
  // One admin token ("": off), for tests and the in-process gateway.
  explicit TokenAuth(absl::string_view admin_token);

  // The tokens of `files`. InvalidArgument naming the flag and file when
  // one cannot be read, holds no token, or a role's file is given without
  // an admin one.
  static absl::StatusOr<std::unique_ptr<TokenAuth>> Load(TokenFiles files);
  // Reads the files again (SIGHUP): OK and the new tokens in force, or the
  // error and the old tokens kept.
  absl::Status Reload();

  // The role of `authorization` ("Bearer TOKEN"); Unauthenticated (never
  // echoing what was sent) when it is none.
  absl::StatusOr<Role> Authenticate(absl::string_view authorization) const;
  // OK when `authorization` may make a call needing `access`;
  // Unauthenticated, or PermissionDenied naming the role and `what`.
  absl::Status Check(absl::string_view authorization, Access access,
                     absl::string_view what) const;

  bool enabled() const;
  // How many tokens each role has now (admin, read, worker).
  std::vector<int> counts() const;

 private:
  struct Tokens {
    // SHA-256 of "Bearer TOKEN", with its role.
    std::vector<std::pair<std::string, Role>> digests;
    bool enabled = false;
  };
  static absl::StatusOr<std::shared_ptr<const Tokens>> Read(
      const TokenFiles& files);
  std::shared_ptr<const Tokens> tokens() const;

  TokenFiles files_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Tokens> tokens_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<Tokens>();
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_AUTH_H_
