// The registry of attention score functions (nn/score_registry.hpp).
#include "nn/score_registry.hpp"

#include "core/detail/named_registry.hpp"
#include "core/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

namespace attograd::nn {
namespace {

using Registry = attograd::detail::NamedRegistry<ScoreEntry>;

// The built-in scores, in the order of Score's enumerators, then the registered ones.
Registry& registry() {
    static Registry instance{std::deque<ScoreEntry>{
        {"additive", [](Score, const AttentionScoreOptions& o,
                        Generator& g) { return std::make_shared<AdditiveScore>(o, g); }},
        {"dot", [](Score, const AttentionScoreOptions& o,
                   Generator&) { return std::make_shared<DotScore>(o, false); }},
        {"scaled-dot", [](Score, const AttentionScoreOptions& o,
                          Generator&) { return std::make_shared<DotScore>(o, true); }},
        {"bilinear", [](Score, const AttentionScoreOptions& o, Generator& g) {
             return std::make_shared<BilinearScore>(o, g);
         }}}};
    return instance;
}

// The entry of `score`, or ValueError naming the value.
const ScoreEntry& entry_locked(const Registry& r, Score score, std::string_view fn) {
    const auto index = static_cast<std::size_t>(score);
    AG_CHECK(index < r.entries.size(), ValueError, "{}: no score is registered as Score value {} (known: {})",
             fn, index, fmt::join(r.names_locked(), ", "));
    return r.entries[index];
}

}  // namespace

Score register_score(ScoreEntry entry) {
    const bool bad_character = std::any_of(entry.name.begin(), entry.name.end(), [](unsigned char c) {
        return std::isspace(c) != 0 || std::iscntrl(c) != 0;
    });
    AG_CHECK(!entry.name.empty() && !bad_character, ValueError,
             "register_score: the name must be non-empty without spaces or control characters (got {} bytes)",
             entry.name.size());
    AG_CHECK(static_cast<bool>(entry.make), ValueError, "register_score: score '{}' has no make function",
             entry.name);
    return static_cast<Score>(registry().add(std::move(entry), "register_score", "score"));
}

Score parse_score(std::string_view name) {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    for (std::size_t i = 0; i < r.entries.size(); ++i)
        if (r.entries[i].name == name) return static_cast<Score>(i);
    throw ValueError(
        fmt::format("score: unknown score '{}' (choose {})", name, fmt::join(r.names_locked(), ", ")));
}

std::string_view to_string(Score score) {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    return entry_locked(r, score, "to_string").name;
}

std::vector<std::string> score_names() {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    return r.names_locked();
}

std::shared_ptr<AttentionScore> make_score(Score score, const AttentionScoreOptions& options,
                                           Generator& generator) {
    ScoreFactory make;
    std::string name;
    {
        Registry& r = registry();
        const std::lock_guard lock(r.mutex);
        const ScoreEntry& entry = entry_locked(r, score, "make_score");
        make = entry.make;
        name = entry.name;
    }
    auto module = make(score, options, generator);
    AG_CHECK(module != nullptr, ValueError, "make_score: the factory of score '{}' returned no module", name);
    AG_CHECK(
        module->kind() == score, ValueError,
        "make_score: the factory of score '{}' made a module of score '{}' (pass it the kind it is given)",
        name, to_string(module->kind()));
    return module;
}

}  // namespace attograd::nn
