// The translate task: catalog pairs as training examples, held-out examples and references.
#include "data/translate_task.hpp"

#include "core/error.hpp"
#include "data/text.hpp"

#include <algorithm>
#include <set>

namespace attograd::data {
namespace {

std::string tokens_key(const std::vector<std::string>& tokens) { return join(tokens, "\x1f"); }

/// The `limit` shortest pairs (fewest source then target tokens, ties by source), in source
/// order; every pair when limit is 0.
std::vector<TranslationPair> shortest(std::vector<TranslationPair> pairs, std::int64_t limit,
                                      TokenLevel level) {
    if (limit == 0 || std::ssize(pairs) <= limit) return pairs;
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::size_t>> order;  // (lengths, index)
    for (std::size_t i = 0; i < pairs.size(); ++i)
        order.push_back({{tokenize_text(pairs[i].source, level).size(),
                          tokenize_text(pairs[i].references.front(), level).size()},
                         i});
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::size_t> kept;
    for (std::int64_t i = 0; i < limit; ++i) kept.push_back(order[static_cast<std::size_t>(i)].second);
    std::sort(kept.begin(), kept.end());
    std::vector<TranslationPair> out;
    for (std::size_t i : kept) out.push_back(std::move(pairs[i]));
    return out;
}

}  // namespace

TranslateTask::TranslateTask(const TranslateTaskOptions& options) {
    AG_CHECK(options.max_train_pairs >= 0 && options.max_held_out_pairs >= 0, ValueError,
             "translate: max_train_pairs and max_held_out_pairs must be >= 0, got {} and {}",
             options.max_train_pairs, options.max_held_out_pairs);
    AG_CHECK(options.min_train_pairs >= 1, ValueError, "translate: min_train_pairs must be >= 1, got {}",
             options.min_train_pairs);
    CatalogPairs pairs = catalog_pairs(options.pairs);
    catalogs_ = pairs.catalogs;
    const std::string& language = options.pairs.language;
    const auto train_pairs = shortest(std::move(pairs.train), options.max_train_pairs, options.level);
    const auto held_out_pairs =
        shortest(std::move(pairs.held_out), options.max_held_out_pairs, options.level);

    // Sources that tokenise alike ("Save  as", "Save as") are one source: the held-out split
    // keeps its own, so no training source is a held-out one.
    std::set<std::string> held_out_keys;
    for (const Example& e : translation_examples(held_out_pairs, options.level)) {
        held_out_keys.insert(tokens_key(e.source));
        held_out_.push_back(e);
    }
    for (const Example& e : translation_examples(train_pairs, options.level))
        if (held_out_keys.count(tokens_key(e.source)) == 0) train_.push_back(e);
    AG_CHECK(
        std::ssize(train_) >= options.min_train_pairs && !held_out_.empty(), ValueError,
        "translate: only {} training and {} held-out pairs for language {} after filtering (messages of "
        "at most {} words without format directives, from {} catalog{}); at least {} training pairs and one "
        "held-out pair are needed",
        train_.size(), held_out_.size(), language, options.pairs.max_tokens, catalogs_.size(),
        catalogs_.size() == 1 ? "" : "s", options.min_train_pairs);

    for (const auto* split : {&train_pairs, &held_out_pairs}) {
        for (const TranslationPair& pair : *split) {
            auto& refs = references_[tokens_key(tokenize_text(pair.source, options.level))];
            for (const std::string& reference : pair.references) {
                auto tokens = tokenize_text(reference, options.level);
                if (std::find(refs.begin(), refs.end(), tokens) == refs.end())
                    refs.push_back(std::move(tokens));
            }
        }
    }

    std::int64_t max_source = 0, max_target = 0;
    for (const auto* examples : {&train_, &held_out_}) {
        for (const Example& e : *examples) {
            max_source = std::max(max_source, std::ssize(e.source));
            max_target = std::max(max_target, std::ssize(e.target));
        }
    }
    info_.name = "translate";
    info_.description =
        fmt::format("English -> {} messages from this machine's gettext catalogs ({} train, {} held out)",
                    language, train_.size(), held_out_.size());
    info_.example =
        fmt::format("{} -> {}", join(held_out_.front().source, " "), join(held_out_.front().target, " "));
    info_.metric = Metric::Sequence;
    info_.char_level = options.level == TokenLevel::Char;
    info_.max_source_len = max_source;
    info_.min_source_len = 1;
    info_.max_target_len = max_target;
}

std::vector<std::string> TranslateTask::symbols() const {
    std::set<std::string> tokens;
    for (const Example& e : train_) {
        tokens.insert(e.source.begin(), e.source.end());
        tokens.insert(e.target.begin(), e.target.end());
    }
    return {tokens.begin(), tokens.end()};
}

Example TranslateTask::train_example(Generator& generator) const {
    return train_[static_cast<std::size_t>(generator.randint(0, std::ssize(train_)))];
}

std::vector<std::string> TranslateTask::tokenize(const std::string& text) const {
    AG_CHECK(is_valid_utf8(text), ValueError, "the input is not valid UTF-8");
    return tokenize_text(strip_bom(text), info_.char_level ? TokenLevel::Char : TokenLevel::Word);
}

std::vector<std::vector<std::string>> TranslateTask::references(const Example& example) const {
    const auto it = references_.find(tokens_key(example.source));
    if (it == references_.end()) return {example.target};
    return it->second;
}

std::unique_ptr<TranslateTask> make_translate_task(const TranslateTaskOptions& options) {
    return std::make_unique<TranslateTask>(options);
}

TaskEntry translate_task_entry() {
    return {.name = "translate",
            .make = {},
            .target_accuracy = 1.0,
            .defaults = {{"model.layers", 2},
                         {"model.decoder_layers", 2},
                         {"model.heads", 4},
                         {"model.embed_dim", 128},
                         {"model.ffn_dim", 256},
                         {"train.batch", 64},
                         {"train.steps", 4000},
                         {"train.eval_every", 500}}};
}

}  // namespace attograd::data
