// GET /api/sweeps/NAME/history (http_api.h): a sweep's metric points from
// ListSweepMetrics, as CSV (job_id,name,step,value) or JSON series, one
// page or every page streamed.

#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/http_api.h"
#include "core/number_text.h"
#include "core/schema/json_number.h"
#include "core/schema/status_macros.h"

namespace tailsweep::http_api {
namespace {

constexpr char kNextPageHeader[] = "X-Next-Page-Token";
constexpr int32_t kStreamPagePoints = 10000;

// A value as CSV and the JSON series spell it: the shortest exact decimal,
// or the job protocol's words for NaN and the infinities (JsonNumber: what
// result files, metrics lines and `tailsweep export` write; JSON quotes
// them).
std::string ValueText(double v, bool quote_words) {
  if (std::isfinite(v)) return FormatDouble(v);
  const std::string word = JsonNumber(v).get<std::string>();
  return quote_words ? absl::StrCat("\"", word, "\"") : word;
}

void AppendCsv(const v1::ListSweepMetricsResponse& page, std::string* out) {
  for (const v1::MetricSeries& s : page.series()) {
    const std::string lead =
        absl::StrCat(CsvField(s.job_id()), ",", CsvField(s.name()), ",");
    for (int i = 0; i < s.steps_size(); ++i) {
      absl::StrAppend(out, lead, s.steps(i), ",", ValueText(s.values(i), false),
                      "\r\n");
    }
  }
}

// Series as JSON objects, each after a comma unless it is the first.
void AppendJson(const v1::ListSweepMetricsResponse& page, bool* first,
                std::string* out) {
  for (const v1::MetricSeries& s : page.series()) {
    if (!*first) out->push_back(',');
    *first = false;
    absl::StrAppend(
        out, "{\"job_id\":", nlohmann::json(s.job_id()).dump(), ",\"name\":",
        nlohmann::json(s.name()).dump(-1, ' ', false,
                                      nlohmann::json::error_handler_t::replace),
        ",\"steps\":[");
    for (int i = 0; i < s.steps_size(); ++i) {
      absl::StrAppend(out, i ? "," : "", s.steps(i));
    }
    out->append("],\"values\":[");
    for (int i = 0; i < s.values_size(); ++i) {
      absl::StrAppend(out, i ? "," : "", ValueText(s.values(i), true));
    }
    out->append("]}");
  }
}

absl::StatusOr<v1::ListSweepMetricsRequest> HistoryRequest(
    const httplib::Request& req) {
  v1::ListSweepMetricsRequest r;
  r.set_sweep(req.matches[1]);
  TS_RETURN_IF_ERROR(SetMetricsSelection(req, &r));
  absl::StatusOr<int32_t> size = PageSizeParam(req);
  if (!size.ok()) return size.status();
  r.set_page_size(*size);
  r.set_page_token(req.get_param_value("page_token"));
  return r;
}

}  // namespace

void ServeHistory(const CoordinatorApi& calls, const httplib::Request& req,
                  httplib::Response& res) {
  const std::string format =
      req.has_param("format") ? req.get_param_value("format") : "csv";
  if (format != "csv" && format != "json") {
    return SendError(res, absl::InvalidArgumentError(
                              absl::StrCat("query parameter 'format' is '",
                                           format, "'; allowed: csv, json")));
  }
  const bool csv = format == "csv";
  absl::StatusOr<v1::ListSweepMetricsRequest> r = HistoryRequest(req);
  if (!r.ok()) return SendError(res, r.status());
  const bool one_page =
      req.has_param("page_size") || req.has_param("page_token");
  // Streamed, in smaller pages than a client's: each page's answer is
  // serialised on a gRPC thread at the workers' priority, and short turns
  // there keep a lease from waiting behind one (docs/performance.md).
  if (!one_page) r->set_page_size(kStreamPagePoints);
  // The first page here: a bad request or an unknown sweep is an error
  // answer, not a cut-off stream.
  auto page = std::make_shared<v1::ListSweepMetricsResponse>();
  if (absl::Status st = calls.ListSweepMetrics(*r, page.get()); !st.ok()) {
    return SendError(res, st);
  }
  const char* type = csv ? "text/csv; charset=utf-8" : "application/json";
  const std::string header =
      csv ? "job_id,name,step,value\r\n" : "{\"series\":[";
  if (one_page) {
    // One page; the token for the next in a header (and the JSON body).
    std::string body = header;
    bool first = true;
    if (csv) {
      AppendCsv(*page, &body);
    } else {
      AppendJson(*page, &first, &body);
      absl::StrAppend(&body, "],\"next_page_token\":",
                      nlohmann::json(page->next_page_token()).dump(), "}");
    }
    res.set_header(kNextPageHeader, page->next_page_token());
    res.set_content(body, type);
    return;
  }
  // Every page, read as the client takes them: the gateway holds one page
  // at a time, and each read holds the store's lock for one page only. A
  // read that fails midway cuts the stream off (the client sees a
  // truncated chunked body, not a short table that looks whole).
  struct Stream {
    v1::ListSweepMetricsRequest request;
    std::shared_ptr<v1::ListSweepMetricsResponse> page;
    bool first = true, started = false;
  };
  auto stream = std::make_shared<Stream>(Stream{*r, page});
  res.set_chunked_content_provider(
      type, [calls, stream, csv, header](size_t, httplib::DataSink& sink) {
        std::string chunk;
        if (!stream->started) {
          chunk = header;
          stream->started = true;
        }
        if (csv) {
          AppendCsv(*stream->page, &chunk);
        } else {
          AppendJson(*stream->page, &stream->first, &chunk);
        }
        const std::string token = stream->page->next_page_token();
        if (token.empty() && !csv) chunk += "],\"next_page_token\":\"\"}";
        if (!chunk.empty() && !sink.write(chunk.data(), chunk.size())) {
          return false;
        }
        if (token.empty()) {
          sink.done();
          return true;
        }
        stream->request.set_page_token(token);
        stream->page->Clear();
        return calls.ListSweepMetrics(stream->request, stream->page.get()).ok();
      });
}

}  // namespace tailsweep::http_api
