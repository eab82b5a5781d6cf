#include "report/page.h"

#include <string_view>

#include "absl/strings/str_cat.h"

namespace tailsweep {
namespace report_assets {
extern const std::string_view kUplotJs, kUplotCss, kReportJs, kReportCss;
}  // namespace report_assets
namespace {
absl::string_view Asset(std::string_view bytes) {
  return absl::string_view(bytes.data(), bytes.size());
}
}  // namespace

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ScriptSafeJson(absl::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ReportPage(const PageInput& in) {
  const absl::string_view uplot_js = Asset(report_assets::kUplotJs);
  const absl::string_view uplot_css = Asset(report_assets::kUplotCss);
  const absl::string_view report_js = Asset(report_assets::kReportJs);
  const absl::string_view report_css = Asset(report_assets::kReportCss);
  std::string page = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n<link rel=\"icon\" href=\"data:,\">\n<title>",
      HtmlEscape(in.title), "</title>\n<style>\n", uplot_css, "\n", report_css,
      "\n</style>\n</head>\n<body data-url=\"", HtmlEscape(in.data_url),
      "\" data-mode=\"",
      in.index ? "index" : (in.report_json.empty() ? "live" : "file"),
      "\">\n<main id=\"report\"><p class=\"loading\">Loading ",
      HtmlEscape(in.title), "...</p></main>\n");
  if (!in.report_json.empty()) {
    absl::StrAppend(&page,
                    "<script type=\"application/json\" id=\"report-data\">",
                    ScriptSafeJson(in.report_json), "</script>\n");
  }
  absl::StrAppend(&page, "<script>\n", uplot_js, "\n</script>\n<script>\n",
                  report_js, "\n</script>\n</body>\n</html>\n");
  return page;
}

}  // namespace tailsweep
