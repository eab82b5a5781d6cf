#include "proto/paged_reads.h"

#include <utility>

#include "proto/wire_records.h"

namespace tailsweep {

absl::StatusOr<std::vector<v1::SweepInfo>> ListAllSweeps(
    const CoordinatorApi& c) {
  v1::ListSweepsResponse resp;
  if (absl::Status s = c.ListSweeps(v1::ListSweepsRequest(), &resp); !s.ok()) {
    return s;
  }
  return std::vector<v1::SweepInfo>(resp.sweeps().begin(), resp.sweeps().end());
}

absl::StatusOr<std::vector<v1::JobInfo>> ListAllJobs(const CoordinatorApi& c,
                                                     const std::string& sweep,
                                                     const std::string& state) {
  v1::ListJobsRequest req;
  req.set_sweep(sweep);
  req.set_state(state);
  std::vector<v1::JobInfo> out;
  while (true) {
    v1::ListJobsResponse page;
    if (absl::Status s = c.ListJobs(req, &page); !s.ok()) {
      return s;
    }
    for (v1::JobInfo& job : *page.mutable_jobs()) out.push_back(std::move(job));
    if (page.next_page_token().empty()) return out;
    req.set_page_token(page.next_page_token());
  }
}

absl::StatusOr<v1::GetResultsResponse> GetAllResults(
    const CoordinatorApi& c, v1::GetResultsRequest req) {
  v1::GetResultsResponse all;
  bool first = true;
  while (true) {
    v1::GetResultsResponse page;
    if (absl::Status s = c.GetResults(req, &page); !s.ok()) {
      return s;
    }
    if (first) {
      all.set_kind(page.kind());
      *all.mutable_pivot()->mutable_columns() = page.pivot().columns();
      all.mutable_pivot()->set_group_by(page.pivot().group_by());
      if (page.has_table()) {
        v1::ResultsTable& t = *all.mutable_table();
        *t.mutable_columns() = page.table().columns();
        t.set_headline(page.table().headline());
        t.set_group_by(page.table().group_by());
        t.set_note(page.table().note());
      }
      first = false;
    }
    for (v1::ResultsRow& r : *page.mutable_table()->mutable_rows()) {
      *all.mutable_table()->add_rows() = std::move(r);
    }
    // The counts of the newest page: the sweep as it is now.
    all.set_jobs(page.jobs());
    all.set_done(page.done());
    const int offset = all.rows_size();
    for (v1::PivotRow& row : *page.mutable_pivot()->mutable_rows()) {
      for (int i = 0; i < row.cells_size(); ++i) {
        if (row.cells(i) >= 0) row.set_cells(i, row.cells(i) + offset);
      }
      *all.mutable_pivot()->add_rows() = std::move(row);
    }
    for (v1::CellResult& r : *page.mutable_rows()) {
      *all.add_rows() = std::move(r);
    }
    for (v1::TailsResultRow& r : *page.mutable_tails()) {
      *all.add_tails() = std::move(r);
    }
    if (page.next_page_token().empty()) return all;
    req.set_page_token(page.next_page_token());
  }
}

absl::StatusOr<SweepResults> GetResultsTable(const CoordinatorApi& c,
                                             const std::string& sweep,
                                             bool over_seeds) {
  v1::GetResultsRequest req;
  req.set_sweep(sweep);
  req.set_over_seeds(over_seeds);
  req.set_table(true);
  absl::StatusOr<v1::GetResultsResponse> all = GetAllResults(c, req);
  if (!all.ok()) return all.status();
  // A coordinator that knows tables always sends columns (jobs, done, ...).
  if (all->table().columns().empty()) {
    return absl::FailedPreconditionError(
        "the coordinator is older than this client: results tables need a "
        "coordinator of tailsweep 0.2.0 or newer (upgrade it, or read it "
        "with a client of its own version)");
  }
  absl::StatusOr<ResultsTable> table = FromProto(all->table());
  if (!table.ok()) return table.status();
  return SweepResults{all->kind(), all->jobs(), all->done(), *std::move(table)};
}

absl::StatusOr<std::vector<v1::MetricPoint>> GetAllMetrics(
    const CoordinatorApi& c, v1::GetMetricsRequest req) {
  std::vector<v1::MetricPoint> out;
  while (true) {
    v1::GetMetricsResponse resp;
    if (absl::Status s = c.GetMetrics(req, &resp); !s.ok()) {
      return s;
    }
    out.insert(out.end(), resp.points().begin(), resp.points().end());
    if (resp.next_page_token().empty()) return out;
    req.set_page_token(resp.next_page_token());
  }
}

absl::StatusOr<std::vector<v1::MetricSeries>> ListAllSweepMetrics(
    const CoordinatorApi& c, v1::ListSweepMetricsRequest req) {
  std::vector<v1::MetricSeries> out;
  while (true) {
    v1::ListSweepMetricsResponse resp;
    if (absl::Status s = c.ListSweepMetrics(req, &resp); !s.ok()) {
      return s;
    }
    for (v1::MetricSeries& s : *resp.mutable_series()) {
      out.push_back(std::move(s));
    }
    if (resp.next_page_token().empty()) return out;
    req.set_page_token(resp.next_page_token());
  }
}

}  // namespace tailsweep
