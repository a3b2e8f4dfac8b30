// data/text: word and UTF-8 character tokenisation, joining, trimming, UTF-8 validation.
#include "data/text.hpp"

#include <doctest/doctest.h>

using namespace attograd::data;
using Tokens = std::vector<std::string>;

TEST_CASE("text: words split at runs of spaces and tabs, characters at UTF-8 boundaries") {
    CHECK(split_whitespace("  a\t bc  d ") == Tokens{"a", "bc", "d"});
    CHECK(split_whitespace(" \t ").empty());
    CHECK(split_chars("a\u00e9\u20ac\U0001F600") == Tokens{"a", "\u00e9", "\u20ac", "\U0001F600"});
    CHECK(split_chars("a\xc3") == Tokens{"a", "\xc3"});  // a truncated sequence: its byte alone
    CHECK(split_chars("\xe2\x82x") == Tokens{"\xe2", "\x82", "x"});
    CHECK(join({"a", "b", "c"}, "-") == "a-b-c");
    CHECK(join({}, "-").empty());
    CHECK(trim(" \t x y\r\n") == "x y");
    CHECK(printable(" ") == "\u2423");
    CHECK(printable("\t") == "\u21e5");
    CHECK(printable("a") == "a");
}

TEST_CASE("text: UTF-8 validation refuses stray, truncated, overlong, surrogate and too-large sequences") {
    CHECK(is_valid_utf8("plain \u00e9\u20ac\U0001F600"));
    CHECK(is_valid_utf8(""));
    CHECK_FALSE(is_valid_utf8("\x80"));              // stray continuation byte
    CHECK_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
    CHECK_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
    CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate U+D800
    CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
    CHECK_FALSE(is_valid_utf8("\xff"));
}

TEST_CASE("text: control characters are C0, DEL and C1, found and escaped by one rule") {
    using namespace std::string_literals;
    CHECK(control_length("a\x01", 1) == 1);
    CHECK(control_length("\x7f", 0) == 1);
    CHECK(control_length("\xc2\x80", 0) == 2);  // U+0080, the first C1 character
    CHECK(control_length("\xc2\x9f", 0) == 2);  // U+009F, the last
    CHECK(control_length("\xc2\xa0", 0) == 0);  // U+00A0 no-break space: not a control character
    CHECK(control_length("\xc2", 0) == 0);      // a truncated sequence is not one either
    CHECK(control_length("a", 5) == 0);
    CHECK(escape_control("a\tb\nc\rd\x1b\x7f"s + '\0') == "a\\tb\\nc\\rd\\x1b\\x7f\\x00");
    CHECK(escape_control("x\xc2\x9b[31m y") == "x\\u009b[31m y");  // a C1 CSI cannot recolour a terminal
    CHECK(escape_control("\u00e9\u20ac\U0001F600") == "\u00e9\u20ac\U0001F600");
    CHECK(escape_control("a \xff b \xe2\x82") == "a \\xff b \\xe2\\x82");  // bytes outside UTF-8
    CHECK(escape_control("\xed\xa0\x80") == "\\xed\\xa0\\x80");            // a surrogate is not UTF-8
    CHECK(first_control("plain \u00e9").empty());
    CHECK(first_control("a\tb\x01") == "\\t");
    CHECK(first_control("a\tb\x01", "\t") == "\\x01");
    CHECK(first_control("ab\xc2\x85") == "\\u0085");
}

TEST_CASE("text: U+2028 and U+2029 break lines, so they count and are escaped as control characters") {
    const std::string ls = "\xe2\x80\xa8", ps = "\xe2\x80\xa9";
    CHECK(control_length(ls, 0) == 3);
    CHECK(control_length("a" + ps, 1) == 3);
    CHECK(control_length("\xe2\x80\xa7", 0) == 0);  // U+2027 HYPHENATION POINT: printable
    CHECK(control_length("\xe2\x80", 0) == 0);      // truncated
    CHECK(escape_control("a" + ls + "b" + ps) == "a\\u2028b\\u2029");
    CHECK(escape_control("\u2026\u2030") == "\u2026\u2030");  // neighbours unchanged
    CHECK(first_control("x" + ps + "\x01") == "\\u2029");
    CHECK(first_control("x" + ls, "\t") == "\\u2028");
}

