// The coref task: templated sentences whose "it" refers to the noun the adjective fits.
#include "data/coref.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace attograd::data {
namespace {

constexpr std::array<std::string_view, 10> animates{"animal", "dog",  "cat",   "horse", "cow",
                                                    "boy",    "girl", "child", "man",   "woman"};
constexpr std::array<std::string_view, 8> places{"street", "road", "river", "bridge",
                                                 "field",  "lake", "yard",  "square"};
// Adjectives that only fit a living thing, and ones that only fit a place.
constexpr std::array<std::string_view, 8> animate_adjectives{"tired", "scared", "weak", "sleepy",
                                                             "lazy",  "old",    "shy",  "hungry"};
constexpr std::array<std::string_view, 8> place_adjectives{"wide",  "busy",  "icy",   "long",
                                                           "muddy", "steep", "noisy", "crowded"};
// Active "the A VERB the P" and passive "the P PASSIVE by the A" forms of each verb phrase.
constexpr std::array<std::string_view, 4> active_verbs{"didn't cross", "did not cross", "would not cross",
                                                       "refused to cross"};
constexpr std::array<std::string_view, 4> passive_verbs{"wasn't crossed", "was not crossed",
                                                        "was never crossed", "could not be crossed"};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& words, const std::string& word) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

template <std::size_t N>
std::string pick(const std::array<std::string_view, N>& words, Generator& generator) {
    return std::string(words[static_cast<std::size_t>(generator.randint(0, static_cast<std::int64_t>(N)))]);
}

void append_words(std::vector<std::string>& to, std::string_view text) {
    while (!text.empty()) {
        const auto space = text.find(' ');
        to.emplace_back(text.substr(0, space));
        text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    }
}

class CorefTask final : public GeneratedTask {
public:
    CorefTask() {
        info_.name = "coref";
        info_.description =
            "which noun \"it\" refers to: the one the final adjective fits (templated sentences)";
        info_.example = "the animal didn't cross the street because it was too tired -> animal";
        info_.metric = Metric::Sequence;
        info_.alignment = "the target attends the source position of the noun \"it\" refers to";
        info_.min_source_len = 11;  // "the A didn't cross the P because it was too ADJ"
        info_.max_source_len = 14;  // "the P could not be crossed by the A because it was too ADJ"
        info_.max_target_len = 1;
        make_held_out(1006);
    }

    std::vector<std::string> symbols() const override {
        std::vector<std::string> out;
        const auto add = [&](std::string_view text) {
            std::vector<std::string> words;
            append_words(words, text);
            for (auto& w : words)
                if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
        };
        add("the because it was too by");
        for (auto w : animates) add(w);
        for (auto w : places) add(w);
        for (auto w : animate_adjectives) add(w);
        for (auto w : place_adjectives) add(w);
        for (auto w : active_verbs) add(w);
        for (auto w : passive_verbs) add(w);
        return out;
    }

    std::optional<std::vector<std::int64_t>> alignment(const Example& example) const override {
        const auto position = referent(example.source);
        if (!position) return std::nullopt;
        return std::vector<std::int64_t>{*position};
    }

    std::optional<std::vector<std::string>> solve(const std::vector<std::string>& source) const override {
        const auto position = referent(source);
        if (!position) return std::nullopt;
        return std::vector<std::string>{source[static_cast<std::size_t>(*position)]};
    }

protected:
    Example generate(Generator& generator) const override {
        const std::string animate = pick(animates, generator);
        const std::string place = pick(places, generator);
        const bool passive = generator.randint(0, 2) == 1;
        const auto verb = static_cast<std::size_t>(generator.randint(0, std::ssize(active_verbs)));
        const bool animate_referent = generator.randint(0, 2) == 1;
        const std::string adjective =
            animate_referent ? pick(animate_adjectives, generator) : pick(place_adjectives, generator);
        Example example;
        auto& s = example.source;
        if (passive) {
            append_words(s, "the " + place);
            append_words(s, passive_verbs[verb]);
            append_words(s, "by the " + animate);
        } else {
            append_words(s, "the " + animate);
            append_words(s, active_verbs[verb]);
            append_words(s, "the " + place);
        }
        append_words(s, "because it was too " + adjective);
        example.target = *solve(example.source);
        return example;
    }

private:
    /// Source position of the noun "it" refers to in a sentence of the task's form: the last
    /// five tokens are "because it was too ADJ", and exactly one animate noun and one place come
    /// before them.
    static std::optional<std::int64_t> referent(const std::vector<std::string>& source) {
        const auto n = static_cast<std::int64_t>(source.size());
        if (n < 7) return std::nullopt;
        const auto at = [&](std::int64_t i) -> const std::string& {
            return source[static_cast<std::size_t>(i)];
        };
        if (at(n - 5) != "because" || at(n - 4) != "it" || at(n - 3) != "was" || at(n - 2) != "too")
            return std::nullopt;
        const std::string& adjective = at(n - 1);
        const bool animate = contains(animate_adjectives, adjective);
        if (!animate && !contains(place_adjectives, adjective)) return std::nullopt;
        std::optional<std::int64_t> animate_at, place_at;
        for (std::int64_t i = 0; i < n - 5; ++i) {
            std::optional<std::int64_t>* slot = contains(animates, at(i)) ? &animate_at
                                                : contains(places, at(i)) ? &place_at
                                                                          : nullptr;
            if (slot == nullptr) continue;
            if (slot->has_value()) return std::nullopt;  // two nouns of one kind: "it" is ambiguous
            *slot = i;
        }
        if (!animate_at || !place_at) return std::nullopt;
        return animate ? animate_at : place_at;
    }
};

}  // namespace

std::unique_ptr<Task> make_coref_task() { return std::make_unique<CorefTask>(); }

TaskEntry coref_task_entry() {
    return {.name = "coref",
            .make = make_coref_task,
            .target_accuracy = 0.95,
            .defaults = {{"model.layers", 2}, {"model.heads", 2}}};
}

}  // namespace attograd::data
