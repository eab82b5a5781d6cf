#include "coordinator/telemetry.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "coordinator/store.h"
#include "core/schema/job_state.h"
#include "core/schema/version.h"

namespace tailsweep {
namespace {

// "/tailsweep.v1.Coordinator/Heartbeat" -> "Heartbeat".
std::string MethodLabel(const std::string& method) {
  const size_t cut = method.rfind('/');
  return cut == std::string::npos ? method : method.substr(cut + 1);
}

const char* CodeName(int code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN";
}

// Calls that carry a lease (job_id, epoch): refused with these codes, the
// caller's lease was stale or someone else's (store_internal CheckLease).
bool Fenced(const std::string& method, int code) {
  if (code != grpc::StatusCode::FAILED_PRECONDITION &&
      code != grpc::StatusCode::PERMISSION_DENIED) {
    return false;
  }
  for (const char* m :
       {"Heartbeat", "ReportMetrics", "CompleteJob", "FailJob", "ReleaseJob",
        "UploadCheckpoint", "DownloadCheckpoint"}) {
    if (method == m) return true;
  }
  return false;
}

class TimingInterceptor : public grpc::experimental::Interceptor {
 public:
  TimingInterceptor(grpc::experimental::ServerRpcInfo* info, Telemetry* t)
      : method_(info->method()), telemetry_(t) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    using grpc::experimental::InterceptionHookPoints;
    if (m->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      start_ = std::chrono::steady_clock::now();
    }
    if (m->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      const std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - start_;
      telemetry_->Rpc(method_, m->GetSendStatus().error_code(), took.count());
    }
    m->Proceed();
  }

 private:
  std::string method_;
  Telemetry* telemetry_;
  std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
};

class TimingFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit TimingFactory(Telemetry* t) : telemetry_(t) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new TimingInterceptor(info, telemetry_);
  }

 private:
  Telemetry* telemetry_;
};

}  // namespace

struct Telemetry::Families {
  prometheus::Family<prometheus::Gauge>* jobs;
  prometheus::Counter* granted;
  prometheus::Counter* renewed;
  prometheus::Counter* expired;
  prometheus::Family<prometheus::Counter>* fenced;
  prometheus::Counter* points;
  prometheus::Family<prometheus::Histogram>* rpc_seconds;
  prometheus::Family<prometheus::Counter>* rpc_requests;
  prometheus::Gauge* healthy;
  prometheus::Family<prometheus::Gauge>* free_bytes;
  prometheus::Gauge* refusals;
  prometheus::Family<prometheus::Gauge>* file_bytes;
  prometheus::Family<prometheus::Counter>* http_refused;
  prometheus::Family<prometheus::Counter>* auth_refused;
  prometheus::Family<prometheus::Counter>* notices;
  prometheus::Family<prometheus::Counter>* backups;
  // Absent until the first good backup.
  prometheus::Family<prometheus::Gauge>* backup_time;
  prometheus::Family<prometheus::Gauge>* backup_bytes;
  prometheus::Family<prometheus::Gauge>* backup_seconds;
  std::mutex scrape_mu;  // one scrape sets the gauges at a time
};

