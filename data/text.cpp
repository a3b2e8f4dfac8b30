// Small text helpers: whitespace and UTF-8 character tokenisation, joining, trimming.
#include "data/text.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace attograd::data {

std::vector<std::string> split_whitespace(std::string_view text) {
    std::vector<std::string> tokens;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
        const std::size_t start = i;
        while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
        if (i > start) tokens.emplace_back(text.substr(start, i - start));
    }
    return tokens;
}

std::vector<std::string> split_chars(std::string_view text) {
    std::vector<std::string> tokens;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto lead = static_cast<unsigned char>(text[i]);
        std::size_t length = lead < 0x80           ? 1
                             : (lead >> 5) == 0x6  ? 2
                             : (lead >> 4) == 0xE  ? 3
                             : (lead >> 3) == 0x1E ? 4
                                                   : 1;
        if (i + length > text.size()) length = 1;
        for (std::size_t k = 1; k < length; ++k) {
            if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) length = 1;
        }
        tokens.emplace_back(text.substr(i, length));
        i += length;
    }
    return tokens;
}

std::string join(const std::vector<std::string>& tokens, std::string_view separator) {
    std::string out;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0) out += separator;
        out += tokens[i];
    }
    return out;
}

std::string_view trim(std::string_view text) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

std::string_view strip_bom(std::string_view text) {
    constexpr std::string_view bom = "\xEF\xBB\xBF";
    if (text.substr(0, bom.size()) == bom) text.remove_prefix(bom.size());
    return text;
}

std::string printable(const std::string& token) {
    if (token == " ") return "\u2423";
    if (token == "\t") return "\u21e5";
    return escape_control(token);
}

bool is_valid_utf8(std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        const unsigned char c = *p;
        int extra = 0;
        std::uint32_t code = 0, min = 0;
        if (c < 0x80) {
            ++p;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            extra = 1, code = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            extra = 2, code = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            extra = 3, code = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (end - p <= extra) return false;
        for (int i = 1; i <= extra; ++i) {
            if ((p[i] & 0xC0) != 0x80) return false;
            code = (code << 6) | (p[i] & 0x3F);
        }
        if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
        p += extra + 1;
    }
    return true;
}

std::size_t control_length(std::string_view text, std::size_t i) {
    if (i >= text.size()) return 0;
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const auto lead = byte(0);
    if (lead < 0x20 || lead == 0x7F) return 1;
    if (i + 1 < text.size()) {
        // C1 (C2 80-9F; U+009B is a terminal's CSI) and U+061C ARABIC LETTER MARK (D8 9C).
        if (lead == 0xC2 && byte(1) >= 0x80 && byte(1) <= 0x9F) return 2;
        if (lead == 0xD8 && byte(1) == 0x9C) return 2;
    }
    if (i + 2 < text.size()) {
        const auto second = byte(1), third = byte(2);
        // U+200B ZERO WIDTH SPACE (E2 80 8B) hides inside a word; the marks U+200E LRM and
        // U+200F RLM (E2 80 8E / 8F) move neutral characters around them; U+2028 LINE SEPARATOR
        // and U+2029 PARAGRAPH SEPARATOR (E2 80 A8 / A9) break lines; the embeddings and
        // overrides U+202A-U+202E (E2 80 AA-AE) and isolates U+2066-U+2069 (E2 81 A6-A9)
        // reorder the text after them ("Trojan Source"); U+FEFF ZERO WIDTH NO-BREAK SPACE
        // (EF BB BF) is invisible past the start of a file, where strip_bom drops it.
        if (lead == 0xE2 && second == 0x80 && (third == 0x8B || third == 0x8E || third == 0x8F)) return 3;
        if (lead == 0xE2 && second == 0x80 && third >= 0xA8 && third <= 0xAE) return 3;
        if (lead == 0xE2 && second == 0x81 && third >= 0xA6 && third <= 0xA9) return 3;
        if (lead == 0xEF && second == 0xBB && third == 0xBF) return 3;
    }
    return 0;
}

namespace {

// The escape of the control character of `length` bytes at text[i].
std::string escaped_control(std::string_view text, std::size_t i, std::size_t length) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (length > 1) {  // a 2- or 3-byte UTF-8 sequence, escaped as its code point
        unsigned code = lead & (length == 2 ? 0x1Fu : 0x0Fu);
        for (std::size_t k = 1; k < length; ++k)
            code = (code << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
        return fmt::format("\\u{:04x}", code);
    }
    if (lead == '\t') return "\\t";
    if (lead == '\n') return "\\n";
    if (lead == '\r') return "\\r";
    return fmt::format("\\x{:02x}", lead);
}

}  // namespace

std::string escape_control(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const std::string& character : split_chars(text)) {
        const std::size_t control = control_length(character, 0);
        if (control == character.size()) {
            out += escaped_control(character, 0, control);
        } else if (!is_valid_utf8(character)) {  // split_chars makes a stray byte its own token
            for (const char byte : character)
                out += fmt::format("\\x{:02x}", static_cast<unsigned char>(byte));
        } else {
            out += character;
        }
    }
    return out;
}

std::string first_control(std::string_view text, std::string_view allowed) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const std::size_t length = control_length(text, i);
        if (length == 0 || (length == 1 && allowed.find(text[i]) != std::string_view::npos)) continue;
        return escaped_control(text, i, length);
    }
    return {};
}

}  // namespace attograd::data
