// Attention rollout and flow (inspect/rollout) and the max-flow network under them (inspect/max_flow).
#include "fixtures.hpp"
#include "helpers.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <string>
#include <vector>

using namespace testing;
using namespace attograd::inspect;

namespace {

Tensor t64(const std::vector<double>& values, const Shape& shape) {
    return tensor(values, shape, {.dtype = DType::Float64});
}

Tensor eye(std::int64_t n) {
    Tensor out = zeros({n, n}, {.dtype = DType::Float64});
    for (std::int64_t i = 0; i < n; ++i) out.data<double>()[i * n + i] = 1.0;
    return out;
}

// The paper's A~ of one layer, with public ops only: the mean over `heads` (all when empty),
// then 0.5 A + 0.5 I with rows divided by their sums (self-attention with `residual`). [B, Tq, Tk]
Tensor augmented(const Tensor& w, bool residual = true, const std::vector<std::int64_t>& heads = {}) {
    Tensor a = to_dtype(w, DType::Float64);
    if (a.dim() == 4) {
        if (!heads.empty())
            a = index_select(a, 1, index_tensor(heads, {static_cast<std::int64_t>(heads.size())}));
        a = mean(a, {1});
    }
    if (!residual) return a;
    a = 0.5 * a + 0.5 * eye(a.size(-1));
    return a / sum(a, {-1}, true);
}

// Random attention weights: a softmax over the last axis (rows sum to 1).
Tensor random_attention(const Shape& shape, Generator& gen) {
    return softmax(randn(shape, gen, {.dtype = DType::Float64}) * 2.0, -1);
}

// Weights with about `zero_share` of them set to 0 (a sparse, local or hard attention's view).
Tensor sparse_attention(const Shape& shape, double zero_share, Generator& gen) {
    Tensor w = random_attention(shape, gen);
    const Tensor u = uniform(shape, 0.0, 1.0, gen, {.dtype = DType::Float64});
    for (std::int64_t i = 0; i < w.numel(); ++i) {
        if (u.data<double>()[i] < zero_share) w.data<double>()[i] = 0.0;
    }
    return w;
}

// The whole layered DAG as a dense capacity matrix: node (l, t) is offset[l] + t; layer 0 has
// mats[0]'s columns, layer l the rows of mats[l-1]; edge (l-1, i) -> (l, j) carries mats[l-1][b, j, i].
struct DenseDag {
    std::vector<std::vector<double>> cap;
    std::vector<std::int64_t> offset;
};

DenseDag dense_dag(const std::vector<Tensor>& mats, std::int64_t b) {
    DenseDag dag;
    dag.offset.push_back(0);
    dag.offset.push_back(mats[0].size(-1));
    for (const Tensor& m : mats) dag.offset.push_back(dag.offset.back() + m.size(-2));
    const auto n = static_cast<std::size_t>(dag.offset.back());
    dag.offset.pop_back();
    dag.cap.assign(n, std::vector<double>(n, 0.0));
    for (std::size_t l = 1; l <= mats.size(); ++l) {
        const Tensor& m = mats[l - 1];
        for (std::int64_t j = 0; j < m.size(-2); ++j) {
            for (std::int64_t i = 0; i < m.size(-1); ++i) {
                dag.cap[static_cast<std::size_t>(dag.offset[l - 1] + i)]
                       [static_cast<std::size_t>(dag.offset[l] + j)] = m.at({b, j, i});
            }
        }
    }
    return dag;
}

// Reference max-flow: Edmonds-Karp (BFS augmenting paths) on the dense residual matrix.
double edmonds_karp(std::vector<std::vector<double>> cap, std::size_t s, std::size_t t) {
    const std::size_t n = cap.size();
    double total = 0.0;
    for (;;) {
        std::vector<std::size_t> parent(n, n);
        parent[s] = s;
        std::deque<std::size_t> queue{s};
        while (!queue.empty() && parent[t] == n) {
            const std::size_t u = queue.front();
            queue.pop_front();
            for (std::size_t v = 0; v < n; ++v) {
                if (parent[v] == n && cap[u][v] > 1e-14) {
                    parent[v] = u;
                    queue.push_back(v);
                }
            }
        }
        if (parent[t] == n) return total;
        double f = std::numeric_limits<double>::infinity();
        for (std::size_t v = t; v != s; v = parent[v]) f = std::min(f, cap[parent[v]][v]);
        for (std::size_t v = t; v != s; v = parent[v]) {
            cap[parent[v]][v] -= f;
            cap[v][parent[v]] += f;
        }
        total += f;
    }
}

// Reference min-cut (= max-flow by the max-flow min-cut theorem): every node subset containing
// s and not t, for tiny graphs.
double brute_force_min_cut(const std::vector<std::vector<double>>& cap, std::size_t s, std::size_t t) {
    const std::size_t n = cap.size();
    std::vector<std::size_t> free;
    for (std::size_t v = 0; v < n; ++v) {
        if (v != s && v != t) free.push_back(v);
    }
    REQUIRE(free.size() <= 20);
    double best = std::numeric_limits<double>::infinity();
    std::vector<char> in_s(n, 0);
    for (std::uint64_t subset = 0; subset < (std::uint64_t{1} << free.size()); ++subset) {
        for (std::size_t k = 0; k < free.size(); ++k) in_s[free[k]] = static_cast<char>((subset >> k) & 1U);
        in_s[s] = 1;
        in_s[t] = 0;
        double cut = 0.0;
        for (std::size_t u = 0; u < n; ++u) {
            if (!in_s[u]) continue;
            for (std::size_t v = 0; v < n; ++v) {
                if (!in_s[v]) cut += cap[u][v];
            }
        }
        best = std::min(best, cut);
    }
    return best;
}

// The library's general max-flow on the same dense DAG: every ordered pair of nodes an edge,
// zero ones included, so nothing of the layered structure is used.
double network_max_flow(const std::vector<std::vector<double>>& cap, std::size_t s, std::size_t t) {
    FlowNetwork net(static_cast<std::int64_t>(cap.size()));
    for (std::size_t u = 0; u < cap.size(); ++u) {
        for (std::size_t v = 0; v < cap.size(); ++v) {
            if (u != v) net.add_edge(static_cast<std::int64_t>(u), static_cast<std::int64_t>(v), cap[u][v]);
        }
    }
    return net.max_flow(static_cast<std::int64_t>(s), static_cast<std::int64_t>(t));
}

enum class Reference { EdmondsKarp, MinCut, Network };

// flow[b, j, i] against a reference max-flow from input node (0, i) to top node (n, j) of the
// whole DAG of `mats` (the augmented layers); returns the largest difference.
double worst_flow_error(const Tensor& flow, const std::vector<Tensor>& mats, Reference reference) {
    double worst = 0.0;
    for (std::int64_t b = 0; b < flow.size(0); ++b) {
        const DenseDag dag = dense_dag(mats, b);
        for (std::int64_t j = 0; j < flow.size(1); ++j) {
            for (std::int64_t i = 0; i < flow.size(2); ++i) {
                const auto s = static_cast<std::size_t>(i);
                const auto t = static_cast<std::size_t>(dag.offset.back() + j);
                const double expected = reference == Reference::EdmondsKarp ? edmonds_karp(dag.cap, s, t)
                                        : reference == Reference::MinCut ? brute_force_min_cut(dag.cap, s, t)
                                                                         : network_max_flow(dag.cap, s, t);
                worst = std::max(worst, std::abs(flow.at({b, j, i}) - expected));
            }
        }
    }
    return worst;
}

double worst_row_sum_error(const Tensor& r) {
    const Tensor sums = sum(r, {-1});
    double worst = 0.0;
    for (const double s : sums.to_vector<double>()) worst = std::max(worst, std::abs(s - 1.0));
    return worst;
}

}  // namespace

