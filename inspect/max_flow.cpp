// A directed flow network with real capacities and Dinic's maximum flow (used by attention flow).
#include "inspect/max_flow.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace attograd::inspect {

FlowNetwork::FlowNetwork(std::int64_t nodes) {
    AG_CHECK(nodes >= 0 && nodes <= std::numeric_limits<std::int32_t>::max(), ValueError,
             "FlowNetwork: node count {} is outside [0, 2^31)", nodes);
    out_.resize(static_cast<std::size_t>(nodes));
    level_.resize(out_.size());
    next_.resize(out_.size());
}

void FlowNetwork::check_node(std::int64_t node, const char* what) const {
    AG_CHECK(node >= 0 && node < nodes(), IndexError, "FlowNetwork: {} node {} is outside [0, {})", what,
             node, nodes());
}

void FlowNetwork::check_edge(std::int64_t edge) const {
    AG_CHECK(edge >= 0 && edge < edges(), IndexError, "FlowNetwork: edge {} is outside [0, {})", edge,
             edges());
}

std::int64_t FlowNetwork::add_edge(std::int64_t from, std::int64_t to, double capacity) {
    check_node(from, "edge start");
    check_node(to, "edge end");
    check_capacity(edges(), capacity);  // before anything changes
    capacity_.push_back(0.0);
    arcs_.push_back({static_cast<std::int32_t>(to), 0.0});
    arcs_.push_back({static_cast<std::int32_t>(from), 0.0});
    out_[static_cast<std::size_t>(from)].push_back(static_cast<std::int32_t>(arcs_.size() - 2));
    out_[static_cast<std::size_t>(to)].push_back(static_cast<std::int32_t>(arcs_.size() - 1));
    const std::int64_t edge = edges() - 1;
    set_capacity(edge, capacity);
    return edge;
}

void FlowNetwork::check_capacity(std::int64_t edge, double capacity) {
    AG_CHECK(std::isfinite(capacity) && capacity >= 0.0, ValueError,
             "FlowNetwork: edge {} capacity {} must be finite and >= 0", edge, capacity);
}

void FlowNetwork::set_capacity(std::int64_t edge, double capacity) {
    check_edge(edge);
    check_capacity(edge, capacity);
    capacity_[static_cast<std::size_t>(edge)] = capacity;
}

double FlowNetwork::capacity(std::int64_t edge) const {
    check_edge(edge);
    return capacity_[static_cast<std::size_t>(edge)];
}

double FlowNetwork::flow(std::int64_t edge) const {
    check_edge(edge);
    return arcs_[static_cast<std::size_t>(2 * edge + 1)].residual;
}

// Levels = BFS distances from the source over arcs with residual capacity; true when the sink
// is reached (an augmenting path exists).
bool FlowNetwork::build_levels(std::int32_t source, std::int32_t sink, double eps) {
    std::fill(level_.begin(), level_.end(), -1);
    std::deque<std::int32_t> queue{source};
    level_[static_cast<std::size_t>(source)] = 0;
    while (!queue.empty()) {
        const std::int32_t node = queue.front();
        queue.pop_front();
        for (const std::int32_t a : out_[static_cast<std::size_t>(node)]) {
            const Arc& arc = arcs_[static_cast<std::size_t>(a)];
            if (arc.residual > eps && level_[static_cast<std::size_t>(arc.to)] < 0) {
                level_[static_cast<std::size_t>(arc.to)] = level_[static_cast<std::size_t>(node)] + 1;
                queue.push_back(arc.to);
            }
        }
    }
    return level_[static_cast<std::size_t>(sink)] >= 0;
}

// Pushes up to `limit` from `node` to the sink along arcs that go one level up, and returns the
// amount pushed. An arc that cannot take more is skipped for the rest of the phase (next_).
double FlowNetwork::push(std::int32_t node, std::int32_t sink, double limit, double eps) {
    if (node == sink) return limit;
    const auto n = static_cast<std::size_t>(node);
    double pushed = 0.0;
    for (std::size_t& i = next_[n]; i < out_[n].size(); ++i) {
        const auto a = static_cast<std::size_t>(out_[n][i]);
        Arc& arc = arcs_[a];
        if (arc.residual <= eps || level_[static_cast<std::size_t>(arc.to)] != level_[n] + 1) continue;
        const double d = push(arc.to, sink, std::min(limit - pushed, arc.residual), eps);
        if (d > 0.0) {
            arc.residual -= d;
            arcs_[a ^ 1U].residual += d;
            pushed += d;
            if (limit - pushed <= eps) break;  // keep this arc current: it may take more later
        }
    }
    return pushed;
}

double FlowNetwork::max_flow(std::int64_t source, std::int64_t sink) {
    check_node(source, "source");
    check_node(sink, "sink");
    for (std::size_t e = 0; e < capacity_.size(); ++e) {
        arcs_[2 * e].residual = capacity_[e];
        arcs_[2 * e + 1].residual = 0.0;
    }
    if (source == sink) return 0.0;
    const double largest = capacity_.empty() ? 0.0 : *std::max_element(capacity_.begin(), capacity_.end());
    const double eps = 1e-12 * largest;
    const auto s = static_cast<std::int32_t>(source), t = static_cast<std::int32_t>(sink);
    double total = 0.0;
    while (build_levels(s, t, eps)) {
        std::fill(next_.begin(), next_.end(), std::size_t{0});
        const double phase = push(s, t, std::numeric_limits<double>::infinity(), eps);
        if (phase <= 0.0) break;  // only tolerance-sized residuals left on the paths
        total += phase;
    }
    return total;
}

}  // namespace attograd::inspect
