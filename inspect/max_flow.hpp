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
/// tolerance per edge. The DFS recurses once per BFS level (at most V deep). Not thread-safe:
/// one network per thread (copies are independent).
class FlowNetwork {
public:
    /// A network of `nodes` nodes numbered 0..nodes-1 and no edges. Throws ValueError when
    /// `nodes` is outside [0, 2^31 - 1).
    explicit FlowNetwork(std::int64_t nodes);

    std::int64_t nodes() const { return nodes_; }  ///< number of nodes
    /// Number of edges added.
    std::int64_t edges() const { return static_cast<std::int64_t>(edges_.size()); }

    /// Adds the edge `from` -> `to` and returns its id (0, 1, ... in order of addition).
    /// Throws IndexError when a node is outside [0, nodes), ValueError when `capacity` is
    /// negative or not finite or the network has 2^30 edges.
    std::int64_t add_edge(std::int64_t from, std::int64_t to, double capacity);
    /// Changes edge `edge`'s capacity (for the next max_flow). Throws IndexError / ValueError
    /// as add_edge.
    void set_capacity(std::int64_t edge, double capacity);
    /// Edge `edge`'s capacity. Throws IndexError as add_edge.
    double capacity(std::int64_t edge) const;

    /// The value of a maximum flow from `source` to `sink` (0 when source == sink). Throws
    /// IndexError when a node is outside [0, nodes).
    double max_flow(std::int64_t source, std::int64_t sink);
    /// The flow on edge `edge` in the last max_flow's maximum flow (0 when no max_flow ran
    /// since the last add_edge). Throws IndexError.
    double flow(std::int64_t edge) const;

private:
    // The residual network in compressed rows, built on the first max_flow after an add_edge:
    // the arcs leaving node v are arcs_[first_[v] .. first_[v + 1]), an edge's forward arc
    // (residual = capacity - flow) next to those of its tail, its reverse arc (residual = flow)
    // next to those of its head, so a node's scan reads one contiguous block.
    struct Arc {
        std::int32_t to;
        std::int32_t reverse;  // index of the partner arc
        double residual;
    };
    struct Edge {
        std::int32_t from, to;
        double capacity;
    };
    void build_arcs();
    bool build_levels(std::int32_t source, std::int32_t sink, double eps);
    double push(std::int32_t node, std::int32_t sink, double limit, double eps);
    void check_node(std::int64_t node, const char* what) const;
    void check_edge(std::int64_t edge) const;
    static void check_capacity(std::int64_t edge, double capacity);

    std::int64_t nodes_ = 0;
    std::vector<Edge> edges_;
    bool arcs_built_ = false;
    std::vector<std::int32_t> first_;     // [nodes + 1]
    std::vector<Arc> arcs_;               // [2 edges]
    std::vector<std::int32_t> edge_arc_;  // each edge's forward arc
    std::vector<std::int32_t> level_;     // BFS distance from the source, -1 when unreached
    std::vector<std::int32_t> next_;      // current arc of each node in the blocking-flow DFS
    std::vector<std::int32_t> queue_;     // the BFS queue, kept to reuse its memory
    std::int32_t sink_level_ = 0;
};

}  // namespace attograd::inspect