// Two tokens, two single-head layers (rows: queries, columns: keys):
//   A_1 = [[1, 0], [0.5, 0.5]]  -> A~_1 = 0.5 A_1 + 0.5 I = [[1, 0], [0.25, 0.75]]
//   A_2 = [[0.2, 0.8], [0.6, 0.4]] -> A~_2 = [[0.6, 0.4], [0.3, 0.7]]
// Rollout A~_2 A~_1:
//   row 0: [0.6 * 1 + 0.4 * 0.25, 0.4 * 0.75] = [0.7, 0.3]
//   row 1: [0.3 * 1 + 0.7 * 0.25, 0.7 * 0.75] = [0.475, 0.525]
// Flow (0, i) -> (2, j) = sum_k min(A~_1[k, i], A~_2[j, k]):
//   j 0: i 0: min(1, 0.6) + min(0.25, 0.4) = 0.85    i 1: min(0, 0.6) + min(0.75, 0.4) = 0.4
//   j 1: i 0: min(1, 0.3) + min(0.25, 0.7) = 0.55    i 1: min(0, 0.3) + min(0.75, 0.7) = 0.7
// Without the residual, A_2 A_1 = [[0.2 + 0.4, 0.4], [0.6 + 0.2, 0.2]] = [[0.6, 0.4], [0.8, 0.2]].
TEST_CASE("rollout and flow of a two-token, two-layer stack worked on paper") {
    const Tensor a1 = t64({1.0, 0.0, 0.5, 0.5}, {1, 2, 2});
    const Tensor a2 = t64({0.2, 0.8, 0.6, 0.4}, {1, 2, 2});
    const Tensor rollout = attention_rollout({a1, a2});
    CHECK(rollout.shape() == Shape{1, 2, 2});
    CHECK(rollout.dtype() == DType::Float64);
    CHECK(max_abs_diff(rollout, t64({0.7, 0.3, 0.475, 0.525}, {1, 2, 2})) < 1e-15);
    CHECK(max_abs_diff(attention_flow({a1, a2}), t64({0.85, 0.4, 0.55, 0.7}, {1, 2, 2})) < 1e-15);
    CHECK(max_abs_diff(attention_rollout({a1, a2}, {.residual = false}),
                       t64({0.6, 0.4, 0.8, 0.2}, {1, 2, 2})) < 1e-15);
    // One layer: rollout and flow are A~_1 itself.
    CHECK(max_abs_diff(attention_rollout({a1}), t64({1.0, 0.0, 0.25, 0.75}, {1, 2, 2})) < 1e-15);
    CHECK(max_abs_diff(attention_flow({a1}), t64({1.0, 0.0, 0.25, 0.75}, {1, 2, 2})) < 1e-15);
}

