// The keyword tasks: a topic label decided by one cue word among filler words.
#include "data/keyword.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace attograd::data {
namespace {

constexpr std::array<std::string_view, 20> fillers{"the",  "a",    "of",   "and",  "to",  "in", "it",
                                                   "was",  "on",   "for",  "with", "as",  "at", "by",
                                                   "from", "this", "that", "then", "but", "so"};
constexpr std::array<std::string_view, 4> topics{"sport", "music", "food", "weather"};
// cues[t] are topic t's cue words.
constexpr std::array<std::array<std::string_view, 3>, 4> cues{{{"goal", "team", "match"},
                                                               {"song", "drum", "piano"},
                                                               {"bread", "soup", "apple"},
                                                               {"rain", "snow", "storm"}}};
constexpr std::int64_t length = 24;

/// The topic of cue word `word`, or -1 when it is not one.
std::int64_t topic_of(const std::string& word) {
    for (std::size_t t = 0; t < cues.size(); ++t)
        if (std::find(cues[t].begin(), cues[t].end(), word) != cues[t].end())
            return static_cast<std::int64_t>(t);
    return -1;
}

class KeywordTask final : public GeneratedTask {
public:
    explicit KeywordTask(bool cue_last) : cue_last_(cue_last) {
        info_.name = cue_last ? "keyword-end" : "keyword";
        info_.description = cue_last
                                ? "the topic of the one cue word, always the last of 24 (else filler words)"
                                : "the topic of the one cue word among 24 (else filler words)";
        info_.example =
            cue_last ? "the of and to in it was on for with as at by from this that then but so the a of and "
                       "rain -> weather"
                     : "the of and to goal in it was on for with as at by from this that then but so the a "
                       "of and -> sport";
        info_.metric = Metric::Sequence;
        info_.alignment = "the target attends the source position of the cue word";
        info_.min_source_len = length;
        info_.max_source_len = length;
        info_.max_target_len = 1;
        make_held_out(cue_last ? 1008 : 1007);
    }

    std::vector<std::string> symbols() const override {
        std::vector<std::string> out;
        for (auto w : fillers) out.emplace_back(w);
        for (const auto& words : cues)
            for (auto w : words) out.emplace_back(w);
        for (auto w : topics) out.emplace_back(w);
        return out;
    }

    std::optional<std::vector<std::int64_t>> alignment(const Example& example) const override {
        const auto position = cue(example.source);
        if (!position) return std::nullopt;
        return std::vector<std::int64_t>{*position};
    }

    std::optional<std::vector<std::string>> solve(const std::vector<std::string>& source) const override {
        const auto position = cue(source);
        if (!position) return std::nullopt;
        const auto topic = topic_of(source[static_cast<std::size_t>(*position)]);
        return std::vector<std::string>{std::string(topics[static_cast<std::size_t>(topic)])};
    }

protected:
    Example generate(Generator& generator) const override {
        Example example;
        for (std::int64_t i = 0; i < length; ++i)
            example.source.emplace_back(
                fillers[static_cast<std::size_t>(generator.randint(0, std::ssize(fillers)))]);
        const auto topic = static_cast<std::size_t>(generator.randint(0, std::ssize(topics)));
        const auto word = static_cast<std::size_t>(generator.randint(0, std::ssize(cues[topic])));
        const std::int64_t at = cue_last_ ? length - 1 : generator.randint(0, length);
        example.source[static_cast<std::size_t>(at)] = std::string(cues[topic][word]);
        example.target = *solve(example.source);
        return example;
    }

private:
    /// Position of the one cue word of a source whose other words are filler words; nullopt when
    /// there is none, more than one, or a word of neither kind.
    static std::optional<std::int64_t> cue(const std::vector<std::string>& source) {
        std::optional<std::int64_t> found;
        for (std::size_t i = 0; i < source.size(); ++i) {
            if (topic_of(source[i]) >= 0) {
                if (found) return std::nullopt;
                found = static_cast<std::int64_t>(i);
            } else if (std::find(fillers.begin(), fillers.end(), source[i]) == fillers.end()) {
                return std::nullopt;
            }
        }
        return found;
    }

    bool cue_last_;
};

}  // namespace

std::unique_ptr<Task> make_keyword_task() { return std::make_unique<KeywordTask>(false); }
std::unique_ptr<Task> make_keyword_end_task() { return std::make_unique<KeywordTask>(true); }

// One encoder self-attention layer: the Transformer model is then a self-attention classifier
// (its decoder's one query reads what the encoder gathered), next to --model rnn's attention over
// a recurrent encoder.
TaskEntry keyword_task_entry() {
    return {.name = "keyword",
            .make = make_keyword_task,
            .target_accuracy = 0.95,
            .defaults = {{"model.layers", 1}}};
}
TaskEntry keyword_end_task_entry() {
    return {.name = "keyword-end",
            .make = make_keyword_end_task,
            .target_accuracy = 0.95,
            .defaults = {{"model.layers", 1}}};
}

}  // namespace attograd::data
