// The service commands of `tailsweep`: submit, status, watch, jobs,
// results, cancel, resume. Each talks to the coordinator over gRPC with a
// deadline; the address comes from --coordinator, else
// TAILSWEEP_COORDINATOR, else loopback.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/output.h"
#include "core/schema/sweep_spec.h"
#include "core/number_text.h"
#include "proto/client_channel.h"
#include "proto/tailsweep.grpc.pb.h"

namespace tailsweep::cli {
namespace {

using nlohmann::json;

std::string DefaultCoordinator() {
  const char* env = std::getenv("TAILSWEEP_COORDINATOR");
  return env ? env : "127.0.0.1:50551";
}

std::string FromEnv(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The coordinator a command talks to: address, TLS CA and token file.
struct Connection {
  ChannelOptions options{DefaultCoordinator(), FromEnv("TAILSWEEP_TOKEN_FILE"),
                         FromEnv("TAILSWEEP_TLS_CA")};
  std::optional<Client> client;
  std::unique_ptr<v1::Coordinator::Stub> stub;
  const std::string& address = options.address;

  v1::Coordinator::Stub& Stub() {
    if (!stub) {
      absl::StatusOr<Client> c = Connect(options);
      if (!c.ok()) {  // an unreadable --token-file or --tls-ca
        std::fprintf(stderr, "tailsweep: %s\n",
                     std::string(c.status().message()).c_str());
        std::exit(2);
      }
      client = *c;
      stub = v1::Coordinator::NewStub(client->channel);
    }
    return *stub;
  }
  std::unique_ptr<grpc::ClientContext> Context() {
    Stub();
    return client->Context(std::chrono::seconds(30));
  }
};

absl::Status FromGrpc(const grpc::Status& s, const std::string& address) {
  if (s.ok()) return absl::OkStatus();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat(
        "coordinator at ", address, " is unreachable (", s.error_message(),
        "); start it with tailsweep-coordinator or pass --coordinator"));
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

void AddConnection(CLI::App& app, Connection* c) {
  app.add_option(
         "--coordinator", c->options.address,
         "Coordinator address (default: TAILSWEEP_COORDINATOR or loopback)")
      ->capture_default_str();
  app.add_option("--token-file", c->options.token_file,
                 "Bearer token for a coordinator started with --token-file "
                 "(default: TAILSWEEP_TOKEN_FILE)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-ca", c->options.tls_ca,
                 "PEM CA file: connect with TLS (default: TAILSWEEP_TLS_CA)")
      ->check(CLI::ExistingFile);
}

std::string CellText(
    const google::protobuf::RepeatedPtrField<v1::KeyValue>& cell,
    const std::set<std::string>& skip = {}) {
  std::vector<std::string> parts;
  for (const auto& kv : cell) {
    if (skip.count(kv.key()) == 0) parts.push_back(kv.key() + "=" + kv.value());
  }
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<v1::GetSweepStatusResponse> GetStatus(Connection& c,
                                                     const std::string& sweep) {
  v1::GetSweepStatusRequest req;
  req.set_sweep(sweep);
  v1::GetSweepStatusResponse resp;
  if (absl::Status s = FromGrpc(
          c.Stub().GetSweepStatus(c.Context().get(), req, &resp), c.address);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::StatusOr<v1::ListJobsResponse> ListJobs(Connection& c,
                                              const std::string& sweep) {
  v1::ListJobsRequest req;
  req.set_sweep(sweep);
  v1::ListJobsResponse resp;
  if (absl::Status s =
          FromGrpc(c.Stub().ListJobs(c.Context().get(), req, &resp), c.address);
      !s.ok()) {
    return s;
  }
  return resp;
}

RunFn DefineSubmit(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string spec;
  };
  auto f = std::make_shared<Flags>();
  AddConnection(app, &f->c);
  app.add_option("SPEC", f->spec, "Sweep spec (YAML)")->required();
  return [f]() -> absl::Status {
    // Parse here first: spec errors need no coordinator.
    absl::StatusOr<SweepSpec> spec = LoadSweepSpec(f->spec);
    if (!spec.ok()) return spec.status();
    absl::StatusOr<std::vector<JobSpec>> jobs = ExpandSweep(*spec);
    if (!jobs.ok()) return jobs.status();
    std::ifstream in(f->spec);
    std::stringstream text;
    text << in.rdbuf();
    v1::SubmitSweepRequest req;
    req.set_spec_yaml(text.str());
    req.set_source_name(f->spec);
    v1::SubmitSweepResponse resp;
    if (absl::Status s =
            FromGrpc(f->c.Stub().SubmitSweep(f->c.Context().get(), req, &resp),
                     f->c.address);
        !s.ok()) {
      return s;
    }
    std::cout << "sweep " << resp.sweep() << ": " << resp.jobs_added()
              << " jobs added, " << resp.jobs_existing() << " already there\n";
    return absl::OkStatus();
  };
}

json CountsJson(const v1::GetSweepStatusResponse& s) {
  return {{"queued", s.queued()},
          {"leased", s.leased()},
          {"done", s.done()},
          {"failed", s.failed()},
          {"cancelled", s.cancelled()}};
}

RunFn DefineStatus(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    Format format = Format::kText;
  };
  auto f = std::make_shared<Flags>();
  AddConnection(app, &f->c);
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  AddFormatOption(app, &f->format);
  return [f]() -> absl::Status {
    absl::StatusOr<v1::GetSweepStatusResponse> s = GetStatus(f->c, f->sweep);
    if (!s.ok()) return s.status();
    if (f->format == Format::kJson) {
      PrintJson(CountsJson(*s));
    } else {
      std::cout << absl::StrFormat(
          "%s: %d done, %d running, %d queued, %d failed, %d cancelled\n",
          f->sweep, s->done(), s->leased(), s->queued(), s->failed(),
          s->cancelled());
    }
    return absl::OkStatus();
  };
}

RunFn DefineWatch(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    double interval = 1.0;
  };
  auto f = std::make_shared<Flags>();
  AddConnection(app, &f->c);
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--interval", f->interval, "Seconds between updates")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return [f]() -> absl::Status {
    std::unique_ptr<Progress> bar;
    while (true) {
      absl::StatusOr<v1::GetSweepStatusResponse> s = GetStatus(f->c, f->sweep);
      if (!s.ok()) return s.status();
      const int64_t total =
          s->queued() + s->leased() + s->done() + s->failed() + s->cancelled();
      const int64_t finished = s->done() + s->failed() + s->cancelled();
      if (!bar) bar = std::make_unique<Progress>(f->sweep, total);
      bar->Update(finished, absl::StrFormat("done %d, running %d, queued %d, "
                                            "failed %d",
                                            s->done(), s->leased(), s->queued(),
                                            s->failed()));
      if (s->queued() + s->leased() == 0) return absl::OkStatus();
      std::this_thread::sleep_for(
          std::chrono::milliseconds(static_cast<int64_t>(f->interval * 1000)));
    }
  };
}

RunFn DefineJobs(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep;
    Format format = Format::kText;
  };
  auto f = std::make_shared<Flags>();
  AddConnection(app, &f->c);
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  AddFormatOption(app, &f->format);
  return [f]() -> absl::Status {
    absl::StatusOr<v1::ListJobsResponse> jobs = ListJobs(f->c, f->sweep);
    if (!jobs.ok()) return jobs.status();
    if (f->format == Format::kJson) {
      json doc = json::array();
      for (const auto& j : jobs->jobs()) {
        json cell = json::object();
        for (const auto& kv : j.cell()) cell[kv.key()] = kv.value();
        doc.push_back({{"job_id", j.job_id()},
                       {"cell", cell},
                       {"state", j.state()},
                       {"attempt", j.attempt()},
                       {"epoch", j.epoch()},
                       {"holder", j.holder()},
                       {"last_error", j.last_error()}});
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& j : jobs->jobs()) {
      rows.push_back({j.job_id().substr(0, 12), CellText(j.cell()), j.state(),
                      absl::StrCat(j.attempt()), j.holder(),
                      j.last_error().substr(0, 60)});
    }
    PrintTable({"job", "cell", "state", "attempt", "holder", "last_error"},
               rows);
    return absl::OkStatus();
  };
}

// A number of a results row for JSON and CSV: null when it does not exist.
json Value(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// One results cell: "median [low, high]", "b" (bold in markdown) when the
// interval reaches 1, "*" when the run collapsed (k/n of n seeds), "!" when
// it diverged; over several seeds also n and the seeds' range.
std::string ResultCell(const v1::CellResult& r, bool markdown) {
  if (std::isnan(r.ratio_median())) {
    if (r.diverged() > 0) return "diverged";
    if (r.failed() > 0) return "failed";
    return r.done() == r.jobs() ? "-" : "pending";
  }
  std::string text = absl::StrFormat("%.3f [%.3f, %.3f]", r.ratio_median(),
                                     r.ratio_ci_low(), r.ratio_ci_high());
  if (markdown && r.bold()) text = "**" + text + "**";
  if (!markdown && r.bold()) text += " b";
  const auto of = [&](int64_t k) {
    return r.jobs() > 1 ? absl::StrCat(k, "/", r.done()) : std::string();
  };
  if (r.collapsed() > 0) text += " *" + of(r.collapsed());
  if (r.diverged() > 0) text += " !" + of(r.diverged());
  if (r.jobs() > 1) {
    absl::StrAppend(&text, absl::StrFormat(" n=%d (%.3f-%.3f)", r.done(),
                                           r.seed_min(), r.seed_max()));
  }
  return text;
}

RunFn DefineResults(CLI::App& app) {
  struct Flags {
    Connection c;
    std::string sweep, format = "table", columns = "kernel";
    bool per_seed = false;
  };
  auto f = std::make_shared<Flags>();
  AddConnection(app, &f->c);
  app.add_option("SWEEP", f->sweep, "Sweep name")->required();
  app.add_option("--format", f->format, "table, csv, json or markdown")
      ->check(CLI::IsMember({"table", "csv", "json", "markdown"}))
      ->capture_default_str();
  app.add_option("--group-by", f->columns,
                 "Grid key whose values become the columns (default: kernel)")
      ->capture_default_str();
  app.add_flag("--per-seed", f->per_seed,
               "One row per seed instead of aggregating over seeds");
  return [f]() -> absl::Status {
    v1::GetResultsRequest req;
    req.set_sweep(f->sweep);
    req.set_over_seeds(!f->per_seed);
    v1::GetResultsResponse results;
    if (absl::Status s = FromGrpc(
            f->c.Stub().GetResults(f->c.Context().get(), req, &results),
            f->c.address);
        !s.ok()) {
      return s;
    }
    if (f->format == "json" || f->format == "csv") {
      json doc = json::array();
      for (const v1::CellResult& r : results.rows()) {
        json row = json::object();
        for (const auto& kv : r.cell()) row[kv.key()] = kv.value();
        row.update({{"jobs", r.jobs()},
                    {"done", r.done()},
                    {"failed", r.failed()},
                    {"ratio_median", Value(r.ratio_median())},
                    {"ratio_mean", Value(r.ratio_mean())},
                    {"ratio_ci_low", Value(r.ratio_ci_low())},
                    {"ratio_ci_high", Value(r.ratio_ci_high())},
                    {"seed_min", Value(r.seed_min())},
                    {"seed_max", Value(r.seed_max())},
                    {"bold", r.bold()},
                    {"collapsed", r.collapsed()},
                    {"collapse_step", Value(r.collapse_step())},
                    {"diverged", r.diverged()},
                    {"hill_stat", Value(r.hill_stat())}});
        doc.push_back(row);
      }
      if (f->format == "json") {
        PrintJson(doc);
        return absl::OkStatus();
      }
      std::vector<std::string> header;
      for (const json& row : doc) {  // every key, in first-seen order
        for (const auto& item : row.items()) {
          if (std::find(header.begin(), header.end(), item.key()) ==
              header.end()) {
            header.push_back(item.key());
          }
        }
      }
      std::cout << absl::StrJoin(header, ",") << "\n";
      for (const json& row : doc) {
        std::vector<std::string> cells;
        for (const std::string& k : header) {
          const json v = row.contains(k) ? row[k] : json(nullptr);
          cells.push_back(v.is_string() ? v.get<std::string>()
                                        : (v.is_null() ? "" : v.dump()));
        }
        std::cout << absl::StrJoin(cells, ",") << "\n";
      }
      return absl::OkStatus();
    }
    // The paper's shape: one row per cell without the column key, one
    // column per value of it.
    std::vector<std::string> columns;
    std::vector<std::string> row_order;
    std::map<std::string, std::map<std::string, std::string>> table;
    for (const v1::CellResult& r : results.rows()) {
      std::string column = "-";
      for (const auto& kv : r.cell()) {
        if (kv.key() == f->columns) column = kv.value();
      }
      if (std::find(columns.begin(), columns.end(), column) == columns.end()) {
        columns.push_back(column);
      }
      const std::string row = CellText(r.cell(), {f->columns});
      if (table.count(row) == 0) row_order.push_back(row);
      table[row][column] = ResultCell(r, f->format == "markdown");
    }
    std::vector<std::string> header = {"cell"};
    header.insert(header.end(), columns.begin(), columns.end());
    std::vector<std::vector<std::string>> rows;
    for (const std::string& row : row_order) {
      std::vector<std::string> cells = {row.empty() ? "-" : row};
      for (const std::string& c : columns) {
        cells.push_back(table[row].count(c) ? table[row][c] : "");
      }
      rows.push_back(cells);
    }
    if (f->format == "markdown") {
      std::string separator = "|";
      for (size_t i = 0; i < header.size(); ++i) separator += "---|";
      std::cout << "| " << absl::StrJoin(header, " | ") << " |\n"
                << separator << "\n";
      for (const auto& r : rows)
        std::cout << "| " << absl::StrJoin(r, " | ") << " |\n";
    } else {
      PrintTable(header, rows);
      std::cout << "median distance ratio [95% bootstrap interval over "
                   "instances]; b: the interval reaches 1; *: collapsed; !: "
                   "diverged; over seeds: medians of the seeds, n=seeds "
                   "(range of their medians)\n";
    }
    return absl::OkStatus();
  };
}

// A command that acts on one sweep by name (cancel, resume): `call` makes
// the RPC, `say` prints its answer.
template <typename Request, typename Response>
RunFn DefineSweepAction(
    CLI::App& app,
    grpc::Status (v1::Coordinator::Stub::*call)(grpc::ClientContext*,
                                                const Request&, Response*),
    std::function<void(const std::string&, const Response&)> say) {
  auto c = std::make_shared<Connection>();
  auto sweep = std::make_shared<std::string>();
  AddConnection(app, c.get());
  app.add_option("SWEEP", *sweep, "Sweep name")->required();
  return [c, sweep, call, say]() -> absl::Status {
    Request req;
    req.set_sweep(*sweep);
    Response resp;
    if (absl::Status s = FromGrpc(
            (c->Stub().*call)(c->Context().get(), req, &resp), c->address);
        !s.ok()) {
      return s;
    }
    say(*sweep, resp);
    return absl::OkStatus();
  };
}

RunFn DefineCancel(CLI::App& app) {
  return DefineSweepAction<v1::CancelSweepRequest, v1::CancelSweepResponse>(
      app, &v1::Coordinator::Stub::CancelSweep,
      [](const std::string& sweep, const v1::CancelSweepResponse& r) {
        std::cout << sweep << ": " << r.jobs_cancelled() << " jobs cancelled\n";
      });
}

RunFn DefineResume(CLI::App& app) {
  return DefineSweepAction<v1::ResumeSweepRequest, v1::ResumeSweepResponse>(
      app, &v1::Coordinator::Stub::ResumeSweep,
      [](const std::string& sweep, const v1::ResumeSweepResponse& r) {
        std::cout << sweep << ": " << r.jobs_requeued()
                  << " failed or cancelled jobs requeued\n";
      });
}

RunFn DefineWorkers(CLI::App& app) {
  struct Flags {
    Connection c;
    Format format = Format::kText;
  };
  auto f = std::make_shared<Flags>();
  AddConnection(app, &f->c);
  AddFormatOption(app, &f->format);
  return [f]() -> absl::Status {
    v1::ListWorkersRequest req;
    v1::ListWorkersResponse resp;
    if (absl::Status s =
            FromGrpc(f->c.Stub().ListWorkers(f->c.Context().get(), req, &resp),
                     f->c.address);
        !s.ok()) {
      return s;
    }
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    if (f->format == Format::kJson) {
      json doc = json::array();
      for (const auto& w : resp.workers()) {
        doc.push_back({{"worker_id", w.worker_id()},
                       {"last_seen_ms", w.last_seen_ms()},
                       {"jobs_held", w.jobs_held()}});
      }
      PrintJson(doc);
      return absl::OkStatus();
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : resp.workers()) {
      rows.push_back(
          {w.worker_id(),
           absl::StrFormat("%.1fs ago", (now - w.last_seen_ms()) / 1000.0),
           absl::StrCat(w.jobs_held())});
    }
    PrintTable({"worker", "last_seen", "jobs_held"}, rows);
    return absl::OkStatus();
  };
}

}  // namespace

std::vector<Command> SweepCommands() {
  return {
      {"submit", "Submit a sweep spec to the coordinator", DefineSubmit},
      {"status", "Job counts of a sweep", DefineStatus},
      {"watch", "Live progress of a sweep until it finishes", DefineWatch},
      {"jobs", "The jobs of a sweep", DefineJobs},
      {"results", "Results table of a sweep (table, csv, json, markdown)",
       DefineResults},
      {"cancel", "Cancel a sweep's queued and running jobs", DefineCancel},
      {"resume", "Requeue a sweep's failed and cancelled jobs", DefineResume},
      {"workers", "Workers seen by the coordinator and the jobs they hold",
       DefineWorkers},
  };
}

}  // namespace tailsweep::cli