// Three layers, no residual, T = 2: only middle node (1, 0) passes anything on (column 0 of
// A_2), to both (2, 0) and (2, 1), which each pass 0.5 to every top node:
//   A_1 = [[0.8, 0.2], [0.4, 0.6]], A_2 = [[1, 0], [1, 0]], A_3 = [[0.5, 0.5], [0.5, 0.5]].
// From input i the flow enters (1, 0) through one edge of capacity A_1[0, i] and can leave
// towards the top through 0.5 + 0.5 = 1, so flow(i -> j) = A_1[0, i]: 0.8 for i = 0, 0.2 for
// i = 1. Merging layers 1 and 2 into the two-layer closed form C[m, i] = A_1[0, i] and applying
// it again would count the shared edge twice: min(0.8, 0.5) + min(0.8, 0.5) = 1.0 for i = 0
// and 0.2 + 0.2 = 0.4 for i = 1. Rollout A_3 A_2 A_1 = [[0.8, 0.2], [0.8, 0.2]].
TEST_CASE("three layers with a shared middle node: flow is not the closed form applied twice") {
    const Tensor a1 = t64({0.8, 0.2, 0.4, 0.6}, {1, 2, 2});
    const Tensor a2 = t64({1.0, 0.0, 1.0, 0.0}, {1, 2, 2});
    const Tensor a3 = t64({0.5, 0.5, 0.5, 0.5}, {1, 2, 2});
    const Tensor flow = attention_flow({a1, a2, a3}, {.residual = false});
    CHECK(max_abs_diff(flow, t64({0.8, 0.2, 0.8, 0.2}, {1, 2, 2})) < 1e-15);
    CHECK(max_abs_diff(attention_rollout({a1, a2, a3}, {.residual = false}),
                       t64({0.8, 0.2, 0.8, 0.2}, {1, 2, 2})) < 1e-15);
    // The closed form over the merged layers: C = flow of layers 1-2, then sum_m min(C[m, i], A_3[j, m]).
    const Tensor c = attention_flow({a1, a2}, {.residual = false});
    for (std::int64_t i = 0; i < 2; ++i) {
        const double merged =
            std::min(c.at({0, 0, i}), a3.at({0, 0, 0})) + std::min(c.at({0, 1, i}), a3.at({0, 0, 1}));
        CHECK(merged == doctest::Approx(i == 0 ? 1.0 : 0.4));
        CHECK(merged > flow.at({0, 0, i}) + 0.1);
    }
}

TEST_CASE("normalize divides each row of the result by its sum") {
    Generator gen(23);
    std::vector<Tensor> layers{random_attention({2, 2, 4, 4}, gen), random_attention({2, 2, 4, 4}, gen),
                               random_attention({2, 2, 4, 4}, gen)};
    const Tensor flow = attention_flow(layers);
    CHECK(worst_row_sum_error(flow) > 0.1);  // separate max-flows: a row does not sum to 1
    const Tensor normalized = attention_flow(layers, {.normalize = true});
    CHECK(max_abs_diff(normalized, flow / sum(flow, {-1}, true)) < 1e-15);
    CHECK(worst_row_sum_error(normalized) < 1e-14);
    // Without the residual a row of weights that is all zero gives a zero row, left as it is.
    Tensor w = random_attention({1, 3, 3}, gen);
    for (std::int64_t k = 0; k < 3; ++k) w.data<double>()[3 + k] = 0.0;
    const Tensor r = attention_rollout({w}, {.residual = false, .normalize = true});
    for (std::int64_t k = 0; k < 3; ++k) CHECK(r.at({0, 1, k}) == 0.0);
    CHECK(std::abs(r.at({0, 0, 0}) + r.at({0, 0, 1}) + r.at({0, 0, 2}) - 1.0) < 1e-15);
}

