// Vocabulary: token strings <-> ids, with the special tokens every run shares.
#include "vocab.hpp"

#include "core/error.hpp"

#include <nlohmann/json.hpp>

namespace attograd::cli {

Vocabulary::Vocabulary() {
    for (const char* special : {pad, bos, eos, unk}) add(special);
}

Vocabulary::Vocabulary(const std::vector<std::string>& tokens) : Vocabulary() {
    for (const auto& token : tokens) add(token);
}

void Vocabulary::add(const std::string& token) {
    if (ids_.count(token) != 0) return;
    ids_.emplace(token, size());
    tokens_.push_back(token);
}

std::int64_t Vocabulary::id(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? unk_id : it->second;
}

const std::string& Vocabulary::token(std::int64_t id) const {
    AG_CHECK(id >= 0 && id < size(), IndexError, "vocabulary: id {} outside [0, {})", id, size());
    return tokens_[static_cast<std::size_t>(id)];
}

std::vector<std::int64_t> Vocabulary::encode(const std::vector<std::string>& tokens,
                                             std::vector<std::string>* unknown) const {
    std::vector<std::int64_t> ids;
    ids.reserve(tokens.size());
    for (const auto& token : tokens) {
        const std::int64_t i = id(token);
        if (i == unk_id && token != unk && unknown != nullptr) unknown->push_back(token);
        ids.push_back(i);
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

nlohmann::json Vocabulary::to_json() const { return tokens_; }

Vocabulary Vocabulary::from_json(const nlohmann::json& json) {
    AG_CHECK(json.is_array(), ValueError, "vocabulary: expected a JSON array of tokens");
    Vocabulary vocab;
    for (std::size_t i = 0; i < json.size(); ++i) {
        AG_CHECK(json[i].is_string(), ValueError, "vocabulary: entry {} is not a string", i);
        const auto token = json[i].get<std::string>();
        if (i < 4) {
            AG_CHECK(token == vocab.tokens_[i], ValueError,
                     "vocabulary: entry {} must be the special token {}, got '{}'", i, vocab.tokens_[i],
                     token);
            continue;
        }
        AG_CHECK(!vocab.contains(token), ValueError, "vocabulary: token '{}' appears twice", token);
        vocab.add(token);
    }
    AG_CHECK(json.size() >= 4, ValueError, "vocabulary: missing the special tokens");
    return vocab;
}

}  // namespace attograd::cli
