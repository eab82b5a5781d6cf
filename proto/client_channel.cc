#include "proto/client_channel.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tailsweep {

std::unique_ptr<grpc::ClientContext> Client::Context(
    std::chrono::milliseconds timeout) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  AddToken(ctx.get(), token);
  return ctx;
}

void AddToken(grpc::ClientContext* ctx, const std::string& token) {
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token-file ", path, ": cannot read"));
  }
  std::string line;
  std::getline(in, line);
  const std::string token(absl::StripAsciiWhitespace(line));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--token-file ", path, ": empty (put the token on the first line)"));
  }
  return token;
}

absl::StatusOr<Client> Connect(const ChannelOptions& options) {
  Client client;
  if (!options.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(options.token_file);
    if (!token.ok()) return token.status();
    client.token = *token;
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!options.tls_ca.empty()) {
    std::ifstream in(options.tls_ca);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in || pem.str().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-ca ", options.tls_ca, ": cannot read"));
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  if (options.max_reconnect_backoff_ms > 0) {
    const int cap = static_cast<int>(
        std::min<int64_t>(options.max_reconnect_backoff_ms, 1 << 30));
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, std::min(250, cap));
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, cap);
  }
  client.channel =
      grpc::CreateCustomChannel(options.address, credentials, args);
  if (options.bulk_channel) {
    // Its own subchannels: channels of one process share connections
    // otherwise.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    client.bulk_channel =
        grpc::CreateCustomChannel(options.address, credentials, args);
  }
  return client;
}

}  // namespace tailsweep
