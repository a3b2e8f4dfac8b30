// Attention rollout and attention flow over a stack of attention layers (Abnar & Zuidema 2020).
#include "inspect/rollout.hpp"

#include "core/detail/parallel.hpp"
#include "core/error.hpp"
#include "inspect/max_flow.hpp"

#include <fmt/format.h>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

namespace attograd::inspect {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One input layer after validation: weights [B, heads, rows, cols] (rank 3 read as heads = 1).
struct Layer {
    const Tensor* weights = nullptr;
    std::string name;  // "layer 2" or "the cross-attention layer", for messages
    std::int64_t heads = 1, rows = 0, cols = 0;
    bool self = true;
};

// A validated stack: self-attention layers bottom first, then the cross layer if any.
struct Stack {
    std::vector<Layer> layers;
    std::vector<std::int64_t> heads;  // the heads averaged in every layer (empty = all)
    bool residual = true;
    bool normalize = false;
    std::int64_t batch = 0, tokens = 0, rows = 0;  // B, T and the top layer's query count
};

std::string multi_index(std::int64_t flat, const Shape& shape) {
    Shape index(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        index[d] = flat % shape[d];
        flat /= shape[d];
    }
    return fmt::format("{}", index);
}

// Every weight must be a finite capacity >= 0.
void check_values(std::string_view fn, const Layer& layer) {
    const Tensor& w = *layer.weights;
    dispatch_floating(w.dtype(), fn, [&]<class T>(T) {
        const T* data = w.data<T>();
        for (std::int64_t i = 0; i < w.numel(); ++i) {
            const double v = static_cast<double>(data[i]);
            AG_CHECK(std::isfinite(v), ValueError, "{}: {} has a non-finite weight {} at {}", fn, layer.name,
                     v, multi_index(i, w.shape()));
            AG_CHECK(
                v >= 0.0, ValueError,
                "{}: {} has a negative weight {} at {}; attention weights (flow capacities) must be >= 0", fn,
                layer.name, v, multi_index(i, w.shape()));
        }
    });
}

Layer check_layer(std::string_view fn, const Tensor& w, std::string name, bool self) {
    AG_CHECK(w.defined(), ValueError, "{}: {} is an undefined tensor", fn, name);
    AG_CHECK(is_floating(w.dtype()), DTypeError, "{}: {} has dtype {}; expected float32 or float64", fn, name,
             w.dtype());
    AG_CHECK(w.dim() == 3 || w.dim() == 4, ShapeError, "{}: {} has shape {} (rank {}); expected {} or {}", fn,
             name, w.shape(), w.dim(), self ? "[B, h, T, T]" : "[B, h, Tq, T]",
             self ? "[B, T, T]" : "[B, Tq, T]");
    Layer layer{.weights = &w,
                .name = std::move(name),
                .heads = w.dim() == 4 ? w.size(1) : 1,
                .rows = w.size(-2),
                .cols = w.size(-1),
                .self = self};
    AG_CHECK(layer.heads > 0, ShapeError, "{}: {} has shape {}: no heads", fn, layer.name, w.shape());
    AG_CHECK(!self || layer.rows == layer.cols, ShapeError,
             "{}: {} has shape {}: self-attention weights must be square [.., T, T] (a cross-attention layer "
             "goes on top as `cross`)",
             fn, layer.name, w.shape());
    return layer;
}

Stack check_stack(std::string_view fn, const std::vector<Tensor>& layers, const Tensor* cross,
                  const RolloutOptions& options) {
    AG_CHECK(!layers.empty() || cross != nullptr, ValueError,
             "{}: no layers (pass at least one self-attention layer or a cross-attention layer)", fn);
    Stack stack;
    stack.heads = options.heads;
    stack.residual = options.residual;
    stack.normalize = options.normalize;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        stack.layers.push_back(check_layer(fn, layers[l], fmt::format("layer {}", l), true));
        const Layer& first = stack.layers.front();
        const Layer& layer = stack.layers.back();
        AG_CHECK(layer.weights->size(0) == first.weights->size(0) && layer.heads == first.heads &&
                     layer.rows == first.rows,
                 ShapeError,
                 "{}: layer {} has shape {} but layer 0 has {}: every self-attention layer needs the "
                 "same [B, h, T, T]",
                 fn, l, layer.weights->shape(), first.weights->shape());
    }
    if (cross != nullptr) {
        stack.layers.push_back(check_layer(fn, *cross, "the cross-attention layer", false));
        if (stack.layers.size() > 1) {
            const Layer& first = stack.layers.front();
            const Layer& top = stack.layers.back();
            AG_CHECK(
                top.weights->size(0) == first.weights->size(0) && top.cols == first.cols, ShapeError,
                "{}: the cross-attention layer has shape {} but layer 0 has {}: its batch size and key count "
                "must be the stack's B and T",
                fn, top.weights->shape(), first.weights->shape());
        }
    }
    for (std::size_t a = 0; a < options.heads.size(); ++a) {
        for (std::size_t b = 0; b < a; ++b) {
            AG_CHECK(options.heads[a] != options.heads[b], ValueError, "{}: head {} is selected twice", fn,
                     options.heads[a]);
        }
        for (const Layer& layer : stack.layers) {
            AG_CHECK(options.heads[a] >= 0 && options.heads[a] < layer.heads, IndexError,
                     "{}: head {} is out of range for {}, which has {} head{} (shape {})", fn,
                     options.heads[a], layer.name, layer.heads, layer.heads == 1 ? "" : "s",
                     layer.weights->shape());
        }
    }
    for (const Layer& layer : stack.layers) check_values(fn, layer);
    stack.batch = stack.layers.front().weights->size(0);
    stack.tokens = stack.layers.front().cols;
    stack.rows = stack.layers.back().rows;
    return stack;
}

