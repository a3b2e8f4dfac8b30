// A directed flow network with real capacities and Dinic's maximum flow (used by attention flow).
#pragma once

#include <cstdint>
#include <vector>

namespace attograd::inspect {

/// A directed graph with a capacity >= 0 on each edge and Dinic's max-flow algorithm
/// (Dinic 1970; Cormen et al., "Introduction to Algorithms", 3rd ed., §26.2 for max-flow /
/// min-cut): shortest augmenting paths by BFS levels, then a blocking flow by DFS with a
/// current-arc pointer per node. O(V^2 E) per max_flow in the worst case.
///
/// Built once, then queried many times: capacities can change between calls (set_capacity)
/// and every max_flow starts again from the zero flow, so one network serves many
/// source / sink pairs. Capacities are doubles; a residual capacity at or below
/// 1e-12 x the largest capacity counts as saturated, so the value is exact up to that
/// tolerance per edge. The DFS recurses once per BFS level (at most V deep).
class FlowNetwork {
public:
    /// A network of `nodes` nodes numbered 0..nodes-1 and no edges. Throws ValueError when
    /// `nodes` < 0.
    explicit FlowNetwork(std::int64_t nodes);

    std::int64_t nodes() const { return static_cast<std::int64_t>(out_.size()); }
    std::int64_t edges() const { return static_cast<std::int64_t>(capacity_.size()); }

    /// Adds the edge `from` -> `to` and returns its id (0, 1, ... in order of addition).
    /// Throws IndexError when a node is outside [0, nodes), ValueError when `capacity` is
    /// negative or not finite.
    std::int64_t add_edge(std::int64_t from, std::int64_t to, double capacity);
    /// Changes edge `edge`'s capacity (for the next max_flow). Throws IndexError / ValueError
    /// as add_edge.
    void set_capacity(std::int64_t edge, double capacity);
    double capacity(std::int64_t edge) const;

    /// The value of a maximum flow from `source` to `sink` (0 when source == sink). Throws
    /// IndexError when a node is outside [0, nodes).
    double max_flow(std::int64_t source, std::int64_t sink);
    /// The flow on edge `edge` in the last max_flow's maximum flow. Throws IndexError.
    double flow(std::int64_t edge) const;

private:
    // Edge e is arc 2e (residual = capacity - flow) and its reverse arc 2e + 1 (residual = flow).
    struct Arc {
        std::int32_t to;
        double residual;
    };
    bool build_levels(std::int32_t source, std::int32_t sink, double eps);
    double push(std::int32_t node, std::int32_t sink, double limit, double eps);
    void check_node(std::int64_t node, const char* what) const;
    void check_edge(std::int64_t edge) const;
    static void check_capacity(std::int64_t edge, double capacity);

    std::vector<std::vector<std::int32_t>> out_;  // arc ids leaving each node
    std::vector<Arc> arcs_;
    std::vector<double> capacity_;     // per edge
    std::vector<std::int32_t> level_;  // BFS distance from the source, -1 when unreached
    std::vector<std::size_t> next_;    // current arc of each node in the blocking-flow DFS
};

}  // namespace attograd::inspect