TEST_CASE("rollout equals the product A~_L ... A~_1 built with public ops, bottom layer applied first") {
    Generator gen(7);
    std::vector<Tensor> layers;
    for (int l = 0; l < 3; ++l) layers.push_back(random_attention({2, 3, 5, 5}, gen));
    const Tensor expected = matmul(augmented(layers[2]), matmul(augmented(layers[1]), augmented(layers[0])));
    const Tensor rollout = attention_rollout(layers);
    CHECK(max_abs_diff(rollout, expected) < 1e-13);
    // The order matters: the reversed product is a different matrix.
    const Tensor reversed = matmul(augmented(layers[0]), matmul(augmented(layers[1]), augmented(layers[2])));
    CHECK(max_abs_diff(rollout, reversed) > 1e-3);
    CHECK(worst_row_sum_error(rollout) < 1e-13);
    SUBCASE("residual = false is the plain product of the head means") {
        const Tensor plain = matmul(mean(layers[2], {1}), matmul(mean(layers[1], {1}), mean(layers[0], {1})));
        CHECK(max_abs_diff(attention_rollout(layers, {.residual = false}), plain) < 1e-13);
    }
    SUBCASE("float32 layers give the float64 result of their values") {
        std::vector<Tensor> f32;
        for (const Tensor& w : layers) f32.push_back(to_dtype(w, DType::Float32));
        std::vector<Tensor> back;
        for (const Tensor& w : f32) back.push_back(to_dtype(w, DType::Float64));
        const Tensor r32 = attention_rollout(f32);
        CHECK(r32.dtype() == DType::Float64);
        CHECK(max_abs_diff(r32, attention_rollout(back)) < 1e-13);
    }
}

TEST_CASE("rollout rows sum to 1, also with a row that does not (all keys masked)") {
    Generator gen(3);
    std::vector<Tensor> layers{random_attention({1, 2, 4, 4}, gen), random_attention({1, 2, 4, 4}, gen)};
    // Row 2 of layer 0 is all zero in both heads (a query whose keys are all masked) and row 1
    // of layer 1 sums to 0.5: renormalised, A~ stays row-stochastic.
    for (std::int64_t h = 0; h < 2; ++h) {
        for (std::int64_t k = 0; k < 4; ++k) {
            layers[0].data<double>()[(h * 4 + 2) * 4 + k] = 0.0;
            layers[1].data<double>()[(h * 4 + 1) * 4 + k] *= 0.5;
        }
    }
    CHECK(worst_row_sum_error(attention_rollout(layers)) < 1e-14);
    // The zero row becomes 0.5 e_2, then e_2 after renormalising: position 2 keeps only itself.
    const Tensor one = attention_rollout({layers[0]});
    for (std::int64_t k = 0; k < 4; ++k) CHECK(one.at({0, 2, k}) == (k == 2 ? 1.0 : 0.0));
    // Without the residual nothing is renormalised: the zero row stays zero.
    const Tensor plain = attention_rollout({layers[0]}, {.residual = false});
    for (std::int64_t k = 0; k < 4; ++k) CHECK(plain.at({0, 2, k}) == 0.0);
}

TEST_CASE("FlowNetwork finds the maximum flow of the textbook network and is reusable") {
    // Cormen et al., Introduction to Algorithms, Figure 26.1: the maximum flow is 23.
    struct Edge {
        std::int64_t from, to;
        double capacity;
    };
    const std::vector<Edge> edges{{0, 1, 16}, {0, 2, 13}, {2, 1, 4},  {1, 3, 12}, {3, 2, 9},
                                  {2, 4, 14}, {4, 3, 7},  {3, 5, 20}, {4, 5, 4}};
    FlowNetwork net(6);  // s = 0, v1 .. v4 = 1 .. 4, t = 5
    for (const Edge& e : edges) net.add_edge(e.from, e.to, e.capacity);
    const std::int64_t s_v1 = 0;
    CHECK(net.edges() == 9);
    CHECK(net.max_flow(0, 5) == doctest::Approx(23.0).epsilon(1e-14));
    // The flow respects every capacity and is conserved at every inner node.
    std::vector<double> balance(6, 0.0);
    for (std::int64_t e = 0; e < net.edges(); ++e) {
        CHECK(net.flow(e) >= -1e-12);
        CHECK(net.flow(e) <= net.capacity(e) + 1e-12);
        balance[static_cast<std::size_t>(edges[static_cast<std::size_t>(e)].from)] -= net.flow(e);
        balance[static_cast<std::size_t>(edges[static_cast<std::size_t>(e)].to)] += net.flow(e);
    }
    for (std::size_t v = 1; v <= 4; ++v) CHECK(std::abs(balance[v]) < 1e-12);
    CHECK(balance[5] == doctest::Approx(23.0));
    // A new capacity and a new run start from the zero flow: s -> v1 at 0 leaves 13 + 0 routes.
    net.set_capacity(s_v1, 0.0);
    CHECK(net.max_flow(0, 5) == doctest::Approx(13.0));
    CHECK(net.flow(s_v1) == 0.0);
    CHECK(net.max_flow(0, 0) == 0.0);
    CHECK(net.max_flow(5, 0) == 0.0);  // no edge leaves t
    CHECK_THROWS_WITH_AS(net.add_edge(0, 6, 1.0),
                         doctest::Contains("FlowNetwork: edge end node 6 is outside [0, 6)"),
                         attograd::IndexError);
    CHECK_THROWS_WITH_AS(net.add_edge(0, 1, -1.0), doctest::Contains("capacity -1 must be finite and >= 0"),
                         attograd::ValueError);
    CHECK_THROWS_WITH_AS(net.set_capacity(9, 1.0), doctest::Contains("FlowNetwork: edge 9 is outside [0, 9)"),
                         attograd::IndexError);
    CHECK_THROWS_WITH_AS(net.max_flow(-1, 5), doctest::Contains("FlowNetwork: source node -1"),
                         attograd::IndexError);
    CHECK_THROWS_WITH_AS(FlowNetwork(-1), doctest::Contains("FlowNetwork: node count -1"),
                         attograd::ValueError);
}

