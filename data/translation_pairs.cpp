// Filtering, grouping and splitting gettext messages into translation pairs.
#include "data/translation_pairs.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "data/bleu.hpp"
#include "data/text.hpp"

#include <algorithm>
#include <map>
#include <system_error>

namespace attograd::data {
namespace {

void check_options(std::int64_t max_tokens, const char* where) {
    AG_CHECK(max_tokens >= 1, ValueError, "{}: max_tokens must be >= 1, got {}", where, max_tokens);
}

void check_language(const std::string& language) {
    const bool allowed = std::all_of(language.begin(), language.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
               c == '@' || c == '.' || c == '-';
    });
    AG_CHECK(!language.empty() && allowed && language != "." && language != "..", ValueError,
             "catalog_pairs: language \"{}\" is not a locale name (letters, digits and _ @ . - only, e.g. "
             "fr, pt_BR)",
             escape_control(language));
}

std::vector<std::filesystem::path> catalog_files(const std::filesystem::path& directory,
                                                 const std::string& language) {
    std::error_code error;
    AG_CHECK(std::filesystem::is_directory(directory, error), IoError,
             "no gettext catalogs for language {}: {} is not a directory", language, directory.string());
    std::vector<std::filesystem::path> files;
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end;
         it.increment(error)) {
        if (it->path().extension() == ".mo") files.push_back(it->path());
    }
    AG_CHECK(!error, IoError, "no gettext catalogs for language {}: cannot list {}: {}", language,
             directory.string(), error.message());
    AG_CHECK(!files.empty(), IoError, "no gettext catalogs for language {}: {} holds no .mo file", language,
             directory.string());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

std::string message_problem(std::string_view text, std::int64_t max_tokens) {
    if (text.empty()) return "is empty";
    if (trim(text).size() != text.size()) return "has leading or trailing whitespace";
    if (!is_valid_utf8(text)) return "is not valid UTF-8";
    if (!first_control(text).empty()) return "holds a control character";
    if (text.find_first_of("%{}$<") != std::string_view::npos)
        return "holds a format directive or markup (% { } $ <)";
    if (static_cast<std::int64_t>(split_whitespace(text).size()) > max_tokens)
        return "has more than max_tokens words";
    return "";
}

bool is_held_out(std::string_view source, std::int64_t held_out_percent) {
    AG_CHECK(held_out_percent >= 0 && held_out_percent <= 100, ValueError,
             "is_held_out: held_out_percent must be in [0, 100], got {}", held_out_percent);
    return static_cast<std::int64_t>(fnv1a64(source) % 100) < held_out_percent;
}

std::vector<TranslationPair> translation_pairs(const std::vector<GettextCatalog>& catalogs,
                                               std::int64_t max_tokens) {
    check_options(max_tokens, "translation_pairs");
    std::map<std::string, std::map<std::string, std::int64_t>> counts;  // source -> translation -> count
    for (const GettextCatalog& catalog : catalogs) {
        for (const CatalogMessage& message : catalog.messages) {
            if (!message.source_plural.empty() || message.translations.empty()) continue;
            const std::string& translation = message.translations.front();
            if (message.source == translation || !message_problem(message.source, max_tokens).empty() ||
                !message_problem(translation, max_tokens).empty())
                continue;
            ++counts[message.source][translation];
        }
    }
    std::vector<TranslationPair> pairs;
    pairs.reserve(counts.size());
    for (const auto& [source, translations] : counts) {
        std::vector<std::pair<std::string, std::int64_t>> ranked(translations.begin(), translations.end());
        std::stable_sort(ranked.begin(), ranked.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        TranslationPair pair{.source = source, .references = {}};
        for (auto& entry : ranked) pair.references.push_back(std::move(entry.first));
        pairs.push_back(std::move(pair));
    }
    return pairs;
}

CatalogPairs catalog_pairs(const CatalogPairsOptions& options) {
    check_language(options.language);
    check_options(options.max_tokens, "catalog_pairs");
    AG_CHECK(options.held_out_percent >= 0 && options.held_out_percent <= 100, ValueError,
             "catalog_pairs: held_out_percent must be in [0, 100], got {}", options.held_out_percent);
    CatalogPairs result;
    result.catalogs = catalog_files(options.locale_dir / options.language / "LC_MESSAGES", options.language);
    std::vector<GettextCatalog> catalogs;
    catalogs.reserve(result.catalogs.size());
    for (const auto& path : result.catalogs) catalogs.push_back(read_gettext_catalog(path));
    for (TranslationPair& pair : translation_pairs(catalogs, options.max_tokens)) {
        auto& split = is_held_out(pair.source, options.held_out_percent) ? result.held_out : result.train;
        split.push_back(std::move(pair));
    }
    return result;
}

std::vector<std::string> tokenize_text(std::string_view text, TokenLevel level) {
    return level == TokenLevel::Word ? tokenize_13a(text) : split_chars(text);
}

std::vector<Example> translation_examples(const std::vector<TranslationPair>& pairs, TokenLevel level) {
    std::vector<Example> examples;
    examples.reserve(pairs.size());
    for (const TranslationPair& pair : pairs) {
        AG_CHECK(!pair.references.empty(), ValueError, "translation_examples: \"{}\" has no reference",
                 escape_control(excerpt(pair.source)));
        examples.push_back(
            {tokenize_text(pair.source, level), tokenize_text(pair.references.front(), level)});
    }
    return examples;
}

}  // namespace attograd::data