// Layer `layer`'s matrix [rows, cols] at batch element b: the mean over the selected heads, then
// for a self-attention layer with `residual` 0.5 A + 0.5 I with each row divided by its sum.
Matrix layer_matrix(const Stack& stack, const Layer& layer, std::int64_t b) {
    std::vector<std::int64_t> heads = stack.heads;
    if (heads.empty()) {
        for (std::int64_t h = 0; h < layer.heads; ++h) heads.push_back(h);
    }
    const std::int64_t size = layer.rows * layer.cols;
    Matrix m = Matrix::Zero(layer.rows, layer.cols);
    dispatch_floating(layer.weights->dtype(), "attention_rollout", [&]<class T>(T) {
        for (const std::int64_t h : heads) {
            const T* head = layer.weights->data<T>() + (b * layer.heads + h) * size;
            m += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                     head, layer.rows, layer.cols)
                     .template cast<double>();
        }
    });
    m /= static_cast<double>(heads.size());
    if (layer.self && stack.residual) {
        m = 0.5 * m + 0.5 * Matrix::Identity(layer.rows, layer.cols);
        const Eigen::VectorXd sums = m.rowwise().sum();  // each >= 0.5: the weights are >= 0
        m.array().colwise() /= sums.array();
    }
    return m;
}

// R = M_n ... M_2 M_1.
Matrix rollout_of(const std::vector<Matrix>& m) {
    Matrix r = m.front();
    for (std::size_t l = 1; l < m.size(); ++l) {
        Matrix next(m[l].rows(), r.cols());
        next.noalias() = m[l] * r;
        r.swap(next);
    }
    return r;
}

// Three or more layers: one max-flow per (output j, input i) on a network built once. Nodes:
// 0 the source (input token i), 1 the sink (top position j), then T per layer 1 .. n-1. The
// source's edges carry column i of M_1, the sink's row j of M_n; only these change per pair.
Matrix flow_by_max_flow(const std::vector<Matrix>& m) {
    const auto n = static_cast<std::int64_t>(m.size());
    const std::int64_t t = m.front().cols(), rows = m.back().rows();
    const auto node = [t](std::int64_t layer, std::int64_t k) { return 2 + (layer - 1) * t + k; };
    FlowNetwork base((n - 1) * t + 2);
    std::vector<std::int64_t> source_edges, sink_edges;
    for (std::int64_t k = 0; k < t; ++k) source_edges.push_back(base.add_edge(0, node(1, k), 0.0));
    for (std::int64_t l = 2; l < n; ++l) {  // M_l joins layer l-1 to layer l
        const Matrix& w = m[static_cast<std::size_t>(l - 1)];
        for (std::int64_t k = 0; k < t; ++k) {
            for (std::int64_t j = 0; j < t; ++j) {
                if (w(j, k) > 0.0) base.add_edge(node(l - 1, k), node(l, j), w(j, k));
            }
        }
    }
    for (std::int64_t k = 0; k < t; ++k) sink_edges.push_back(base.add_edge(node(n - 1, k), 1, 0.0));

    const Matrix& bottom = m.front();
    const Matrix& top = m.back();
    Matrix out(rows, t);
    const int threads =
        attograd::detail::threads_for(rows * t * base.edges(), attograd::detail::kMinParallelWork);
#pragma omp parallel num_threads(threads)
    {
        FlowNetwork net = base;
#pragma omp for schedule(dynamic)
        for (std::int64_t i = 0; i < t; ++i) {
            for (std::int64_t k = 0; k < t; ++k)
                net.set_capacity(source_edges[static_cast<std::size_t>(k)], bottom(k, i));
            for (std::int64_t j = 0; j < rows; ++j) {
                for (std::int64_t k = 0; k < t; ++k)
                    net.set_capacity(sink_edges[static_cast<std::size_t>(k)], top(j, k));
                out(j, i) = net.max_flow(0, 1);
            }
        }
    }
    return out;
}

