// The Coordinator service's metric reads (service.h): one job's points
// (GetMetrics, whole or downsampled) and a whole sweep's (ListSweepMetrics).

#include <algorithm>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "coordinator/downsample.h"
#include "coordinator/service.h"
#include "coordinator/validate.h"
#include "core/schema/status_macros.h"
#include "proto/wire_records.h"

namespace tailsweep {
namespace {

// A point's bytes in a MetricSeries: its step (a varint) and value.
constexpr int64_t kSeriesPointBytes = 14;

// The metrics page token: the last point's name and step.
std::string PageToken(const MetricPoint& last) {
  return absl::StrCat(last.name, "\n", last.step);
}
absl::Status ParsePageToken(const std::string& token, std::string* name,
                            int64_t* step) {
  const size_t cut = token.rfind('\n');
  if (cut == std::string::npos || cut == 0 ||
      !absl::SimpleAtoi(token.substr(cut + 1), step)) {
    return absl::InvalidArgumentError(
        "page_token is not one this service gave out");
  }
  *name = token.substr(0, cut);
  return absl::OkStatus();
}

// The sweep metrics page token: the last point's grid position, name and
// step, in URL- and header-safe base64 (a name may hold any character).
std::string SweepPageToken(const Store::MetricSeries& last) {
  return absl::WebSafeBase64Escape(absl::StrCat(
      last.position, "\n", PageToken({last.name, last.steps.back(), 0})));
}
absl::Status ParseSweepPageToken(const std::string& token,
                                 Store::SweepMetricsQuery::After* after) {
  std::string text;
  const size_t cut = absl::WebSafeBase64Unescape(token, &text)
                         ? text.find('\n')
                         : std::string::npos;
  if (cut == std::string::npos ||
      !absl::SimpleAtoi(text.substr(0, cut), &after->position) ||
      after->position < 0 ||
      !ParsePageToken(text.substr(cut + 1), &after->name, &after->step).ok()) {
    return absl::InvalidArgumentError(
        "page_token is not one this service gave out");
  }
  return absl::OkStatus();
}

// The sweep curves page token (ListSweepMetrics at max_points): a job's grid
// position and where in that job the next page starts (a metrics page
// token), or nothing when it starts with the next job.
constexpr absl::string_view kCurvesToken = "curves:";
std::string CurvesPageToken(int64_t position, const std::string& in_job) {
  return absl::WebSafeBase64Escape(
      absl::StrCat(kCurvesToken, position, "\n", in_job));
}
absl::Status ParseCurvesPageToken(const std::string& token, int64_t* position,
                                  std::string* in_job) {
  std::string text;
  const size_t cut = absl::WebSafeBase64Unescape(token, &text) &&
                             absl::StartsWith(text, kCurvesToken)
                         ? text.find('\n')
                         : std::string::npos;
  std::string name;
  int64_t step = 0;
  if (cut == std::string::npos ||
      !absl::SimpleAtoi(
          text.substr(kCurvesToken.size(), cut - kCurvesToken.size()),
          position) ||
      *position < 0 ||
      (cut + 1 < text.size() &&
       !ParsePageToken(text.substr(cut + 1), &name, &step).ok())) {
    return absl::InvalidArgumentError(
        "page_token is not one this service gave out");
  }
  *in_job = text.substr(cut + 1);
  return absl::OkStatus();
}

}  // namespace

grpc::Status CoordinatorService::GetMetricsInLane(
    grpc::ServerContext* ctx, const v1::GetMetricsRequest* req,
    v1::GetMetricsResponse* resp) {
  TS_AUTHORIZE(ctx, "GetMetrics");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  Store::MetricsQuery q;
  q.job_id = req->job_id();
  q.names.assign(req->names().begin(), req->names().end());
  q.step_min = req->step_min();
  q.step_max = req->step_max();
  const int64_t page =
      req->page_size() > 0 ? req->page_size() : kDefaultMetricsPage;
  q.limit = page + 1;  // one more tells whether a next page exists
  if (!req->page_token().empty()) {
    TS_GRPC_RETURN_IF_ERROR(
        ParsePageToken(req->page_token(), &q.after_name, &q.after_step));
  }
  if (req->max_points() > 0) {
    return Answer(DownsampledMetrics(std::move(q), req->max_points(), resp));
  }
  absl::StatusOr<std::vector<MetricPoint>> points = store_->Metrics(q);
  if (!points.ok()) return Answer(points.status());
  const bool more = static_cast<int64_t>(points->size()) > page;
  if (more) points->resize(static_cast<size_t>(page));
  for (const MetricPoint& p : *points) ToProto(p, resp->add_points());
  if (more) resp->set_next_page_token(PageToken(points->back()));
  return grpc::Status::OK;
}

absl::Status CoordinatorService::DownsampledMetrics(
    Store::MetricsQuery q, int max_points, v1::GetMetricsResponse* resp) {
  // Whole names, each cut to max_points, until the page is full; the next
  // page starts after the last name sent.
  constexpr int64_t kChunk = 50000;
  q.limit = kChunk;
  std::vector<MetricPoint> series;
  int64_t bytes = 0;
  auto flush = [&]() -> bool {  // true: the page is full
    if (series.empty()) return false;
    const std::string name = series.front().name;
    for (const MetricPoint& p :
         DownsampleMinMax(std::move(series), max_points)) {
      v1::MetricPoint* out = resp->add_points();
      ToProto(p, out);
      bytes += static_cast<int64_t>(out->ByteSizeLong()) + 2;
    }
    series.clear();
    if (bytes <= kMaxPageBytes / 2) return false;
    resp->set_next_page_token(
        PageToken({name, std::numeric_limits<int64_t>::max(), 0}));
    return true;
  };
  while (true) {
    absl::StatusOr<std::vector<MetricPoint>> chunk = store_->Metrics(q);
    if (!chunk.ok()) return chunk.status();
    if (static_cast<int64_t>(chunk->size()) == kChunk) {
      // Where the next chunk starts, taken before the points move on: a
      // moved-from name is empty, and read from "" the chunk came back
      // again and again (a 50,000-point series grew without end).
      q.after_name = chunk->back().name;
      q.after_step = chunk->back().step;
    }
    for (MetricPoint& p : *chunk) {
      if (!series.empty() && series.front().name != p.name && flush()) {
        return absl::OkStatus();
      }
      series.push_back(std::move(p));
    }
    if (static_cast<int64_t>(chunk->size()) < kChunk) break;
  }
  // The last name: however full the page, no page follows.
  flush();
  resp->clear_next_page_token();
  return absl::OkStatus();
}

grpc::Status CoordinatorService::ListSweepMetricsInLane(
    grpc::ServerContext* ctx, const v1::ListSweepMetricsRequest* req,
    v1::ListSweepMetricsResponse* resp) {
  TS_AUTHORIZE(ctx, "ListSweepMetrics");
  TS_GRPC_RETURN_IF_ERROR(Validate(*req));
  if (req->max_points() > 0) {
    return Answer(DownsampledSweepMetrics(*req, resp));
  }
  Store::SweepMetricsQuery q;
  q.sweep = req->sweep();
  q.names.assign(req->names().begin(), req->names().end());
  q.step_min = req->step_min();
  q.step_max = req->step_max();
  if (!req->page_token().empty()) {
    TS_GRPC_RETURN_IF_ERROR(ParseSweepPageToken(req->page_token(), &q.after));
  }
  const int64_t page =
      req->page_size() > 0 ? req->page_size() : kDefaultSweepMetricsPage;
  q.limit = page;
  absl::StatusOr<std::vector<Store::MetricSeries>> series =
      store_->SweepMetrics(q);
  if (!series.ok()) return Answer(series.status());
  // The page stays under kMaxPageBytes: a page of many short series (one
  // point each) is cut where its bytes run out, after at least one point.
  int64_t points = 0, bytes = 0;
  bool cut = false;
  const Store::MetricSeries* sent = nullptr;  // the last series sent
  for (Store::MetricSeries& s : *series) {
    const int64_t overhead =
        static_cast<int64_t>(s.job_id.size() + s.name.size()) + 16;
    int64_t keep = static_cast<int64_t>(s.steps.size());
    if (bytes + overhead + keep * kSeriesPointBytes > kMaxPageBytes) {
      keep = std::max<int64_t>(
          points == 0 ? 1 : 0,
          (kMaxPageBytes - bytes - overhead) / kSeriesPointBytes);
      cut = true;
    }
    if (keep == 0) {  // the page ends with the series before
      resp->set_next_page_token(SweepPageToken(*sent));
      return grpc::Status::OK;
    }
    s.steps.resize(static_cast<size_t>(keep));
    s.values.resize(static_cast<size_t>(keep));
    points += keep;
    bytes += overhead + keep * kSeriesPointBytes;
    v1::MetricSeries* out = resp->add_series();
    out->set_job_id(s.job_id);
    out->set_name(s.name);
    out->mutable_steps()->Add(s.steps.begin(), s.steps.end());
    out->mutable_values()->Add(s.values.begin(), s.values.end());
    sent = &s;
    if (cut) {
      resp->set_next_page_token(SweepPageToken(s));
      return grpc::Status::OK;
    }
  }
  // A full page may have more after it; the next read says (maybe empty).
  if (points == page) {
    resp->set_next_page_token(SweepPageToken(series->back()));
  }
  return grpc::Status::OK;
}

absl::Status CoordinatorService::DownsampledSweepMetrics(
    const v1::ListSweepMetricsRequest& req,
    v1::ListSweepMetricsResponse* resp) {
  // Whole jobs until page_size points or half the page's bytes; a job
  // whose curves alone pass that is cut between names.
  int64_t resume = -1;
  std::string in_job;  // where job `resume` goes on; empty: the next job
  if (!req.page_token().empty()) {
    TS_RETURN_IF_ERROR(
        ParseCurvesPageToken(req.page_token(), &resume, &in_job));
  }
  Store::JobsQuery jobs;
  jobs.sweep = req.sweep();
  jobs.limit = 500;
  jobs.after_position = in_job.empty() ? resume : resume - 1;
  const int64_t page =
      req.page_size() > 0 ? req.page_size() : kDefaultSweepMetricsPage;
  int64_t points = 0, bytes = 0;
  while (true) {
    absl::StatusOr<std::vector<JobRow>> rows = store_->Jobs(jobs);
    if (!rows.ok()) return rows.status();
    for (const JobRow& row : *rows) {
      Store::MetricsQuery q;
      q.job_id = row.job_id;
      q.names.assign(req.names().begin(), req.names().end());
      q.step_min = req.step_min();
      q.step_max = req.step_max();
      std::string next = row.position == resume ? in_job : "";
      do {
        if (!next.empty()) {
          TS_RETURN_IF_ERROR(
              ParsePageToken(next, &q.after_name, &q.after_step));
        }
        v1::GetMetricsResponse one;
        TS_RETURN_IF_ERROR(DownsampledMetrics(q, req.max_points(), &one));
        for (const v1::MetricPoint& p : one.points()) {
          if (resp->series_size() == 0 ||
              resp->series().rbegin()->job_id() != row.job_id ||
              resp->series().rbegin()->name() != p.name()) {
            v1::MetricSeries* s = resp->add_series();
            s->set_job_id(row.job_id);
            s->set_name(p.name());
            bytes +=
                static_cast<int64_t>(row.job_id.size() + p.name().size()) + 16;
          }
          v1::MetricSeries* s =
              resp->mutable_series()->Mutable(resp->series_size() - 1);
          s->add_steps(p.step());
          s->add_values(p.value());
          ++points;
          bytes += kSeriesPointBytes;
        }
        next = one.next_page_token();
        if (!next.empty() && bytes > kMaxPageBytes / 2) {
          resp->set_next_page_token(CurvesPageToken(row.position, next));
          return absl::OkStatus();
        }
      } while (!next.empty());
      if (points >= page || bytes > kMaxPageBytes / 2) {
        // The next read says whether more jobs follow (maybe none).
        resp->set_next_page_token(CurvesPageToken(row.position, ""));
        return absl::OkStatus();
      }
    }
    if (static_cast<int64_t>(rows->size()) < jobs.limit) break;
    jobs.after_position = rows->back().position;
  }
  return absl::OkStatus();
}

}  // namespace tailsweep
