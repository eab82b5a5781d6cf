#include "coordinator/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "absl/strings/str_cat.h"

namespace tailsweep {
namespace {

std::string Sha256(absl::string_view text) {
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
         reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

}  // namespace

TokenAuth::TokenAuth(absl::string_view token)
    : enabled_(!token.empty()),
      digest_(Sha256(absl::StrCat("Bearer ", token))) {}

absl::Status TokenAuth::Check(absl::string_view authorization) const {
  if (!enabled_) return absl::OkStatus();
  const std::string got = Sha256(authorization);
  if (CRYPTO_memcmp(got.data(), digest_.data(), digest_.size()) == 0) {
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(
      authorization.empty()
          ? "this coordinator needs a token: pass --token-file"
          : "wrong token (see the coordinator's --token-file)");
}

}  // namespace tailsweep