TEST_CASE("flow of 3 and 4 layers equals a brute-force max-flow over the whole layered DAG") {
    for (const std::int64_t layers_count : {3, 4}) {
        for (const std::int64_t t : {3, 4, 5}) {
            for (const bool sparse : {false, true}) {
                for (const bool residual : {true, false}) {
                    Generator gen(static_cast<std::uint64_t>(100 * layers_count + 10 * t + (sparse ? 1 : 0)));
                    std::vector<Tensor> layers, mats;
                    for (std::int64_t l = 0; l < layers_count; ++l) {
                        layers.push_back(sparse ? sparse_attention({2, 2, t, t}, 0.5, gen)
                                                : random_attention({2, 2, t, t}, gen));
                        mats.push_back(augmented(layers.back(), residual));
                    }
                    INFO("layers ", layers_count, ", T ", t, ", sparse ", sparse, ", residual ", residual);
                    const Tensor flow = attention_flow(layers, {.residual = residual});
                    CHECK(flow.shape() == Shape{2, t, t});
                    CHECK(worst_flow_error(flow, mats, Reference::EdmondsKarp) < 1e-12);
                    if (t == 3) CHECK(worst_flow_error(flow, mats, Reference::MinCut) < 1e-12);
                }
            }
        }
    }
}

TEST_CASE("flow through more tokens than one thread's share matches the reference") {
    // T = 16 with 3 layers is enough work for attention_flow to split the sources over threads.
    Generator gen(11);
    std::vector<Tensor> layers, mats;
    for (int l = 0; l < 3; ++l) {
        layers.push_back(random_attention({1, 1, 16, 16}, gen));
        mats.push_back(augmented(layers.back()));
    }
    const Tensor flow = attention_flow(layers);
    const DenseDag dag = dense_dag(mats, 0);
    double worst = 0.0;
    for (std::int64_t j = 0; j < 16; j += 5) {
        for (std::int64_t i = 0; i < 16; ++i) {
            const double expected = edmonds_karp(dag.cap, static_cast<std::size_t>(i),
                                                 static_cast<std::size_t>(dag.offset.back() + j));
            worst = std::max(worst, std::abs(flow.at({0, j, i}) - expected));
        }
    }
    CHECK(worst < 1e-12);
}

TEST_CASE("1- and 2-layer flow equal their closed forms and the general max-flow") {
    Generator gen(5);
    for (const bool sparse : {false, true}) {
        const Tensor w1 =
            sparse ? sparse_attention({2, 3, 4, 4}, 0.5, gen) : random_attention({2, 3, 4, 4}, gen);
        const Tensor w2 =
            sparse ? sparse_attention({2, 3, 4, 4}, 0.5, gen) : random_attention({2, 3, 4, 4}, gen);
        const Tensor a1 = augmented(w1), a2 = augmented(w2);
        INFO("sparse ", sparse);
        // One layer: the capacity of the single edge (0, i) -> (1, j).
        const Tensor one = attention_flow({w1});
        CHECK(max_abs_diff(one, a1) < 1e-15);
        CHECK(worst_flow_error(one, {a1}, Reference::Network) < 1e-15);
        CHECK(worst_flow_error(one, {a1}, Reference::EdmondsKarp) < 1e-15);
        // Two layers: sum_k min(A~_1[k, i], A~_2[j, k]).
        const Tensor two = attention_flow({w1, w2});
        double worst = 0.0;
        for (std::int64_t b = 0; b < 2; ++b) {
            for (std::int64_t j = 0; j < 4; ++j) {
                for (std::int64_t i = 0; i < 4; ++i) {
                    double closed = 0.0;
                    for (std::int64_t k = 0; k < 4; ++k)
                        closed += std::min(a1.at({b, k, i}), a2.at({b, j, k}));
                    worst = std::max(worst, std::abs(two.at({b, j, i}) - closed));
                }
            }
        }
        CHECK(worst < 1e-15);
        CHECK(worst_flow_error(two, {a1, a2}, Reference::Network) < 1e-13);
        CHECK(worst_flow_error(two, {a1, a2}, Reference::MinCut) < 1e-13);
    }
}

