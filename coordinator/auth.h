#ifndef TAILSWEEP_COORDINATOR_AUTH_H_
#define TAILSWEEP_COORDINATOR_AUTH_H_

// Bearer-token authentication (--token-file): every call must carry the
// metadata "authorization: Bearer TOKEN". Tokens are compared as SHA-256
// digests with a constant-time comparison, so neither the token's bytes nor
// its length leak through timing.

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

class TokenAuth {
 public:
  // An empty token turns authentication off.
  explicit TokenAuth(absl::string_view token);

  // OK when off or when `authorization` is "Bearer TOKEN";
  // Unauthenticated otherwise (the message never echoes what was sent).
  absl::Status Check(absl::string_view authorization) const;
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  std::string digest_;  // SHA-256 of "Bearer TOKEN"
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_AUTH_H_
