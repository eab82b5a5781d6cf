#ifndef TAILSWEEP_TESTS_TESTING_RAW_CALL_H_
#define TAILSWEEP_TESTS_TESTING_RAW_CALL_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace tailsweep::testing {

// One call through gRPC's generic stub: the standard services need no
// generated client code. Returns the answer's bytes, and its trailing
// metadata in `trailers` when given.
inline grpc::Status RawCall(
    const std::string& address, const std::string& method,
    const std::string& request, std::string* response, bool streaming,
    const std::string& authorization = "",
    std::multimap<std::string, std::string>* trailers = nullptr) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
  grpc::Slice slice(request);
  grpc::ByteBuffer req(&slice, 1), resp;
  grpc::Status status;
  void* tag;
  bool ok;
  if (!streaming) {
    auto call = stub.PrepareUnaryCall(&ctx, method, req, &cq);
    call->StartCall();
    call->Finish(&resp, &status, reinterpret_cast<void*>(1));
    cq.Next(&tag, &ok);
  } else {
    auto call = stub.PrepareCall(&ctx, method, &cq);
    call->StartCall(reinterpret_cast<void*>(1));
    cq.Next(&tag, &ok);
    call->Write(req, reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
    call->WritesDone(reinterpret_cast<void*>(3));
    cq.Next(&tag, &ok);
    call->Read(&resp, reinterpret_cast<void*>(4));
    cq.Next(&tag, &ok);
    call->Finish(&status, reinterpret_cast<void*>(5));
    cq.Next(&tag, &ok);
  }
  if (trailers != nullptr) {
    trailers->clear();
    for (const auto& [k, v] : ctx.GetServerTrailingMetadata()) {
      trailers->emplace(std::string(k.data(), k.size()),
                        std::string(v.data(), v.size()));
    }
  }
  std::vector<grpc::Slice> slices;
  resp.Dump(&slices).IgnoreError();
  response->clear();
  for (const grpc::Slice& s : slices) {
    response->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_RAW_CALL_H_
