#ifndef TAILSWEEP_REPORT_PAGE_H_
#define TAILSWEEP_REPORT_PAGE_H_

// The HTML pages that draw report documents (report_data.h): one
// self-contained file, the browser code (report/web/report.js, .css) and
// uPlot inlined, that opens offline. Three uses:
// - a report file: the document inlined (`tailsweep report`);
// - a live sweep page: the document fetched from `data_url` every second
//   and redrawn (the dashboard's /sweeps/NAME);
// - the dashboard's index: the sweeps listed from `data_url` (/api/sweeps).

#include <string>

#include "absl/strings/string_view.h"

namespace tailsweep {

struct PageInput {
  std::string title;
  std::string report_json;  // a report document; empty: fetch data_url
  std::string data_url;     // live pages: where the document comes from
  bool index = false;       // data_url lists sweeps (the dashboard's index)
};

std::string ReportPage(const PageInput& input);

// `text` safe as HTML text or a double-quoted attribute value.
std::string HtmlEscape(absl::string_view text);

// `json` safe inside <script type="application/json">: '<', '>' and '&'
// written as JSON escapes, so no "</script>" or "<!--" can end it early.
std::string ScriptSafeJson(absl::string_view json);

}  // namespace tailsweep

#endif  // TAILSWEEP_REPORT_PAGE_H_
