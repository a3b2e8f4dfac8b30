// Head-score curves over training: each snapshot's self-attention maps scored by
// previous_token_scores and induction_scores, averaged over the probes.
#include "inspect/head_score_curves.hpp"

#include "core/tensor.hpp"
#include "inspect/head_scores.hpp"

#include <map>
#include <tuple>

namespace attograd::inspect {
namespace {

struct Sums {
    double previous_token = 0.0, induction = 0.0;
    int probes = 0;
};

// The map's two scores: its weights as one head [1, T, T], its key labels as token ids.
std::pair<double, double> map_scores(const AttentionMap& map) {
    const std::int64_t t = map.cols();
    const Tensor attention = tensor(map.weights, {1, t, t}, {.dtype = DType::Float64});
    std::map<std::string, std::int64_t> ids;
    std::vector<std::int64_t> tokens;
    for (const auto& key : map.keys) tokens.push_back(ids.emplace(key, std::ssize(ids)).first->second);
    return {previous_token_scores(attention)[0],
            induction_scores(attention, index_tensor(tokens, {1, t}))[0]};
}

}  // namespace

std::vector<HeadScoreCurve> head_score_curves(const std::vector<AttentionSnapshot>& snapshots) {
    using Key = std::tuple<std::int64_t, std::int64_t, std::string>;  // layer, head, module
    std::map<Key, HeadScoreCurve> curves;
    for (const AttentionSnapshot& snapshot : snapshots) {
        std::map<Key, Sums> sums;
        for (const InspectedExample& probe : snapshot.probes) {
            for (const AttentionMap& map : probe.maps) {
                if (map.head < 0 || map.queries != map.keys) continue;
                check_map(map);
                const auto [previous, induction] = map_scores(map);
                Sums& s = sums[Key{map.layer, map.head, map.module}];
                s.previous_token += previous;
                s.induction += induction;
                ++s.probes;
            }
        }
        for (const auto& [key, s] : sums) {
            HeadScoreCurve& curve = curves[key];
            curve.layer = std::get<0>(key);
            curve.head = std::get<1>(key);
            curve.module = std::get<2>(key);
            curve.steps.push_back(static_cast<double>(snapshot.step));
            curve.previous_token.push_back(s.previous_token / s.probes);
            curve.induction.push_back(s.induction / s.probes);
        }
    }
    std::vector<HeadScoreCurve> out;
    for (auto& [key, curve] : curves) out.push_back(std::move(curve));
    return out;
}

std::vector<Chart> head_score_charts(const std::vector<AttentionSnapshot>& snapshots) {
    const std::vector<HeadScoreCurve> curves = head_score_curves(snapshots);
    if (curves.empty()) return {};
    Chart previous{.title = "previous-token score per head",
                   .x_label = "step",
                   .y_label = "score",
                   .series = {},
                   .y_min = 0.0,
                   .y_max = 1.0};
    Chart induction{.title = "induction score per head",
                    .x_label = "step",
                    .y_label = "score",
                    .series = {},
                    .y_min = 0.0,
                    .y_max = 1.0};
    for (const HeadScoreCurve& c : curves) {
        const std::string name = fmt::format("L{}.H{}", c.layer, c.head);
        previous.series.push_back({.name = name, .colour = "", .x = c.steps, .y = c.previous_token});
        induction.series.push_back({.name = name, .colour = "", .x = c.steps, .y = c.induction});
    }
    return {previous, induction};
}

}  // namespace attograd::inspect
