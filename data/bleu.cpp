// Corpus BLEU with clipped n-gram counts over several references, and the 13a tokeniser.
#include "data/bleu.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>

namespace attograd::data {
namespace {

using Ids = std::vector<std::int64_t>;
using NgramCounts = std::map<Ids, std::int64_t>;

// Every n-gram of orders 1..max_order in `tokens` with its count.
NgramCounts count_ngrams(const Ids& tokens, std::int64_t max_order) {
    NgramCounts counts;
    const auto length = static_cast<std::int64_t>(tokens.size());
    for (std::int64_t n = 1; n <= max_order; ++n) {
        for (std::int64_t start = 0; start + n <= length; ++start)
            ++counts[Ids(tokens.begin() + start, tokens.begin() + start + n)];
    }
    return counts;
}

// The reference length closest to `hypothesis_length`, the shorter on a tie.
std::int64_t closest_length(const std::vector<Ids>& references, std::int64_t hypothesis_length) {
    std::int64_t best = static_cast<std::int64_t>(references.front().size());
    for (const Ids& reference : references) {
        const auto length = static_cast<std::int64_t>(reference.size());
        const std::int64_t distance = std::abs(length - hypothesis_length);
        const std::int64_t best_distance = std::abs(best - hypothesis_length);
        if (distance < best_distance || (distance == best_distance && length < best)) best = length;
    }
    return best;
}

BleuScore score_from_counts(BleuScore counts, std::int64_t max_order) {
    const double c = static_cast<double>(counts.hypothesis_length);
    const double r = static_cast<double>(counts.reference_length);
    counts.brevity_penalty = c > r ? 1.0 : (c > 0.0 ? std::exp(1.0 - r / c) : 0.0);
    double log_sum = 0.0;
    bool any_zero = false;
    for (std::int64_t n = 0; n < max_order; ++n) {
        const auto i = static_cast<std::size_t>(n);
        counts.precisions[i] = counts.totals[i] > 0 ? static_cast<double>(counts.matches[i]) /
                                                          static_cast<double>(counts.totals[i])
                                                    : 0.0;
        if (counts.matches[i] == 0)
            any_zero = true;
        else
            log_sum += std::log(counts.precisions[i]);
    }
    counts.score =
        any_zero ? 0.0 : counts.brevity_penalty * std::exp(log_sum / static_cast<double>(max_order));
    counts.defined = counts.totals[static_cast<std::size_t>(max_order - 1)] > 0;
    return counts;
}

// Python's str.isspace() for the code point starting at text[i]; its byte length, or 0.
std::size_t python_space_length(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) {
        return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
    };
    const unsigned char b0 = byte(0);
    if ((b0 >= 0x09 && b0 <= 0x0D) || (b0 >= 0x1C && b0 <= 0x20)) return 1;
    if (b0 == 0xC2 && (byte(1) == 0x85 || byte(1) == 0xA0)) return 2;  // U+0085, U+00A0
    if (b0 == 0xE1 && byte(1) == 0x9A && byte(2) == 0x80) return 3;    // U+1680
    if (b0 == 0xE2 && byte(1) == 0x80) {
        const unsigned char b2 = byte(2);
        if ((b2 >= 0x80 && b2 <= 0x8A) || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF)
            return 3;  // U+2000-200A, 2028, 2029, 202F
    }
    if (b0 == 0xE2 && byte(1) == 0x81 && byte(2) == 0x9F) return 3;  // U+205F
    if (b0 == 0xE3 && byte(1) == 0x80 && byte(2) == 0x80) return 3;  // U+3000
    return 0;
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
    std::size_t at = 0;
    while ((at = text.find(from, at)) != std::string::npos) {
        text.replace(at, from.size(), to);
        at += to.size();
    }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_period_or_comma(char c) { return c == '.' || c == ','; }

// mteval's punctuation class [\{-\~\[-\` -\&\(-\+\:-\@\/].
bool is_13a_symbol(char c) {
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// re.sub of a two-character pattern (first, second) by `replace`, matches taken left to right
// without overlap.
template <typename First, typename Second, typename Replace>
std::string substitute_pairs(const std::string& text, First first, Second second, Replace replace) {
    std::string out;
    out.reserve(text.size() * 2);
    std::size_t i = 0;
    while (i < text.size()) {
        if (i + 1 < text.size() && first(text[i]) && second(text[i + 1])) {
            replace(out, text[i], text[i + 1]);
            i += 2;
        } else {
            out += text[i++];
        }
    }
    return out;
}

void check_corpus(std::size_t references, std::size_t hypotheses, const BleuOptions& options) {
    AG_CHECK(hypotheses > 0, ValueError, "corpus_bleu: no hypotheses");
    AG_CHECK(references == hypotheses, ValueError,
             "corpus_bleu: {} reference lists for {} hypotheses; there must be one list per hypothesis",
             references, hypotheses);
    AG_CHECK(options.max_order >= 1 && options.max_order <= 4, ValueError,
             "corpus_bleu: max_order must be in [1, 4], got {}", options.max_order);
}

}  // namespace

BleuScore corpus_bleu(const std::vector<std::vector<Ids>>& references, const std::vector<Ids>& hypotheses,
                      const BleuOptions& options) {
    check_corpus(references.size(), hypotheses.size(), options);
    BleuScore counts;
    for (std::size_t i = 0; i < hypotheses.size(); ++i) {
        AG_CHECK(!references[i].empty(), ValueError, "corpus_bleu: hypothesis {} has no reference", i);
        const Ids& hypothesis = hypotheses[i];
        const auto length = static_cast<std::int64_t>(hypothesis.size());
        counts.hypothesis_length += length;
        counts.reference_length += closest_length(references[i], length);
        // Clip: an n-gram counts at most as often as in the one reference where it is most frequent.
        NgramCounts max_reference;
        for (const Ids& reference : references[i]) {
            for (const auto& [ngram, count] : count_ngrams(reference, options.max_order)) {
                std::int64_t& best = max_reference[ngram];
                best = std::max(best, count);
            }
        }
        for (const auto& [ngram, count] : count_ngrams(hypothesis, options.max_order)) {
            const auto order = ngram.size() - 1;
            counts.totals[order] += count;
            const auto found = max_reference.find(ngram);
            if (found != max_reference.end()) counts.matches[order] += std::min(count, found->second);
        }
    }
    return score_from_counts(counts, options.max_order);
}

BleuScore corpus_bleu(const std::vector<std::vector<std::vector<std::string>>>& references,
                      const std::vector<std::vector<std::string>>& hypotheses, const BleuOptions& options) {
    check_corpus(references.size(), hypotheses.size(), options);
    std::unordered_map<std::string, std::int64_t> ids;
    const auto to_ids = [&](const std::vector<std::string>& tokens) {
        Ids out;
        out.reserve(tokens.size());
        for (const std::string& token : tokens)
            out.push_back(ids.try_emplace(token, static_cast<std::int64_t>(ids.size())).first->second);
        return out;
    };
    std::vector<std::vector<Ids>> reference_ids(references.size());
    std::vector<Ids> hypothesis_ids;
    hypothesis_ids.reserve(hypotheses.size());
    for (std::size_t i = 0; i < hypotheses.size(); ++i) {
        hypothesis_ids.push_back(to_ids(hypotheses[i]));
        for (const auto& reference : references[i]) reference_ids[i].push_back(to_ids(reference));
    }
    return corpus_bleu(reference_ids, hypothesis_ids, options);
}

BleuScore corpus_bleu_13a(const std::vector<std::vector<std::string>>& references,
                          const std::vector<std::string>& hypotheses, const BleuOptions& options) {
    check_corpus(references.size(), hypotheses.size(), options);
    std::vector<std::vector<std::vector<std::string>>> reference_tokens(references.size());
    std::vector<std::vector<std::string>> hypothesis_tokens;
    hypothesis_tokens.reserve(hypotheses.size());
    for (std::size_t i = 0; i < hypotheses.size(); ++i) {
        hypothesis_tokens.push_back(tokenize_13a(hypotheses[i]));
        for (const std::string& reference : references[i])
            reference_tokens[i].push_back(tokenize_13a(reference));
    }
    return corpus_bleu(reference_tokens, hypothesis_tokens, options);
}

std::vector<std::string> tokenize_13a(std::string_view line) {
    std::string text(line);
    replace_all(text, "<skipped>", "");
    replace_all(text, "-\n", "");
    replace_all(text, "\n", " ");
    replace_all(text, "&quot;", "\"");
    replace_all(text, "&amp;", "&");
    replace_all(text, "&lt;", "<");
    replace_all(text, "&gt;", ">");
    text = " " + text + " ";

    std::string spaced;
    spaced.reserve(text.size() * 3);
    for (const char c : text) {
        if (is_13a_symbol(c)) {
            spaced += ' ';
            spaced += c;
            spaced += ' ';
        } else {
            spaced += c;
        }
    }
    const auto not_digit = [](char c) { return !is_digit(c); };
    // ([^0-9])([\.,]) -> "\1 \2 "
    spaced = substitute_pairs(spaced, not_digit, is_period_or_comma, [](std::string& out, char a, char b) {
        out += a;
        out += ' ';
        out += b;
        out += ' ';
    });
    // ([\.,])([^0-9]) -> " \1 \2"
    spaced = substitute_pairs(spaced, is_period_or_comma, not_digit, [](std::string& out, char a, char b) {
        out += ' ';
        out += a;
        out += ' ';
        out += b;
    });
    // ([0-9])(-) -> "\1 \2 "
    spaced = substitute_pairs(
        spaced, is_digit, [](char c) { return c == '-'; },
        [](std::string& out, char a, char b) {
            out += a;
            out += ' ';
            out += b;
            out += ' ';
        });

    std::vector<std::string> tokens;
    std::size_t i = 0;
    while (i < spaced.size()) {
        if (const std::size_t space = python_space_length(spaced, i)) {
            i += space;
            continue;
        }
        const std::size_t start = i;
        while (i < spaced.size() && python_space_length(spaced, i) == 0) ++i;
        tokens.emplace_back(spaced.substr(start, i - start));
    }
    return tokens;
}

}  // namespace attograd::data
