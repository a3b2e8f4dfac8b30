// Vocabulary: token strings <-> ids, with the special tokens every run shares.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace attograd::cli {

/// Maps tokens to ids and back. Ids 0..3 are the special tokens `<pad>`, `<bos>`, `<eos>` and
/// `<unk>`; the task's or file's tokens follow in the order given (sorted when built from data,
/// so the same file always gives the same ids).
class Vocabulary {
public:
    static constexpr std::int64_t pad_id = 0;
    static constexpr std::int64_t bos_id = 1;
    static constexpr std::int64_t eos_id = 2;
    static constexpr std::int64_t unk_id = 3;
    static constexpr const char* pad = "<pad>";
    static constexpr const char* bos = "<bos>";
    static constexpr const char* eos = "<eos>";
    static constexpr const char* unk = "<unk>";

    /// Only the special tokens.
    Vocabulary();
    /// The special tokens, then `tokens` (duplicates and special tokens skipped).
    explicit Vocabulary(const std::vector<std::string>& tokens);

    /// Number of ids, special tokens included.
    std::int64_t size() const { return static_cast<std::int64_t>(tokens_.size()); }
    /// Id of `token`, or unk_id when it is not in the vocabulary.
    std::int64_t id(const std::string& token) const;
    /// Whether `token` has its own id.
    bool contains(const std::string& token) const { return ids_.count(token) != 0; }
    /// Token of `id`; throws IndexError outside [0, size()).
    const std::string& token(std::int64_t id) const;
    /// Ids of `tokens`; unknown tokens become unk_id and are appended to `unknown` when given.
    std::vector<std::int64_t> encode(const std::vector<std::string>& tokens,
                                     std::vector<std::string>* unknown = nullptr) const;
    /// Tokens of `ids`, stopping before the first `<eos>` and skipping `<pad>` and `<bos>`.
    std::vector<std::string> decode(const std::vector<std::int64_t>& ids) const;
    /// Every token, index = id.
    const std::vector<std::string>& tokens() const { return tokens_; }

    /// JSON array of the tokens (index = id).
    nlohmann::json to_json() const;
    /// Inverse of to_json. Throws ValueError unless it is an array of distinct strings that
    /// starts with the four special tokens.
    static Vocabulary from_json(const nlohmann::json& json);

private:
    void add(const std::string& token);
    std::vector<std::string> tokens_;
    std::unordered_map<std::string, std::int64_t> ids_;
};

}  // namespace attograd::cli
