// Internal: the HTML report's stylesheet and script, the files inspect/report/report.css and
// inspect/report/report.js embedded at build time (cmake/embed_text.cmake generates their
// definitions), so that a report is one self-contained page.
#pragma once

#include <string_view>

namespace attograd::inspect::detail {

/// inspect/report/report.css, placed in a <style> element.
std::string_view report_css();

/// inspect/report/report.js, placed in a <script> element after the report's data.
std::string_view report_js();

}  // namespace attograd::inspect::detail
