#ifndef TAILSWEEP_COORDINATOR_TELEMETRY_H_
#define TAILSWEEP_COORDINATOR_TELEMETRY_H_

// The coordinator's Prometheus metrics (prometheus-cpp), served as text on
// the HTTP gateway's /metrics. Names and labels follow Prometheus' naming
// guide: a `tailsweep_` prefix, `_total` on counters, `_seconds` and
// `_bytes` in units, no job-id labels (a sweep has thousands):
//   tailsweep_jobs{sweep, state}                  gauge, at scrape time
//   tailsweep_leases_granted_total                counter
//   tailsweep_leases_renewed_total                counter
//   tailsweep_leases_expired_total                counter
//   tailsweep_leases_fenced_total{method}         calls refused for a stale
//                                                 or foreign lease
//   tailsweep_metric_points_ingested_total        counter
//   tailsweep_rpc_duration_seconds{method}        histogram, every RPC
//   tailsweep_rpc_requests_total{method, code}    counter, every RPC
//   tailsweep_store_healthy                       1 while the store writes
//   tailsweep_store_free_bytes{path}              free space where the
//                                                 database lives
//   tailsweep_store_write_refusals_total          writes refused while the
//                                                 disk could not take them
//   tailsweep_store_file_bytes{file}              db, wal
//   tailsweep_build_info{version}                 1
//   tailsweep_http_refused_total{reason}          HTTP requests refused:
//                                                 unauthenticated,
//                                                 forbidden (role),
//                                                 rate_limited, too_large
//   tailsweep_auth_refused_total{role, method}    calls refused for their
//                                                 token: role "none" when
//                                                 it is no token at all
//   tailsweep_notices_total{outcome}              webhook notices: sent,
//                                                 retried, failed, dropped
//   tailsweep_backups_total{outcome}              backups (backup.h): ok,
//                                                 failed
//   tailsweep_backup_last_success_timestamp_seconds
//                                                 when the newest good
//                                                 backup was written (Unix;
//                                                 absent before the first):
//                                                 alert on its age
//   tailsweep_backup_last_bytes                   that backup's size
//   tailsweep_backup_last_duration_seconds        and how long it took
// Thread-safe.

#include <grpcpp/support/server_interceptor.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace tailsweep {

class Store;

class Telemetry {
 public:
  // `db_path`: the store's file, whose size (and its -wal's) is reported.
  explicit Telemetry(std::string db_path);
  ~Telemetry();

  void LeasesGranted(int64_t n);
  void LeaseRenewed();
  void LeasesExpired(int64_t n);
  void PointsIngested(int64_t n);
  // One HTTP request the gateway refused, and why (a short word).
  void HttpRefused(const std::string& reason);
  // One call refused for its token (auth.h): the token's role ("none":
  // not a token) and the method or HTTP route.
  void AuthRefused(const std::string& role, const std::string& method);
  // One webhook notice's outcome (notifier.h).
  void Notice(const std::string& outcome);
  // One backup's outcome (backup.h): for a good one, when it was written
  // (Unix ms), its size and how long it took.
  void Backup(bool ok, int64_t wall_ms = 0, int64_t bytes = 0,
              double seconds = 0);
  // One finished RPC: `method` as gRPC names it ("/tailsweep.v1.Coordinator
  // /Heartbeat"; the label keeps the last part).
  void Rpc(const std::string& method, int code, double seconds);

  // The exposition text, job gauges and storage health read from `store`
  // now.
  std::string Text(Store& store);

  // A server interceptor factory timing every call into Rpc().
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  InterceptorFactory();

 private:
  struct Families;
  std::string db_path_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_TELEMETRY_H_
