// Translation pairs from the machine's gettext catalogs: short English messages and their
// translations, filtered, deduplicated by source and split by a hash of the source.
#pragma once

#include "data/gettext_catalog.hpp"
#include "data/task.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::data {

/// One English source text and every distinct translation found for it.
struct TranslationPair {
    std::string source;  ///< the English message
    /// The distinct translations, most frequent first over the catalogs read (ties in byte order):
    /// references[0] is the one to train on, all of them are the references BLEU scores against.
    std::vector<std::string> references;
    /// Equal sources and references.
    bool operator==(const TranslationPair&) const = default;
};

/// Options of catalog_pairs.
struct CatalogPairsOptions {
    /// The language: the directory name under locale_dir ("fr", "de", "es", "pt_BR"); letters,
    /// digits and _ @ . - only, not "." or "..".
    std::string language;
    std::filesystem::path locale_dir = "/usr/share/locale";  ///< holds LANG/LC_MESSAGES/*.mo
    /// Most whitespace-separated words on each side of a pair (>= 1). Short messages are menu
    /// items, button labels and error phrases: whole thoughts a small model can translate.
    std::int64_t max_tokens = 8;
    std::int64_t held_out_percent = 10;  ///< percent of sources held out (see is_held_out), in [0, 100]
};

/// The pairs of one language, split.
struct CatalogPairs {
    std::vector<TranslationPair> train;           ///< sorted by source (bytes)
    std::vector<TranslationPair> held_out;        ///< sorted by source (bytes); no source is in both
    std::vector<std::filesystem::path> catalogs;  ///< the .mo files read, sorted
};

/// Why `text` (a message's original or translation) is left out of translation pairs, or ""
/// when it is kept. Left out: an empty text, leading or trailing whitespace (a fragment glued to
/// other text), text that is not valid UTF-8, a control character (a newline, tab, ...: see
/// control_length), more than `max_tokens` whitespace-separated words, and any of the
/// characters % { } $ < (format directives and markup: printf's %s %d %1$s %(name)s, Qt's %1,
/// brace formats {0} {name}, shell variables $HOME ${x}, Pango/HTML tags <b>; a literal "100%"
/// or "a < b" goes too).
std::string message_problem(std::string_view text, std::int64_t max_tokens);

/// Whether `source` belongs to the held-out split: fnv1a64(source) % 100 < held_out_percent
/// (core/input_file.hpp's FNV-1a of the source's bytes), so the split depends on the text alone
/// and is the same on every machine, whatever catalogs are installed. Throws ValueError when
/// held_out_percent is outside [0, 100].
bool is_held_out(std::string_view source, std::int64_t held_out_percent);

/// The pairs of `catalogs`: every message that is not plural (its forms depend on a number)
/// whose original (msgid; a msgctxt is dropped) and first translation both pass
/// message_problem and differ, grouped by original with the counts of each translation.
/// Sorted by source. Throws ValueError when max_tokens < 1.
std::vector<TranslationPair> translation_pairs(const std::vector<GettextCatalog>& catalogs,
                                               std::int64_t max_tokens);

/// English -> options.language pairs from every `*.mo` file in
/// `locale_dir/LANG/LC_MESSAGES` (read in sorted order; only that directory: "fr" does not read
/// "fr_CA"), built by translation_pairs and split by is_held_out. Nothing is written anywhere.
/// Throws ValueError for a malformed language name, max_tokens < 1 or held_out_percent outside
/// [0, 100]; IoError "no gettext catalogs for language ..." naming the directory when it does
/// not exist or holds no .mo file, and IoError naming the file for a catalog that cannot be read
/// or is not a .mo file (read_gettext_catalog). Too few pairs is the caller's judgement.
CatalogPairs catalog_pairs(const CatalogPairsOptions& options);

/// How translation text is cut into tokens.
enum class TokenLevel {
    Word,  ///< tokenize_13a: words, with punctuation split off as BLEU's default tokeniser does
    Char,  ///< split_chars: UTF-8 characters, a space is a token too
};

/// The tokens of `text` at `level`. Word level uses BLEU's own tokeniser so that a word-level
/// output joined with spaces is scored on the very tokens it was trained on.
std::vector<std::string> tokenize_text(std::string_view text, TokenLevel level);

/// One example per pair: tokenize_text of the source and of references[0] (the most frequent
/// translation). Throws ValueError naming the source when a pair has no reference.
std::vector<Example> translation_examples(const std::vector<TranslationPair>& pairs, TokenLevel level);

}  // namespace attograd::data
