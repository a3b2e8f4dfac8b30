// Vocabulary: token strings <-> ids, with the reserved special tokens every model shares.
#include "data/vocabulary.hpp"

#include "core/error.hpp"
#include "data/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attograd::data {

bool Vocabulary::is_reserved(std::string_view token) {
    return token == pad || token == bos || token == eos || token == unk;
}

std::string Vocabulary::token_problem(std::string_view token) {
    if (token.empty()) return "is empty";
    if (!is_valid_utf8(token)) return "is not well-formed UTF-8";
    const bool one_char = split_chars(token).size() == 1;
    // A lone space or tab is character-level whitespace.
    if (const std::string control = first_control(token, one_char ? "\t" : ""); !control.empty())
        return "holds the control character " + control;
    for (std::size_t i = 0; !one_char && i < token.size(); ++i) {
        const std::size_t space = space_length(token, i);
        if (space == 1) return "holds a space (a word-level token never does)";
        if (space > 1)
            return fmt::format("holds the space {} (a word-level token never does: write U+0020)",
                               escape_control(token.substr(i, space)));
    }
    return {};
}

Vocabulary::Vocabulary() {
    for (const char* special : {pad, bos, eos, unk}) add(special);
}

Vocabulary::Vocabulary(const std::vector<std::string>& tokens) : Vocabulary() {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const auto& token = tokens[i];
        AG_CHECK(
            !is_reserved(token), ValueError,
            "Vocabulary: token {} is '{}', a reserved token (<pad> <bos> <eos> <unk> have fixed ids 0-3)", i,
            token);
        const std::string problem = token_problem(token);
        AG_CHECK(problem.empty(), ValueError, "Vocabulary: token {} '{}' {}", i, escape_control(token),
                 problem);
        AG_CHECK(!contains(token), ValueError, "Vocabulary: token {} '{}' appears twice (first as token {})",
                 i, token, id(token) - reserved_count);
        add(token);
    }
}

Vocabulary Vocabulary::build_from_sequences(const std::vector<std::vector<std::string>>& sequences,
                                            const VocabularyOptions& options) {
    AG_CHECK(options.min_freq >= 1, ValueError, "Vocabulary: min_freq must be >= 1, got {}",
             options.min_freq);
    AG_CHECK(!options.max_tokens || *options.max_tokens >= reserved_count, ValueError,
             "Vocabulary: max_tokens must be >= {} (the special tokens <pad> <bos> <eos> <unk>), got {}",
             reserved_count, options.max_tokens.value_or(0));
    std::unordered_map<std::string, std::int64_t> counts;
    for (std::size_t s = 0; s < sequences.size(); ++s) {
        for (std::size_t i = 0; i < sequences[s].size(); ++i) {
            const std::string& token = sequences[s][i];
            if (counts.count(token) == 0) {  // each distinct token is checked once
                AG_CHECK(
                    !is_reserved(token), ValueError,
                    "Vocabulary: sequence {} position {} is '{}', a reserved token (<pad> <bos> <eos> <unk> "
                    "have fixed ids 0-3)",
                    s, i, token);
                const std::string problem = token_problem(token);
                AG_CHECK(problem.empty(), ValueError, "Vocabulary: sequence {} position {} '{}' {}", s, i,
                         escape_control(token), problem);
            }
            ++counts[token];
        }
    }
    std::vector<std::pair<std::string, std::int64_t>> kept;
    for (const auto& [token, count] : counts)
        if (count >= options.min_freq) kept.emplace_back(token, count);
    std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (options.max_tokens && std::ssize(kept) > *options.max_tokens - reserved_count)
        kept.resize(static_cast<std::size_t>(*options.max_tokens - reserved_count));
    Vocabulary vocab;
    for (const auto& [token, count] : kept) vocab.add(token);
    return vocab;
}

Vocabulary Vocabulary::from_tokens(const std::vector<std::string>& tokens) {
    Vocabulary vocab;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const auto& token = tokens[i];
        if (static_cast<std::int64_t>(i) < reserved_count) {
            AG_CHECK(token == vocab.tokens_[i], ValueError,
                     "vocabulary: entry {} must be the special token {}, got '{}'", i, vocab.tokens_[i],
                     token);
            continue;
        }
        const std::string problem = token_problem(token);
        AG_CHECK(problem.empty(), ValueError, "vocabulary: entry {} '{}' {}", i, escape_control(token),
                 problem);
        AG_CHECK(!vocab.contains(token), ValueError, "vocabulary: entry {} '{}' appears twice", i, token);
        vocab.add(token);
    }
    AG_CHECK(std::ssize(tokens) >= reserved_count, ValueError,
             "vocabulary: missing the special tokens ({} entries, expected at least {})", tokens.size(),
             reserved_count);
    return vocab;
}

void Vocabulary::add(const std::string& token) {
    AG_ASSERT(ids_.count(token) == 0, "Vocabulary: '{}' added twice", token);
    ids_.emplace(token, size());
    tokens_.push_back(token);
}

std::int64_t Vocabulary::id(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? unk_id : it->second;
}

std::vector<std::int64_t> Vocabulary::lookup_indices(const std::vector<std::string>& tokens) const {
    std::vector<std::int64_t> ids;
    ids.reserve(tokens.size());
    for (const auto& token : tokens) ids.push_back(id(token));
    return ids;
}

std::vector<std::string> Vocabulary::lookup_tokens(const std::vector<std::int64_t>& ids) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const std::int64_t i : ids) tokens.push_back(token(i));
    return tokens;
}

const std::string& Vocabulary::token(std::int64_t id) const {
    AG_CHECK(id >= 0 && id < size(), IndexError, "vocabulary: id {} outside [0, {})", id, size());
    return tokens_[static_cast<std::size_t>(id)];
}

std::vector<std::int64_t> Vocabulary::encode(const std::vector<std::string>& tokens,
                                             std::vector<std::string>* unknown) const {
    std::vector<std::int64_t> ids;
    ids.reserve(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const auto& token = tokens[i];
        AG_CHECK(
            !is_reserved(token), ValueError,
            "Vocabulary::encode: token {} is '{}', a reserved token; its literal text is not read as the "
            "special token",
            i, token);
        const std::int64_t id = this->id(token);
        if (id == unk_id && unknown != nullptr) unknown->push_back(token);
        ids.push_back(id);
    }
    return ids;
}

std::vector<std::string> Vocabulary::decode(const std::vector<std::int64_t>& ids) const {
    std::vector<std::string> out;
    for (const std::int64_t i : ids) {
        if (i == eos_id) break;
        if (i == pad_id || i == bos_id) continue;
        out.push_back(token(i));
    }
    return out;
}

}  // namespace attograd::data