Telemetry::Telemetry(std::string db_path)
    : db_path_(std::move(db_path)),
      registry_(std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>()) {
  prometheus::Registry& r = *registry_;
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(
        {});
  };
  f_->jobs = &prometheus::BuildGauge()
                  .Name("tailsweep_jobs")
                  .Help("Jobs of each sweep by state, as the sweep sees them")
                  .Register(r);
  f_->granted = counter("tailsweep_leases_granted_total", "Leases granted");
  f_->renewed =
      counter("tailsweep_leases_renewed_total", "Lease renewals accepted");
  f_->expired = counter("tailsweep_leases_expired_total",
                        "Leases expired by the coordinator");
  f_->fenced = &prometheus::BuildCounter()
                    .Name("tailsweep_leases_fenced_total")
                    .Help(
                        "Calls refused because their lease was stale or "
                        "another worker's")
                    .Register(r);
  f_->points = counter("tailsweep_metric_points_ingested_total",
                       "Metric points accepted from workers");
  f_->rpc_seconds = &prometheus::BuildHistogram()
                         .Name("tailsweep_rpc_duration_seconds")
                         .Help("Time to answer each gRPC call, by method")
                         .Register(r);
  f_->http_refused = &prometheus::BuildCounter()
                          .Name("tailsweep_http_refused_total")
                          .Help("HTTP requests the gateway refused, by why")
                          .Register(r);
  f_->auth_refused = &prometheus::BuildCounter()
                          .Name("tailsweep_auth_refused_total")
                          .Help(
                              "Calls refused for their token, by its role "
                              "(none: no token) and method or route")
                          .Register(r);
  f_->notices = &prometheus::BuildCounter()
                     .Name("tailsweep_notices_total")
                     .Help(
                         "Webhook notices by outcome: sent, retried, "
                         "failed (given up), dropped (queue full)")
                     .Register(r);
  f_->backups = &prometheus::BuildCounter()
                     .Name("tailsweep_backups_total")
                     .Help("Backups of the database (--backup-dir), by outcome")
                     .Register(r);
  const auto gauges = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r);
  };
  f_->backup_time =
      gauges("tailsweep_backup_last_success_timestamp_seconds",
             "When the newest good backup was written (Unix seconds)");
  f_->backup_bytes =
      gauges("tailsweep_backup_last_bytes", "The newest good backup's size");
  f_->backup_seconds = gauges("tailsweep_backup_last_duration_seconds",
                              "How long the newest good backup took");
  f_->rpc_requests = &prometheus::BuildCounter()
                          .Name("tailsweep_rpc_requests_total")
                          .Help("gRPC calls answered, by method and code")
                          .Register(r);
  f_->healthy = &prometheus::BuildGauge()
                     .Name("tailsweep_store_healthy")
                     .Help(
                         "1 while the SQLite store accepts writes, 0 while "
                         "it cannot (a full disk, an I/O error: it heals by "
                         "itself; a damaged file: until a restart)")
                     .Register(r)
                     .Add({});
  f_->free_bytes = &prometheus::BuildGauge()
                        .Name("tailsweep_store_free_bytes")
                        .Help("Free space on the filesystem of the database")
                        .Register(r);
  // A gauge set from the store's own count at scrape time, as it counts
  // what a counter would (it never decreases).
  f_->refusals = &prometheus::BuildGauge()
                      .Name("tailsweep_store_write_refusals_total")
                      .Help(
                          "Writes refused while the store could not write, "
                          "each retried by its caller")
                      .Register(r)
                      .Add({});
  f_->file_bytes = &prometheus::BuildGauge()
                        .Name("tailsweep_store_file_bytes")
                        .Help("Size of the store's files")
                        .Register(r);
  prometheus::BuildGauge()
      .Name("tailsweep_build_info")
      .Help("The coordinator's build")
      .Register(r)
      .Add({{"version", Version()}})
      .Set(1);
}

Telemetry::~Telemetry() = default;

void Telemetry::LeasesGranted(int64_t n) {
  f_->granted->Increment(static_cast<double>(n));
}
void Telemetry::LeaseRenewed() { f_->renewed->Increment(); }

void Telemetry::HttpRefused(const std::string& reason) {
  f_->http_refused->Add({{"reason", reason}}).Increment();
}
void Telemetry::AuthRefused(const std::string& role,
                            const std::string& method) {
  f_->auth_refused->Add({{"role", role}, {"method", method}}).Increment();
}
void Telemetry::Notice(const std::string& outcome) {
  f_->notices->Add({{"outcome", outcome}}).Increment();
}
void Telemetry::Backup(bool ok, int64_t wall_ms, int64_t bytes,
                       double seconds) {
  f_->backups->Add({{"outcome", ok ? "ok" : "failed"}}).Increment();
  if (!ok) return;
  f_->backup_time->Add({}).Set(static_cast<double>(wall_ms) / 1000);
  f_->backup_bytes->Add({}).Set(static_cast<double>(bytes));
  f_->backup_seconds->Add({}).Set(seconds);
}
void Telemetry::LeasesExpired(int64_t n) {
  f_->expired->Increment(static_cast<double>(n));
}
void Telemetry::PointsIngested(int64_t n) {
  f_->points->Increment(static_cast<double>(n));
}

void Telemetry::Rpc(const std::string& method, int code, double seconds) {
  const std::string m = MethodLabel(method);
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  f_->rpc_seconds->Add({{"method", m}}, kBuckets).Observe(seconds);
  f_->rpc_requests->Add({{"method", m}, {"code", CodeName(code)}}).Increment();
  if (Fenced(m, code)) f_->fenced->Add({{"method", m}}).Increment();
}

std::string Telemetry::Text(Store& store) {
  std::lock_guard<std::mutex> lock(f_->scrape_mu);
  absl::StatusOr<std::vector<Store::SweepRow>> sweeps = store.Sweeps();
  if (sweeps.ok()) {
    for (const Store::SweepRow& s : *sweeps) {
      for (const JobState state : kJobStates) {
        f_->jobs
            ->Add({{"sweep", s.name},
                   {"state", std::string(JobStateName(state))}})
            .Set(static_cast<double>(s.counts.Of(state)));
      }
    }
  }
  f_->healthy->Set(sweeps.ok() && store.Healthy().ok() ? 1 : 0);
  f_->refusals->Set(static_cast<double>(store.StorageRefused()));
  if (absl::StatusOr<int64_t> free = store.DirFreeBytes(); free.ok()) {
    f_->free_bytes->Add({{"path", store.dir()}})
        .Set(static_cast<double>(*free));
  }
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(db_path_ + suffix, ec);
    f_->file_bytes->Add({{"file", *suffix ? "wal" : "db"}})
        .Set(ec ? 0 : static_cast<double>(bytes));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
Telemetry::InterceptorFactory() {
  return std::make_unique<TimingFactory>(this);
}

}  // namespace tailsweep
