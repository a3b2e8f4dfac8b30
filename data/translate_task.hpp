// The `translate` task: English -> another language from the machine's gettext catalogs.
#pragma once

#include "data/task.hpp"
#include "data/translation_pairs.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attograd::data {

/// Options of make_translate_task.
struct TranslateTaskOptions {
    /// Where the pairs come from: options.pairs.language ("fr", "de", "es", ...), the locale
    /// directory, the longest message in words and the held-out percent (see catalog_pairs).
    CatalogPairsOptions pairs{.language = "fr"};
    TokenLevel level = TokenLevel::Word;  ///< word level (BLEU's 13a tokens) or characters
    /// Keep only this many training pairs (the shortest: fewest source then target tokens, ties by
    /// source), for quick runs; 0 keeps all.
    std::int64_t max_train_pairs = 0;
    /// Keep only this many held-out pairs (chosen as max_train_pairs chooses); 0 keeps all.
    std::int64_t max_held_out_pairs = 0;
    /// Fewest training pairs (after filtering and max_train_pairs) a task is built from (>= 1);
    /// fewer is too little to learn from and throws.
    std::int64_t min_train_pairs = 100;
};

/// translate: short English messages of the installed programs and their translations into
/// options.pairs.language, read at run time from `/usr/share/locale/LANG/LC_MESSAGES/*.mo`
/// (catalog_pairs: no format directives or markup, at most max_tokens words a side,
/// deduplicated by source, held out by a hash of the source so the split is the same on every
/// machine). Nothing of the catalogs is stored with the program. Training examples are drawn
/// uniformly from the training pairs, each with its most frequent translation as target; the
/// held-out examples are the held-out pairs, and references() gives every distinct
/// translation of a source (BLEU with several references). Sequence accuracy (exact match); no
/// right alignment is defined (word order differs between languages: "invalid argument" ->
/// "argument invalide").
class TranslateTask final : public Task {
public:
    /// Reads the catalogs. Throws as catalog_pairs (ValueError for a malformed language name or
    /// option, IoError "no gettext catalogs for language ..." or naming a file that is not a .mo
    /// catalog), ValueError for max_train_pairs, max_held_out_pairs < 0 or min_train_pairs < 1,
    /// and ValueError "translate: only N training pairs ..." when fewer than min_train_pairs (or
    /// no held-out pair) remain after filtering.
    explicit TranslateTask(const TranslateTaskOptions& options);

    /// Every distinct token of the training examples (sources and targets), sorted.
    std::vector<std::string> symbols() const override;
    /// A training example drawn uniformly.
    Example train_example(Generator& generator) const override;
    /// BLEU's tokens at word level (tokenize_13a), characters at character level.
    std::vector<std::string> tokenize(const std::string& text) const override;
    /// The tokens of every translation the catalogs give for the source (most frequent first),
    /// or {example.target} for a source not in the catalogs.
    std::vector<std::vector<std::string>> references(const Example& example) const override;

    /// Every training example (one per training pair), sorted by source: what vocabularies are
    /// built from (build_vocabulary).
    const std::vector<Example>& train_set() const { return train_; }
    /// The .mo files read, sorted.
    const std::vector<std::filesystem::path>& catalogs() const { return catalogs_; }

private:
    std::vector<Example> train_;
    std::vector<std::filesystem::path> catalogs_;
    std::map<std::string, std::vector<std::vector<std::string>>> references_;  // joined source -> tokens
};

/// A TranslateTask (see its constructor for what throws).
std::unique_ptr<TranslateTask> make_translate_task(const TranslateTaskOptions& options);
/// translate's entry for a training program (not in the registry: the task is built with
/// options, make_translate_task): two layers a side of 4 heads, E = 128 (wider than the toy
/// tasks), batch 64, 4000 steps, and an evaluation of the ~3000 held-out messages every 500
/// steps; no early-stopping target (1.0).
TaskEntry translate_task_entry();

}  // namespace attograd::data
