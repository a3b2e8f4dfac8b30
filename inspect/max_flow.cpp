// A directed flow network with real capacities and Dinic's maximum flow (used by attention flow).
#include "inspect/max_flow.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attograd::inspect {

FlowNetwork::FlowNetwork(std::int64_t nodes) : nodes_(nodes) {
    AG_CHECK(nodes >= 0 && nodes < std::numeric_limits<std::int32_t>::max(), ValueError,
             "FlowNetwork: node count {} is outside [0, 2^31 - 1)", nodes);
}

void FlowNetwork::check_node(std::int64_t node, const char* what) const {
    AG_CHECK(node >= 0 && node < nodes(), IndexError, "FlowNetwork: {} node {} is outside [0, {})", what,
             node, nodes());
}

void FlowNetwork::check_edge(std::int64_t edge) const {
    AG_CHECK(edge >= 0 && edge < edges(), IndexError, "FlowNetwork: edge {} is outside [0, {})", edge,
             edges());
}

void FlowNetwork::check_capacity(std::int64_t edge, double capacity) {
    AG_CHECK(std::isfinite(capacity) && capacity >= 0.0, ValueError,
             "FlowNetwork: edge {} capacity {} must be finite and >= 0", edge, capacity);
}

std::int64_t FlowNetwork::add_edge(std::int64_t from, std::int64_t to, double capacity) {
    check_node(from, "edge start");
    check_node(to, "edge end");
    check_capacity(edges(), capacity);
    AG_CHECK(edges() < std::numeric_limits<std::int32_t>::max() / 2, ValueError,
             "FlowNetwork: more than 2^30 edges");
    edges_.push_back({static_cast<std::int32_t>(from), static_cast<std::int32_t>(to), capacity});
    arcs_built_ = false;
    return edges() - 1;
}

void FlowNetwork::set_capacity(std::int64_t edge, double capacity) {
    check_edge(edge);
    check_capacity(edge, capacity);
    edges_[static_cast<std::size_t>(edge)].capacity = capacity;
}

double FlowNetwork::capacity(std::int64_t edge) const {
    check_edge(edge);
    return edges_[static_cast<std::size_t>(edge)].capacity;
}

double FlowNetwork::flow(std::int64_t edge) const {
    check_edge(edge);
    if (!arcs_built_) return 0.0;  // no max_flow since the edge was added
    const Arc& forward = arcs_[static_cast<std::size_t>(edge_arc_[static_cast<std::size_t>(edge)])];
    return arcs_[static_cast<std::size_t>(forward.reverse)].residual;
}

void FlowNetwork::build_arcs() {
    const auto n = static_cast<std::size_t>(nodes_);
    first_.assign(n + 1, 0);
    for (const Edge& e : edges_) {
        ++first_[static_cast<std::size_t>(e.from) + 1];
        ++first_[static_cast<std::size_t>(e.to) + 1];
    }
    for (std::size_t v = 0; v < n; ++v) first_[v + 1] += first_[v];
    std::vector<std::int32_t> fill(first_.begin(), first_.end() - 1);
    arcs_.resize(2 * edges_.size());
    edge_arc_.resize(edges_.size());
    for (std::size_t i = 0; i < edges_.size(); ++i) {
        const Edge& e = edges_[i];
        const std::int32_t forward = fill[static_cast<std::size_t>(e.from)]++;
        const std::int32_t reverse = fill[static_cast<std::size_t>(e.to)]++;
        arcs_[static_cast<std::size_t>(forward)] = {e.to, reverse, 0.0};
        arcs_[static_cast<std::size_t>(reverse)] = {e.from, forward, 0.0};
        edge_arc_[i] = forward;
    }
    level_.resize(n);
    next_.resize(n);
    arcs_built_ = true;
}

// Levels = BFS distances from the source over arcs with residual capacity; true when the sink
// is reached (an augmenting path exists). The search stops once the sink has its level: a
// shortest path visits only nodes nearer than the sink, and those all have theirs by then.
bool FlowNetwork::build_levels(std::int32_t source, std::int32_t sink, double eps) {
    std::fill(level_.begin(), level_.end(), -1);
    queue_.clear();
    queue_.push_back(source);
    level_[static_cast<std::size_t>(source)] = 0;
    for (std::size_t head = 0; head < queue_.size(); ++head) {
        const auto node = static_cast<std::size_t>(queue_[head]);
        for (std::int32_t a = first_[node]; a < first_[node + 1]; ++a) {
            const Arc& arc = arcs_[static_cast<std::size_t>(a)];
            if (arc.residual > eps && level_[static_cast<std::size_t>(arc.to)] < 0) {
                level_[static_cast<std::size_t>(arc.to)] = level_[node] + 1;
                if (arc.to == sink) return true;
                queue_.push_back(arc.to);
            }
        }
    }
    return false;
}

// Pushes up to `limit` from `node` to the sink along arcs that go one level up, and returns the
// amount pushed. An arc that cannot take more is skipped for the rest of the phase (next_).
double FlowNetwork::push(std::int32_t node, std::int32_t sink, double limit, double eps) {
    if (node == sink) return limit;
    const auto n = static_cast<std::size_t>(node);
    double pushed = 0.0;
    for (std::int32_t& a = next_[n]; a < first_[n + 1]; ++a) {
        Arc& arc = arcs_[static_cast<std::size_t>(a)];
        const std::int32_t up = level_[static_cast<std::size_t>(arc.to)];
        // Only arcs one level up; a node as far as the sink but not the sink is a dead end.
        if (arc.residual <= eps || up != level_[n] + 1 || (up >= sink_level_ && arc.to != sink)) continue;
        const double d = push(arc.to, sink, std::min(limit - pushed, arc.residual), eps);
        if (d > 0.0) {
            arc.residual -= d;
            arcs_[static_cast<std::size_t>(arc.reverse)].residual += d;
            pushed += d;
            if (limit - pushed <= eps) break;  // keep this arc current: it may take more later
        }
    }
    return pushed;
}

double FlowNetwork::max_flow(std::int64_t source, std::int64_t sink) {
    check_node(source, "source");
    check_node(sink, "sink");
    if (!arcs_built_) build_arcs();
    double largest = 0.0;
    for (std::size_t e = 0; e < edges_.size(); ++e) {
        Arc& forward = arcs_[static_cast<std::size_t>(edge_arc_[e])];
        forward.residual = edges_[e].capacity;
        arcs_[static_cast<std::size_t>(forward.reverse)].residual = 0.0;
        largest = std::max(largest, edges_[e].capacity);
    }
    if (source == sink) return 0.0;
    const double eps = 1e-12 * largest;
    const auto s = static_cast<std::int32_t>(source), t = static_cast<std::int32_t>(sink);
    double total = 0.0;
    while (build_levels(s, t, eps)) {
        std::copy(first_.begin(), first_.end() - 1, next_.begin());
        sink_level_ = level_[static_cast<std::size_t>(t)];
        const double phase = push(s, t, std::numeric_limits<double>::infinity(), eps);
        if (phase <= 0.0) break;  // only tolerance-sized residuals left on the paths
        total += phase;
    }
    return total;
}

}  // namespace attograd::inspect