TEST_CASE("text: bidirectional embeddings, overrides and isolates are escaped as control characters") {
    // U+202A-U+202E (E2 80 AA-AE) and U+2066-U+2069 (E2 81 A6-A9) reorder what a terminal shows.
    const std::vector<std::pair<std::string, std::string>> bidi = {
        {"\xe2\x80\xaa", "\\u202a"}, {"\xe2\x80\xab", "\\u202b"}, {"\xe2\x80\xac", "\\u202c"},
        {"\xe2\x80\xad", "\\u202d"}, {"\xe2\x80\xae", "\\u202e"}, {"\xe2\x81\xa6", "\\u2066"},
        {"\xe2\x81\xa7", "\\u2067"}, {"\xe2\x81\xa8", "\\u2068"}, {"\xe2\x81\xa9", "\\u2069"}};
    for (const auto& [character, escaped] : bidi) {
        CAPTURE(escaped);
        CHECK(control_length("a" + character, 1) == 3);
        CHECK(escape_control("ab" + character + "cd") == "ab" + escaped + "cd");
        CHECK(first_control("x" + character) == escaped);
        CHECK(printable(character) == escaped);
    }
    CHECK(control_length("\xe2\x80\xaf", 0) == 0);  // U+202F NARROW NO-BREAK SPACE: printable
    CHECK(control_length("\xe2\x81\xa5", 0) == 0);  // U+2065: not a bidi control
    CHECK(control_length("\xe2\x81", 0) == 0);      // truncated
    CHECK(printable(" ") == "\u2423");
    CHECK(printable("\x1b") == "\\x1b");
}

TEST_CASE("text: invisible default-ignorable characters are escaped, so two tokens never look alike") {
    // Each would hide inside a word ("ca" + U+2060 + "t" shows as "cat").
    const std::vector<std::pair<std::string, std::string>> hidden = {
        {"\u00ad", "\\u00ad"},         {"\u034f", "\\u034f"},         {"\u115f", "\\u115f"},
        {"\u17b4", "\\u17b4"},         {"\u180b", "\\u180b"},         {"\u180e", "\\u180e"},
        {"\u2060", "\\u2060"},         {"\u2064", "\\u2064"},         {"\u206a", "\\u206a"},
        {"\u206f", "\\u206f"},         {"\u3164", "\\u3164"},         {"\uffa0", "\\uffa0"},
        {"\ufff9", "\\ufff9"},         {"\ufffb", "\\ufffb"},         {"\U0001bca0", "\\U0001bca0"},
        {"\U0001d173", "\\U0001d173"}, {"\U000e0001", "\\U000e0001"}, {"\U000e007f", "\\U000e007f"}};
    for (const auto& [character, escaped] : hidden) {
        CAPTURE(escaped);
        CHECK(control_length("ca" + character + "t", 2) == character.size());
        CHECK(escape_control("ca" + character + "t") == "ca" + escaped + "t");
        CHECK(first_control("x" + character) == escaped);
        CHECK(control_length(character.substr(0, character.size() - 1), 0) == 0);  // truncated
    }
    // Kept: visible neighbours.
    for (const std::string kept : {"\u00ac", "\u00ae", "\u3165", "\ufffc", "\U0001f600"}) {
        CAPTURE(kept.size());
        CHECK(control_length(kept, 0) == 0);
        CHECK(escaped_length(kept, 0) == 0);
        CHECK(escape_control(kept) == kept);
    }
}