TEST_CASE("heads selects the same heads in every layer") {
    Generator gen(9);
    std::vector<Tensor> layers{random_attention({2, 3, 4, 4}, gen), random_attention({2, 3, 4, 4}, gen),
                               random_attention({2, 3, 4, 4}, gen)};
    SUBCASE("one head is that head's slice") {
        std::vector<Tensor> head1;
        for (const Tensor& w : layers) head1.push_back(reshape(narrow(w, 1, 1, 1), {2, 4, 4}));
        CHECK(max_abs_diff(attention_rollout(layers, {.heads = {1}}), attention_rollout(head1)) < 1e-14);
        CHECK(max_abs_diff(attention_flow(layers, {.heads = {1}}), attention_flow(head1)) < 1e-13);
        CHECK(max_abs_diff(attention_rollout(layers, {.heads = {1}}), attention_rollout(layers)) > 1e-3);
    }
    SUBCASE("several heads are their mean") {
        const Tensor expected =
            matmul(augmented(layers[2], true, {0, 2}),
                   matmul(augmented(layers[1], true, {0, 2}), augmented(layers[0], true, {0, 2})));
        CHECK(max_abs_diff(attention_rollout(layers, {.heads = {2, 0}}), expected) < 1e-13);
        std::vector<Tensor> mats;
        for (const Tensor& w : layers) mats.push_back(augmented(w, true, {0, 2}));
        CHECK(worst_flow_error(attention_flow(layers, {.heads = {0, 2}}), mats, Reference::EdmondsKarp) <
              1e-12);
    }
    SUBCASE("every head listed is the default") {
        CHECK(max_abs_diff(attention_rollout(layers, {.heads = {0, 1, 2}}), attention_rollout(layers)) <
              1e-15);
    }
}

TEST_CASE("a cross-attention layer on top: decoder queries over the stack's tokens, no residual") {
    Generator gen(13);
    const Tensor s1 = random_attention({2, 2, 4, 4}, gen), s2 = random_attention({2, 2, 4, 4}, gen);
    const Tensor cross = random_attention({2, 2, 3, 4}, gen);  // Tq = 3 decoder positions over T = 4
    const Tensor c = mean(cross, {1});
    SUBCASE("rollout is C R_stack") {
        const Tensor r = attention_rollout({s1, s2}, cross);
        CHECK(r.shape() == Shape{2, 3, 4});
        CHECK(max_abs_diff(r, matmul(c, matmul(augmented(s2), augmented(s1)))) < 1e-13);
        CHECK(worst_row_sum_error(r) < 1e-13);
        // Undefined cross: the stack alone.
        CHECK(max_abs_diff(attention_rollout({s1, s2}, Tensor{}), attention_rollout({s1, s2})) == 0.0);
    }
    SUBCASE("no self-attention layers: the head-averaged cross attention, for rollout and flow") {
        CHECK(max_abs_diff(attention_rollout({}, cross), c) < 1e-15);
        CHECK(max_abs_diff(attention_flow({}, cross), c) < 1e-15);
        CHECK(max_abs_diff(attention_rollout({}, cross, {.heads = {1}}),
                           reshape(narrow(cross, 1, 1, 1), {2, 3, 4})) < 1e-15);
    }
    SUBCASE("flow with one self layer is the 2-layer closed form, with two a max-flow") {
        const Tensor two = attention_flow({s1}, cross);
        CHECK(two.shape() == Shape{2, 3, 4});
        CHECK(worst_flow_error(two, {augmented(s1), c}, Reference::MinCut) < 1e-13);
        const Tensor three = attention_flow({s1, s2}, cross);
        CHECK(worst_flow_error(three, {augmented(s1), augmented(s2), c}, Reference::EdmondsKarp) < 1e-12);
    }
    SUBCASE("a single-head [B, Tq, T] cross layer over a multi-head stack") {
        const Tensor c3 = random_attention({2, 3, 4}, gen);
        CHECK(max_abs_diff(attention_rollout({s1}, c3), matmul(c3, augmented(s1))) < 1e-13);
    }
}

