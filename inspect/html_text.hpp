// Escaping text for HTML and SVG documents.
#pragma once

#include <string>
#include <string_view>

namespace attograd::inspect {

/// `text` with &, <, >, " and ' replaced by character references, safe inside HTML or SVG
/// element content and quoted attribute values.
std::string html_escape(std::string_view text);

}  // namespace attograd::inspect