TEST_CASE("text: the joiners and variation selectors a token may hold are shown escaped") {
    // Not control characters (a token may hold them: Persian, Indic, emoji, Ideographic Variation
    // Sequences) or reserved default-ignorable, but invisible: two tokens that differ only by one must not
    // look the same.
    const std::vector<std::pair<std::string, std::string>> invisible = {
        {"\u200c", "\\u200c"}, {"\u200d", "\\u200d"},         {"\ufe00", "\\ufe00"},
        {"\ufe0f", "\\ufe0f"}, {"\U000e0100", "\\U000e0100"}, {"\U000e01ef", "\\U000e01ef"},
        {"\u2065", "\\u2065"}, {"\U000e0080", "\\U000e0080"}, {"\U000e0fff", "\\U000e0fff"}};
    for (const auto& [character, escaped] : invisible) {
        CAPTURE(escaped);
        CHECK(control_length("a" + character, 1) == 0);  // allowed in a token
        CHECK(first_control("a" + character).empty());
        CHECK(escaped_length("a" + character + "b", 1) == character.size());
        CHECK(escape_control("alpha" + character) == "alpha" + escaped);
        CHECK(escape_control("alpha" + character) != escape_control("alpha"));
        CHECK(printable(character) == escaped);
        CHECK(escaped_length(character.substr(0, character.size() - 1), 0) == 0);  // truncated
    }
    // Neighbours of the ranges are shown as they are.
    for (const std::string visible : {"\u2011", "\u2010", "\ufdff", "\ufe10", "\U000e1000"}) {
        CAPTURE(visible.size());
        CHECK(escaped_length(visible, 0) == 0);
    }
    CHECK(escaped_length("\x01", 0) == 1);  // control characters too
    CHECK(escaped_length("ab", 5) == 0);    // past the end
}

TEST_CASE(
    "text: spaces other than U+0020, and the braille blank, are shown escaped: one token never looks like "
    "two") {
    const std::vector<std::pair<std::string, std::string>> blanks = {
        {"\u00a0", "\\u00a0"}, {"\u1680", "\\u1680"}, {"\u2000", "\\u2000"}, {"\u200a", "\\u200a"},
        {"\u202f", "\\u202f"}, {"\u205f", "\\u205f"}, {"\u3000", "\\u3000"}, {"\u2800", "\\u2800"}};
    for (const auto& [character, escaped] : blanks) {
        CAPTURE(escaped);
        CHECK(control_length("a" + character, 1) == 0);  // a one-character token may be one
        CHECK(escape_control("a" + character + "b") == "a" + escaped + "b");
        CHECK(space_length("a" + character + "b", 1) == (character == "\u2800" ? 0 : character.size()));
    }
    CHECK(space_length("a b", 1) == 1);
    CHECK(escape_control("a b") == "a b");  // U+0020 as it is
    CHECK(space_length("a\u00a9", 1) == 0);
    CHECK(space_length("ab", 5) == 0);
}

TEST_CASE("text: the bidi marks and invisible format characters are escaped as control characters") {
    // Every other Bidi_Control character (U+061C ALM, U+200E LRM, U+200F RLM) reorders the
    // neutral characters around it; U+200B and U+FEFF are invisible inside a word.
    const std::vector<std::pair<std::string, std::string>> marks = {{"\xd8\x9c", "\\u061c"},
                                                                    {"\xe2\x80\x8b", "\\u200b"},
                                                                    {"\xe2\x80\x8e", "\\u200e"},
                                                                    {"\xe2\x80\x8f", "\\u200f"},
                                                                    {"\xef\xbb\xbf", "\\ufeff"}};
    for (const auto& [character, escaped] : marks) {
        CAPTURE(escaped);
        CHECK(control_length("a" + character, 1) == character.size());
        CHECK(control_length(character + "b", 0) == character.size());
        CHECK(escape_control("a " + character + " b") == "a " + escaped + " b");
        CHECK(first_control("x" + character + "\x01") == escaped);
        CHECK(printable(character) == escaped);
        CHECK(control_length(character.substr(0, character.size() - 1), 0) == 0);  // truncated
    }
    CHECK(first_control(std::string(strip_bom("\xef\xbb\xbf"
                                              "ab")))
              .empty());                                      // a leading BOM is dropped first
    CHECK(control_length("\xd8\x9b", 0) == 0);                // U+061B ARABIC SEMICOLON: printable
    CHECK(control_length("\xe2\x80\x8c", 0) == 0);            // U+200C ZWNJ shapes Persian and Indic words
    CHECK(control_length("\xe2\x80\x8d", 0) == 0);            // U+200D ZWJ joins emoji sequences
    CHECK(control_length("\xe2\x80\x90", 0) == 0);            // U+2010 HYPHEN
    CHECK(control_length("\xef\xbb\xbe", 0) == 0);            // U+FEFE: an Arabic presentation form
    CHECK(escape_control("\u00e9\u0628") == "\u00e9\u0628");  // letters unchanged
}
