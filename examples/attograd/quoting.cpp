// Shell quoting and escaping of the paths the program's messages show.
#include "quoting.hpp"

#include "data/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace attograd::cli {

namespace {

/// Bytes of the UTF-8 sequence a lead byte starts (1 for a stray byte: it is escaped alone).
std::size_t sequence_length(unsigned char lead) {
    if (lead >= 0xF0) return 4;
    if (lead >= 0xE0) return 3;
    if (lead >= 0xC0) return 2;
    return 1;
}

}  // namespace

std::string shell_quote(const std::string& text) {
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
               std::string_view("_./:@%+=,-").find(c) != std::string_view::npos;
    });
    if (plain) return text;
    if (data::escape_control(text) == text) {  // printable: POSIX single quotes
        std::string quoted = "'";
        for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return quoted + "'";
    }
    std::string quoted = "$'";
    const std::string_view view(text);
    for (std::size_t i = 0; i < view.size();) {
        std::size_t n = data::escaped_length(view, i);
        bool escape = n > 0;
        if (!escape) {
            n = std::min(sequence_length(static_cast<unsigned char>(view[i])), view.size() - i);
            if (!data::is_valid_utf8(view.substr(i, n))) escape = true, n = 1;
        }
        for (std::size_t k = i; k < i + n; ++k) {
            const char c = view[k];
            if (escape)
                quoted += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
            else if (c == '\'' || c == '\\')
                quoted += std::string("\\") + c;
            else
                quoted += c;
        }
        i += n;
    }
    return quoted + "'";
}

}  // namespace attograd::cli
