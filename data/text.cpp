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

namespace {

// The code point of the well-formed UTF-8 sequence at text[i] and its length in bytes; length 0
// when none starts there (a continuation byte, a truncated, overlong or surrogate sequence).
std::pair<char32_t, std::size_t> decode_at(std::string_view text, std::size_t i) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) return {lead, 1};
    std::size_t length = 0;
    char32_t code = 0, min = 0;
    if ((lead & 0xE0) == 0xC0) {
        length = 2, code = lead & 0x1F, min = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3, code = lead & 0x0F, min = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4, code = lead & 0x07, min = 0x10000;
    } else {
        return {0, 0};
    }
    if (text.size() - i < length) return {0, 0};
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[i + k]);
        if ((next & 0xC0) != 0x80) return {0, 0};
        code = (code << 6) | (next & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {0, 0};
    return {code, length};
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t length = decode_at(text, i).second;
        if (length == 0) return false;
        i += length;
    }
    return true;
}

namespace {

// Characters that reorder, break or hide inside the text shown around them (text.hpp).
bool is_hidden_or_reordering(char32_t c) {
    constexpr std::pair<char32_t, char32_t> ranges[] = {
        {0x0080, 0x009F},    // C1 controls (U+009B is a terminal's CSI)
        {0x00AD, 0x00AD},    // SOFT HYPHEN
        {0x034F, 0x034F},    // COMBINING GRAPHEME JOINER
        {0x061C, 0x061C},    // ARABIC LETTER MARK
        {0x115F, 0x1160},    // HANGUL CHOSEONG / JUNGSEONG FILLER
        {0x17B4, 0x17B5},    // KHMER VOWEL INHERENT AQ / AA
        {0x180B, 0x180F},    // MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
        {0x200B, 0x200B},    // ZERO WIDTH SPACE
        {0x200E, 0x200F},    // LEFT-TO-RIGHT / RIGHT-TO-LEFT MARK
        {0x2028, 0x202E},    // LINE / PARAGRAPH SEPARATOR, embeddings and overrides
        {0x2060, 0x2064},    // WORD JOINER, invisible operators
        {0x2066, 0x206F},    // isolates, deprecated format characters
        {0x3164, 0x3164},    // HANGUL FILLER
        {0xFEFF, 0xFEFF},    // ZERO WIDTH NO-BREAK SPACE (a byte order mark past the start)
        {0xFFA0, 0xFFA0},    // HALFWIDTH HANGUL FILLER
        {0xFFF0, 0xFFFB},    // unassigned specials, interlinear annotation
        {0x1BCA0, 0x1BCA3},  // shorthand format controls
        {0x1D173, 0x1D17A},  // musical symbol format controls
        {0xE0000, 0xE007F},  // tags
    };
    for (const auto& [first, last] : ranges)
        if (c >= first && c <= last) return true;
    return false;
}

// The default-ignorable characters that are not control characters (text.hpp): a token may
// hold them, every display escapes them.
bool is_invisible_kept(char32_t c) {
    constexpr std::pair<char32_t, char32_t> ranges[] = {
        {0x200C, 0x200D},    // ZERO WIDTH NON-JOINER, ZERO WIDTH JOINER
        {0x2065, 0x2065},    // reserved default-ignorable
        {0xFE00, 0xFE0F},    // VARIATION SELECTOR-1..16
        {0xE0080, 0xE0FFF},  // VARIATION SELECTOR-17..256 (U+E0100-U+E01EF), reserved around them
    };
    for (const auto& [first, last] : ranges)
        if (c >= first && c <= last) return true;
    return false;
}

// The spaces other than U+0020 (Unicode White_Space that is not a control character), and
// U+2800 BRAILLE PATTERN BLANK, which looks like one: shown escaped, so that "a<U+00A0>b" does not
// look like the two tokens "a b".
bool is_blank(char32_t c) {
    constexpr std::pair<char32_t, char32_t> ranges[] = {
        {0x00A0, 0x00A0},  // NO-BREAK SPACE
        {0x1680, 0x1680},  // OGHAM SPACE MARK
        {0x2000, 0x200A},  // EN QUAD .. HAIR SPACE
        {0x202F, 0x202F},  // NARROW NO-BREAK SPACE
        {0x205F, 0x205F},  // MEDIUM MATHEMATICAL SPACE
        {0x2800, 0x2800},  // BRAILLE PATTERN BLANK
        {0x3000, 0x3000},  // IDEOGRAPHIC SPACE
    };
    for (const auto& [first, last] : ranges)
        if (c >= first && c <= last) return true;
    return false;
}

}  // namespace

std::size_t space_length(std::string_view text, std::size_t i) {
    if (i >= text.size()) return 0;
    if (text[i] == ' ') return 1;
    const auto [code, length] = decode_at(text, i);
    return length > 1 && code != 0x2800 && is_blank(code) ? length : 0;
}

std::size_t control_length(std::string_view text, std::size_t i) {
    if (i >= text.size()) return 0;
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x20 || lead == 0x7F) return 1;
    const auto [code, length] = decode_at(text, i);
    return length > 1 && is_hidden_or_reordering(code) ? length : 0;
}

std::size_t escaped_length(std::string_view text, std::size_t i) {
    if (const std::size_t control = control_length(text, i); control > 0) return control;
    if (i >= text.size()) return 0;
    const auto [code, length] = decode_at(text, i);
    return length > 1 && (is_invisible_kept(code) || is_blank(code)) ? length : 0;
}

namespace {

// The escape of the control or invisible character of `length` bytes at text[i].
std::string escaped_control(std::string_view text, std::size_t i, std::size_t length) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (length > 1) {  // a UTF-8 sequence, escaped as its code point
        const char32_t code = decode_at(text, i).first;
        return code > 0xFFFF ? fmt::format("\\U{:08x}", static_cast<std::uint32_t>(code))
                             : fmt::format("\\u{:04x}", static_cast<std::uint32_t>(code));
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
        const std::size_t escaped = escaped_length(character, 0);
        if (escaped == character.size()) {
            out += escaped_control(character, 0, escaped);
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