TEST_CASE("rollout_map and flow_map hold one batch element with labels") {
    Generator gen(17);
    const Tensor s1 = random_attention({2, 2, 3, 3}, gen), s2 = random_attention({2, 2, 3, 3}, gen),
                 s3 = random_attention({2, 2, 3, 3}, gen);
    const Tensor cross = random_attention({2, 2, 2, 3}, gen);
    const TokenLabels labels{.queries = {"a", "b", "c"}, .keys = {"x", "y", "z"}};
    const AttentionMap r = rollout_map({s1, s2, s3}, labels, 1);
    CHECK(r.module == "attention rollout");
    CHECK(r.head == -1);
    CHECK(r.layer == 2);
    CHECK(r.title() == "attention rollout");
    CHECK(r.queries == labels.queries);
    CHECK(r.keys == labels.keys);
    const Tensor full_rollout = attention_rollout({s1, s2, s3});
    for (std::int64_t j = 0; j < 3; ++j) {
        for (std::int64_t i = 0; i < 3; ++i)
            CHECK(r.at(j, i) == doctest::Approx(full_rollout.at({1, j, i})).epsilon(1e-14));
    }
    const AttentionMap f = flow_map({s1, s2, s3}, labels, 0, {.heads = {1}});
    CHECK(f.module == "attention flow");
    CHECK(f.head == -1);
    const Tensor full_flow = attention_flow({s1, s2, s3}, {.heads = {1}});
    for (std::int64_t j = 0; j < 3; ++j) {
        for (std::int64_t i = 0; i < 3; ++i)
            CHECK(f.at(j, i) == doctest::Approx(full_flow.at({0, j, i})).epsilon(1e-14));
    }
    check_map(f);
    const TokenLabels cross_labels{.queries = {"p", "q"}, .keys = {"x", "y", "z"}};
    const AttentionMap fc = flow_map({s1}, cross, cross_labels, 1);
    CHECK(fc.layer == 1);
    CHECK(fc.rows() == 2);
    const Tensor full_cross_flow = attention_flow({s1}, cross);
    CHECK(fc.at(1, 2) == doctest::Approx(full_cross_flow.at({1, 1, 2})).epsilon(1e-14));
    CHECK(rollout_map({}, cross, cross_labels, 0).layer == 0);
    CHECK_THROWS_WITH_AS(rollout_map({s1}, labels, 2),
                         doctest::Contains("rollout_map: batch index 2 is outside [0, 2)"),
                         attograd::IndexError);
    CHECK_THROWS_WITH_AS(flow_map({s1}, cross, labels, 0),
                         doctest::Contains("flow_map: 3 query and 3 key labels for a [2, 3] map"),
                         attograd::ShapeError);
}

TEST_CASE("no tokens or no batch elements give empty results") {
    const Tensor no_tokens = zeros({2, 2, 0, 0}, {.dtype = DType::Float64});
    CHECK(attention_rollout({no_tokens, no_tokens}).shape() == Shape{2, 0, 0});
    CHECK(attention_flow({no_tokens, no_tokens, no_tokens}).shape() == Shape{2, 0, 0});
    const Tensor no_batch = zeros({0, 3, 3}, {.dtype = DType::Float64});
    CHECK(attention_flow({no_batch, no_batch, no_batch}).shape() == Shape{0, 3, 3});
    CHECK_THROWS_WITH_AS(
        flow_map({no_batch}, TokenLabels{.queries = {"a", "b", "c"}, .keys = {"a", "b", "c"}}, 0),
        doctest::Contains("flow_map: batch index 0 is outside [0, 0)"), attograd::IndexError);
}

