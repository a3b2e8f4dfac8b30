// Attention rollout and attention flow over a stack of attention layers (Abnar & Zuidema 2020).
#pragma once

#include "core/tensor.hpp"
#include "inspect/attention_map.hpp"
#include "inspect/recorded_maps.hpp"

#include <cstdint>
#include <vector>

namespace attograd::inspect {

/// How the layers' weights become one matrix per layer.
struct RolloutOptions {
    /// Heads averaged in every layer (the same indices in each); empty = all heads. A [B, T, T]
    /// layer counts as one head (index 0).
    std::vector<std::int64_t> heads{};
    /// Account for the residual connection as the paper does (§3): A~ = 0.5 A + 0.5 I, each
    /// row then divided by its sum (so a row that does not sum to 1, e.g. all keys masked,
    /// still gives a row-stochastic A~). Off: the head-averaged weights as they are. Never
    /// applied to the cross-attention layer, whose queries are other tokens than its keys.
    bool residual = true;
    /// Divide each row of the result by its sum (a row summing to 0 stays 0), as the paper's
    /// published code does with the flow values before drawing them. Changes rollout only
    /// where its rows do not sum to 1 (no residual, rows of weights that do not).
    bool normalize = false;
};

/// Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", eq. 1):
/// with A~_l layer l's head-averaged (residual-augmented) weights, rollout at layer l is
/// A~_l x rollout at layer l-1, so the result is R = A~_L ... A~_2 A~_1 (bottom layer applied
/// first). R[b, j, i] is how much of input token i reaches output position j of the top layer
/// when attention is taken to mix information linearly; rows sum to 1 when every A~_l is
/// row-stochastic (always with `residual`).
///
/// `layers`: a stack's self-attention weights, bottom layer first, each [B, h, T, T] or
/// [B, T, T] (as nn::AttentionRecorder records them; all the same shape), float32 or float64.
/// `cross` (optional): a cross-attention layer on top, [B, h', Tq, T] or [B, Tq, T] (decoder
/// queries over the stack's T tokens; its own head count h'), multiplied in without residual:
/// R = C R_stack. With no self-attention layers the rollout is the head-averaged cross
/// attention. Returns float64 [B, T, T], or [B, Tq, T] with `cross`.
///
/// Cost: O(B L (h + T) T^2) time (head averages and L - 1 dense [T, T] products), O(B T^2)
/// memory beyond the input.
///
/// Throws ValueError when there is no layer at all, a layer is undefined, has a non-finite or
/// a negative weight, or a head is listed twice; DTypeError for a non-float layer; ShapeError
/// when a layer is not rank 3 or 4 (naming its index and shape), a self-attention layer is not
/// square, two layers' B / h / T differ or the cross layer's B or key count differs from the
/// stack's (naming both shapes), or a layer has no heads; IndexError when a head index is
/// outside a layer's [0, h) (naming the layer and its head count).
Tensor attention_rollout(const std::vector<Tensor>& layers, const RolloutOptions& options = {});
/// The same with a cross-attention layer `cross` [B, (h',) Tq, T] on top -> [B, Tq, T]; an
/// undefined `cross` means none (the overload above).
Tensor attention_rollout(const std::vector<Tensor>& layers, const Tensor& cross,
                         const RolloutOptions& options = {});

/// Attention flow (Abnar & Zuidema 2020, §3): the layers form a layered DAG with nodes
/// (l, t), l = 0 (input tokens) .. L (top); the edge (l-1, i) -> (l, j) has capacity
/// A~_l[j, i] (the same matrices as attention_rollout). flow[b, j, i] is the value of a maximum
/// flow from input node (0, i) to top node (L, j): how much of token i can reach position j
/// when every edge is a pipe of that capacity (where rollout sums every path's product). Each
/// value is in [0, 1] for row-stochastic layers, and the values of one row need not sum to 1:
/// each is a separate max-flow. `normalize` divides each row by its sum, as the paper's code
/// does for display. `cross` adds a top layer as for attention_rollout (edges
/// (L, k) -> (L + 1, q) of capacity C[q, k]). Returns float64 [B, T, T] (or [B, Tq, T]);
/// throws as attention_rollout.
///
/// Only the source's out-edges and the sink's in-edges of the outer layers can carry flow (the
/// other input nodes have no way in, the other top nodes no way out), so with n layers in all
/// (cross included):
/// - n = 1: the flow is the edge's capacity itself, O(T^2) per batch element;
/// - n = 2: every path is i -> k -> j for one middle node k, and no two share an edge, so
///   flow = sum_k min(A~_1[k, i], A~_2[j, k]) in closed form, O(T^3) per batch element;
/// - n >= 3: one Dinic max-flow (FlowNetwork) per (j, i) pair, on a network built once per
///   batch element: only the T source and T sink edges get new capacities per pair; the
///   (n - 2) T^2 middle edges stay, zero ones left out. A middle node now passes flow from
///   several predecessors to several successors, so its edges are shared bottlenecks: paths
///   are no longer edge-disjoint, and merging two layers into parallel two-edge paths (the
///   n = 2 formula applied twice) gives only an upper bound. And each pair gets its own
///   max-flow: unlike an undirected network, a directed one has no Gomory-Hu tree (which
///   gives all pairs' values from V - 1 max-flows).
///   Cost: T^2 max-flows on V = (n - 1) T + 2 nodes and E <= (n - 2) T^2 + 2T edges, each
///   O(V^2 E) in the worst case, so O(B n^3 T^6) in all; in practice Dinic needs 2-3 phases
///   of O(E) each here (measured on softmax weights at T = 32, 64), so about O(B n T^4):
///   ~0.17 s of CPU time for T = 64, n = 3 on one core (bench/bench_rollout.cpp,
///   bench/README.md). The pairs are split over threads by source token (the same result on
///   any thread count).
Tensor attention_flow(const std::vector<Tensor>& layers, const RolloutOptions& options = {});
/// The same with a cross-attention layer `cross` [B, (h',) Tq, T] on top -> [B, Tq, T].
Tensor attention_flow(const std::vector<Tensor>& layers, const Tensor& cross,
                      const RolloutOptions& options = {});

/// attention_rollout of batch element `batch_index` only, as a map to draw: module
/// "attention rollout", layer = the top layer's index (layers.size() - 1, or layers.size()
/// for `cross`), head -1, `labels.queries` for the top positions (rows) and `labels.keys` for
/// the input tokens (columns). Throws as attention_rollout, IndexError when batch_index is
/// outside [0, B), ShapeError when the labels' lengths differ from the result's [rows, T].
AttentionMap rollout_map(const std::vector<Tensor>& layers, const TokenLabels& labels,
                         std::int64_t batch_index = 0, const RolloutOptions& options = {});
AttentionMap rollout_map(const std::vector<Tensor>& layers, const Tensor& cross, const TokenLabels& labels,
                         std::int64_t batch_index = 0, const RolloutOptions& options = {});
/// attention_flow of one batch element as a map (module "attention flow"), as rollout_map;
/// only that element's flows are computed.
AttentionMap flow_map(const std::vector<Tensor>& layers, const TokenLabels& labels,
                      std::int64_t batch_index = 0, const RolloutOptions& options = {});
AttentionMap flow_map(const std::vector<Tensor>& layers, const Tensor& cross, const TokenLabels& labels,
                      std::int64_t batch_index = 0, const RolloutOptions& options = {});

}  // namespace attograd::inspect