Matrix flow_of(const std::vector<Matrix>& m) {
    if (m.size() == 1) return m.front();  // the edge (0, i) -> (1, j) alone
    if (m.size() == 2) {
        // The paths i -> k -> j are edge-disjoint: flow = sum_k min(M_1[k, i], M_2[j, k]).
        const Matrix bottom_t = m[0].transpose();  // [i, k]
        const Matrix& top = m[1];                  // [j, k]
        Matrix out(top.rows(), bottom_t.rows());
        for (Eigen::Index j = 0; j < out.rows(); ++j) {
            for (Eigen::Index i = 0; i < out.cols(); ++i)
                out(j, i) = top.row(j).cwiseMin(bottom_t.row(i)).sum();
        }
        return out;
    }
    return flow_by_max_flow(m);
}

enum class Kind { Rollout, Flow };

// The result of batch element b as a matrix [rows, T].
Matrix compute(const Stack& stack, Kind kind, std::int64_t b) {
    std::vector<Matrix> m;
    for (const Layer& layer : stack.layers) m.push_back(layer_matrix(stack, layer, b));
    Matrix out = kind == Kind::Rollout ? rollout_of(m) : flow_of(m);
    if (stack.normalize) {
        for (Eigen::Index j = 0; j < out.rows(); ++j) {
            const double total = out.row(j).sum();
            if (total > 0.0) out.row(j) /= total;
        }
    }
    return out;
}

Tensor run(std::string_view fn, Kind kind, const std::vector<Tensor>& layers, const Tensor* cross,
           const RolloutOptions& options) {
    const Stack stack = check_stack(fn, layers, cross, options);
    Tensor out = empty({stack.batch, stack.rows, stack.tokens}, {.dtype = DType::Float64});
    for (std::int64_t b = 0; b < stack.batch; ++b) {
        Eigen::Map<Matrix>(out.data<double>() + b * stack.rows * stack.tokens, stack.rows, stack.tokens) =
            compute(stack, kind, b);
    }
    return out;
}

AttentionMap map_of(std::string_view fn, Kind kind, const std::vector<Tensor>& layers, const Tensor* cross,
                    const TokenLabels& labels, std::int64_t batch_index, const RolloutOptions& options) {
    const Stack stack = check_stack(fn, layers, cross, options);
    AG_CHECK(batch_index >= 0 && batch_index < stack.batch, IndexError,
             "{}: batch index {} is outside [0, {})", fn, batch_index, stack.batch);
    AG_CHECK(std::ssize(labels.queries) == stack.rows && std::ssize(labels.keys) == stack.tokens, ShapeError,
             "{}: {} query and {} key labels for a [{}, {}] map", fn, labels.queries.size(),
             labels.keys.size(), stack.rows, stack.tokens);
    const Matrix m = compute(stack, kind, batch_index);
    AttentionMap map;
    map.module = kind == Kind::Rollout ? "attention rollout" : "attention flow";
    map.layer = static_cast<std::int64_t>(stack.layers.size()) - 1;
    map.head = -1;
    map.queries = labels.queries;
    map.keys = labels.keys;
    map.weights.assign(m.data(), m.data() + m.size());
    return map;
}

}  // namespace

Tensor attention_rollout(const std::vector<Tensor>& layers, const RolloutOptions& options) {
    return run("attention_rollout", Kind::Rollout, layers, nullptr, options);
}

Tensor attention_rollout(const std::vector<Tensor>& layers, const Tensor& cross,
                         const RolloutOptions& options) {
    return run("attention_rollout", Kind::Rollout, layers, cross.defined() ? &cross : nullptr, options);
}

Tensor attention_flow(const std::vector<Tensor>& layers, const RolloutOptions& options) {
    return run("attention_flow", Kind::Flow, layers, nullptr, options);
}

Tensor attention_flow(const std::vector<Tensor>& layers, const Tensor& cross, const RolloutOptions& options) {
    return run("attention_flow", Kind::Flow, layers, cross.defined() ? &cross : nullptr, options);
}

AttentionMap rollout_map(const std::vector<Tensor>& layers, const TokenLabels& labels,
                         std::int64_t batch_index, const RolloutOptions& options) {
    return map_of("rollout_map", Kind::Rollout, layers, nullptr, labels, batch_index, options);
}

AttentionMap rollout_map(const std::vector<Tensor>& layers, const Tensor& cross, const TokenLabels& labels,
                         std::int64_t batch_index, const RolloutOptions& options) {
    return map_of("rollout_map", Kind::Rollout, layers, cross.defined() ? &cross : nullptr, labels,
                  batch_index, options);
}

AttentionMap flow_map(const std::vector<Tensor>& layers, const TokenLabels& labels, std::int64_t batch_index,
                      const RolloutOptions& options) {
    return map_of("flow_map", Kind::Flow, layers, nullptr, labels, batch_index, options);
}

AttentionMap flow_map(const std::vector<Tensor>& layers, const Tensor& cross, const TokenLabels& labels,
                      std::int64_t batch_index, const RolloutOptions& options) {
    return map_of("flow_map", Kind::Flow, layers, cross.defined() ? &cross : nullptr, labels, batch_index,
                  options);
}

}  // namespace attograd::inspect