TEST_CASE("bad input is refused with the layer and its shape named") {
    Generator gen(19);
    const Tensor good = random_attention({1, 2, 3, 3}, gen);
    SUBCASE("no layers") {
        CHECK_THROWS_WITH_AS(attention_rollout({}), doctest::Contains("attention_rollout: no layers"),
                             attograd::ValueError);
        CHECK_THROWS_WITH_AS(attention_flow({}, Tensor{}), doctest::Contains("attention_flow: no layers"),
                             attograd::ValueError);
    }
    SUBCASE("rank other than 3 or 4") {
        CHECK_THROWS_WITH_AS(attention_rollout({good, zeros({3, 3}, {.dtype = DType::Float64})}),
                             doctest::Contains("attention_rollout: layer 1 has shape [3, 3] (rank 2)"),
                             attograd::ShapeError);
        CHECK_THROWS_WITH_AS(attention_flow({zeros({1, 1, 1, 3, 3}, {.dtype = DType::Float64})}),
                             doctest::Contains("attention_flow: layer 0 has shape [1, 1, 1, 3, 3] (rank 5)"),
                             attograd::ShapeError);
        CHECK_THROWS_WITH_AS(attention_rollout({good}, zeros({3}, {.dtype = DType::Float64})),
                             doctest::Contains("the cross-attention layer has shape [3] (rank 1)"),
                             attograd::ShapeError);
    }
    SUBCASE("non-square self-attention") {
        CHECK_THROWS_WITH_AS(
            attention_rollout({random_attention({1, 2, 3, 4}, gen)}),
            doctest::Contains("layer 0 has shape [1, 2, 3, 4]: self-attention weights must be square"),
            attograd::ShapeError);
    }
    SUBCASE("layers that disagree on B, h or T") {
        CHECK_THROWS_WITH_AS(attention_rollout({good, random_attention({2, 2, 3, 3}, gen)}),
                             doctest::Contains("layer 1 has shape [2, 2, 3, 3] but layer 0 has [1, 2, 3, 3]"),
                             attograd::ShapeError);
        CHECK_THROWS_WITH_AS(attention_flow({good, good, random_attention({1, 3, 3, 3}, gen)}),
                             doctest::Contains("layer 2 has shape [1, 3, 3, 3] but layer 0 has [1, 2, 3, 3]"),
                             attograd::ShapeError);
        CHECK_THROWS_WITH_AS(attention_rollout({good, random_attention({1, 2, 4, 4}, gen)}),
                             doctest::Contains("layer 1 has shape [1, 2, 4, 4] but layer 0 has [1, 2, 3, 3]"),
                             attograd::ShapeError);
        CHECK_THROWS_WITH_AS(
            attention_rollout({good}, random_attention({1, 2, 2, 4}, gen)),
            doctest::Contains(
                "the cross-attention layer has shape [1, 2, 2, 4] but layer 0 has [1, 2, 3, 3]"),
            attograd::ShapeError);
        CHECK_THROWS_WITH_AS(
            attention_rollout({good}, random_attention({2, 2, 3}, gen)),
            doctest::Contains("the cross-attention layer has shape [2, 2, 3] but layer 0 has [1, 2, 3, 3]"),
            attograd::ShapeError);
    }
    SUBCASE("no heads") {
        CHECK_THROWS_WITH_AS(attention_rollout({zeros({1, 0, 3, 3}, {.dtype = DType::Float64})}),
                             doctest::Contains("layer 0 has shape [1, 0, 3, 3]: no heads"),
                             attograd::ShapeError);
    }
    SUBCASE("head out of range or listed twice") {
        CHECK_THROWS_WITH_AS(
            attention_rollout({good, good}, {.heads = {2}}),
            doctest::Contains("attention_rollout: head 2 is out of range for layer 0, which has 2 heads"),
            attograd::IndexError);
        CHECK_THROWS_WITH_AS(attention_flow({good}, {.heads = {-1}}),
                             doctest::Contains("head -1 is out of range for layer 0, which has 2 heads"),
                             attograd::IndexError);
        CHECK_THROWS_WITH_AS(
            attention_rollout({good}, random_attention({1, 2, 3}, gen), {.heads = {1}}),
            doctest::Contains("head 1 is out of range for the cross-attention layer, which has 1 head "),
            attograd::IndexError);
        CHECK_THROWS_WITH_AS(attention_rollout({good}, {.heads = {1, 0, 1}}),
                             doctest::Contains("attention_rollout: head 1 is selected twice"),
                             attograd::ValueError);
    }
    SUBCASE("non-finite weights") {
        Tensor bad = clone(good);
        bad.data<double>()[5] = std::nan("");  // [0, 0, 1, 2]
        CHECK_THROWS_WITH_AS(
            attention_rollout({good, bad}),
            doctest::Contains("attention_rollout: layer 1 has a non-finite weight nan at [0, 0, 1, 2]"),
            attograd::ValueError);
        bad.data<double>()[5] = std::numeric_limits<double>::infinity();
        CHECK_THROWS_WITH_AS(
            attention_flow({}, bad),
            doctest::Contains("attention_flow: the cross-attention layer has a non-finite weight inf"),
            attograd::ValueError);
    }
    SUBCASE("negative weights") {
        Tensor bad = clone(good);
        bad.data<double>()[10] = -0.25;  // [0, 1, 0, 1]
        CHECK_THROWS_WITH_AS(
            attention_flow({bad}),
            doctest::Contains("attention_flow: layer 0 has a negative weight -0.25 at [0, 1, 0, 1]"),
            attograd::ValueError);
        CHECK_THROWS_WITH_AS(attention_rollout({good, bad}), doctest::Contains("must be >= 0"),
                             attograd::ValueError);
    }
    SUBCASE("undefined and integer layers") {
        CHECK_THROWS_WITH_AS(attention_rollout({good, Tensor{}}),
                             doctest::Contains("attention_rollout: layer 1 is an undefined tensor"),
                             attograd::ValueError);
        CHECK_THROWS_WITH_AS(attention_rollout({index_tensor({1, 0, 0, 1}, {1, 2, 2})}),
                             doctest::Contains("attention_rollout: layer 0 has dtype int64"),
                             attograd::DTypeError);
    }
}
