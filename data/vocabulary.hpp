// Vocabulary: token strings <-> ids, with the reserved special tokens every model shares.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attograd::data {

/// How Vocabulary::build_from_sequences chooses its tokens (torchtext's
/// `build_vocab_from_iterator(..., min_freq, specials, special_first=True, max_tokens)`).
struct VocabularyOptions {
    std::int64_t min_freq = 1;  ///< tokens seen fewer times are left out (read as `<unk>`); >= 1
    std::optional<std::int64_t> max_tokens =
        std::nullopt;  ///< at most this many ids, the 4 special tokens included
};

/// Maps tokens to ids and back. Ids 0..3 are the reserved special tokens `<pad>`, `<bos>`,
/// `<eos>` and `<unk>`; the task's or file's tokens follow in the order given (sorted when
/// built from data, so the same file always gives the same ids).
///
/// Reserved-token rule: the literal text of a special token is never read as that token. A
/// token list given to the constructor or to encode() that holds one is refused (ValueError),
/// as TsvDataset refuses a word-level file that holds one (with its line number). encode() is
/// for text from users and files; lookup_indices() turns tokens that came from token() or
/// decode() (which may be special tokens) back into ids.
class Vocabulary {
public:
    static constexpr std::int64_t pad_id = 0;    ///< id of `<pad>`, the padding of batches
    static constexpr std::int64_t bos_id = 1;    ///< id of `<bos>`, the first decoder input
    static constexpr std::int64_t eos_id = 2;    ///< id of `<eos>`, the end of an output
    static constexpr std::int64_t unk_id = 3;    ///< id of `<unk>`, a token not in the vocabulary
    static constexpr const char* pad = "<pad>";  ///< the padding token
    static constexpr const char* bos = "<bos>";  ///< the beginning-of-sequence token
    static constexpr const char* eos = "<eos>";  ///< the end-of-sequence token
    static constexpr const char* unk = "<unk>";  ///< the unknown token
    /// Number of reserved ids (0 .. reserved_count - 1).
    static constexpr std::int64_t reserved_count = 4;

    /// Whether `token` is the literal text of a special token ("`<pad>`", "`<bos>`", "`<eos>`",
    /// "`<unk>`").
    static bool is_reserved(std::string_view token);
    /// Why `token` cannot be a vocabulary entry, or an empty string when it can. Token rule: a
    /// token is not empty, is well-formed UTF-8 (is_valid_utf8), holds no control character (C0
    /// U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F, U+2028 / U+2029 line and paragraph separators:
    /// a NUL, a newline, a terminal's CSI ...; see control_length) and, when longer than one character, no
    /// space (U+0020 or another Unicode space, such as U+00A0: space_length); a token of exactly
    /// one space or one tab is a character-level token and allowed. Such tokens
    /// cannot come from a word split and would print or save ambiguously.
    static std::string token_problem(std::string_view token);

    /// Only the special tokens.
    Vocabulary();
    /// The special tokens, then `tokens` in order. Throws ValueError naming the token and its
    /// position when a token is reserved (the reserved-token rule), breaks the token rule
    /// (token_problem) or appears twice.
    explicit Vocabulary(const std::vector<std::string>& tokens);

    /// A vocabulary built from token sequences (torchtext's `build_vocab_from_iterator` with
    /// `specials` = the four special tokens first): each distinct token's count, tokens seen
    /// fewer than `min_freq` times left out, the rest ordered by count, most frequent first,
    /// ties in byte order (torchtext sorts by (-count, token)), and cut to the first
    /// `max_tokens - 4` so that size() <= max_tokens. Left-out tokens are encoded as `<unk>`.
    /// Throws ValueError when min_freq < 1 or max_tokens < 4 (the special tokens alone), and,
    /// naming the sequence and position, for a reserved or malformed token (as the constructor).
    static Vocabulary build_from_sequences(const std::vector<std::vector<std::string>>& sequences,
                                           const VocabularyOptions& options = {});

    /// A saved vocabulary: `tokens` must be the full list by id, as tokens() returns it: the
    /// four special tokens first, then distinct tokens that keep the token rule. Throws
    /// ValueError naming the entry otherwise.
    static Vocabulary from_tokens(const std::vector<std::string>& tokens);

    /// Number of ids, special tokens included.
    std::int64_t size() const { return static_cast<std::int64_t>(tokens_.size()); }
    /// Id of `token`, or unk_id when it is not in the vocabulary. A special token's text gives
    /// its id: this is the lookup, not the reading of user text (use encode for that).
    std::int64_t id(const std::string& token) const;
    /// id() of each token (torchtext's `Vocab.lookup_indices`): for tokens the program made,
    /// such as decode()'s output or labels padded with `<pad>`, never for user text.
    std::vector<std::int64_t> lookup_indices(const std::vector<std::string>& tokens) const;
    /// token() of each id, special tokens included (torchtext's `Vocab.lookup_tokens`; unlike
    /// decode, nothing is skipped and `<eos>` does not stop it): labels for what a decoder wrote,
    /// such as nn::Hypothesis::output_ids. Throws IndexError for an id outside [0, size()).
    std::vector<std::string> lookup_tokens(const std::vector<std::int64_t>& ids) const;
    /// Whether `token` has its own id.
    bool contains(const std::string& token) const { return ids_.count(token) != 0; }
    /// Token of `id`; throws IndexError outside [0, size()).
    const std::string& token(std::int64_t id) const;
    /// Ids of user tokens; unknown tokens become unk_id and are appended to `unknown` when
    /// given. Throws ValueError naming the position when a token is reserved (the
    /// reserved-token rule).
    std::vector<std::int64_t> encode(const std::vector<std::string>& tokens,
                                     std::vector<std::string>* unknown = nullptr) const;
    /// Tokens of `ids`, stopping before the first `<eos>` and skipping `<pad>` and `<bos>`.
    /// Throws IndexError for an id outside [0, size()).
    std::vector<std::string> decode(const std::vector<std::int64_t>& ids) const;
    /// Every token, index = id (what from_tokens reads back).
    const std::vector<std::string>& tokens() const { return tokens_; }

private:
    void add(const std::string& token);
    std::vector<std::string> tokens_;
    std::unordered_map<std::string, std::int64_t> ids_;
};

}  // namespace attograd::data
