// The memory estimate of a training run and the check against what the machine has left.
#include "memory_check.hpp"

#include "commands.hpp"
#include "optim/distributed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace attograd::cli {

namespace {

/// The first number of file `path` ("max" or unreadable: nullopt).
std::optional<std::uint64_t> read_number(const char* path) {
    std::ifstream in(path);
    std::uint64_t value = 0;
    if (in >> value) return value;
    return std::nullopt;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::uint64_t training_bytes(const RunConfig& config, bool training) {
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    // In float32 elements (double: a hostile config must not overflow the sum):
    //   P = (Vs + Vt + Vd) E + (S + T + 2) E               embeddings, output projection, positions
    //     + L_enc (4 E^2 + 2 E F + F + 5 E)                self-attention (q, k, v, o), FFN, norms
    //     + L_dec (8 E^2 + 2 E F + F + 9 E)                self- and cross-attention, FFN, norms
    //   state = P (1 weight + 1 gradient + k), k = 2 (Adam's m and v), 1 (SGD momentum), 0
    //   A = B [ 2 (S + T) E                                embedded inputs
    //         + L_enc (S (10 E + 2 F) + 3 H S^2)           per layer: q, k, v, context, norms and
    //         + L_dec (T (16 E + 2 F) + 3 H (T^2 + T S))   residuals; FFN hidden; scores, weights
    //         + 3 T Vt ]                                   logits, log-softmax and its gradient
    // with Vs and Vt the source and target vocabularies (the same one when shared), Vd = Vt for the
    // decoder's own input embedding when they are separate (else 0), S = max_source_len, T = max_target_len +
    // 1 (<eos>), B the batch, H the heads. The encoder model has L_dec = 0 and T = S. It counts the large
    // tensors only: the true peak is higher (temporaries of backward), so it refuses only runs that cannot
    // fit.
    const Vocabularies vocab = vocabularies(config);
    const double Vs = static_cast<double>(vocab.source.size()), Vt = static_cast<double>(vocab.target.size()),
                 Vd = config.target_vocab ? Vt : 0.0, E = static_cast<double>(m.embed_dim),
                 F = static_cast<double>(m.ffn_dim), H = static_cast<double>(m.heads),
                 S = static_cast<double>(m.max_source_len), B = static_cast<double>(t.batch);
    const bool encoder = m.kind == "encoder";
    const double T = encoder ? S : static_cast<double>(m.max_target_len) + 1.0;
    const double Le = static_cast<double>(m.layers),
                 Ld = encoder ? 0.0 : static_cast<double>(m.decoder_layers);
    const double P = (Vs + Vt + Vd) * E + (S + T + 2) * E + Le * (4 * E * E + 2 * E * F + F + 5 * E) +
                     Ld * (8 * E * E + 2 * E * F + F + 9 * E);
    const double k = t.optim == "sgd" ? (t.momentum > 0.0 ? 1.0 : 0.0) : 2.0;
    const double per_parameter = training ? 2.0 + k : 1.0;  // eval, inspect: the weights alone
    const double A = B * (2 * (S + T) * E + Le * (S * (10 * E + 2 * F) + 3 * H * S * S) +
                          Ld * (T * (16 * E + 2 * F) + 3 * H * (T * T + T * S)) + 3 * T * Vt);
    // Under mpirun every rank on this machine holds the whole model and its share of the batch.
    const double ranks = training ? static_cast<double>(std::max(optim::launcher_world_size(), 1)) : 1.0;
    const double bytes = 4.0 * (ranks * P * per_parameter + A);
    return bytes >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(bytes);
}

std::optional<std::uint64_t> available_bytes() {
    std::optional<std::uint64_t> available;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
        if (!line.starts_with("MemAvailable:")) continue;
        std::istringstream fields(line.substr(13));
        std::uint64_t kib = 0;
        if (fields >> kib) available = kib * 1024;
    }
    // cgroup v2: memory.max is "max" when no limit is set.
    if (const auto limit = read_number("/sys/fs/cgroup/memory.max")) {
        const std::uint64_t used = read_number("/sys/fs/cgroup/memory.current").value_or(0);
        const std::uint64_t left = *limit > used ? *limit - used : 0;
        available = available ? std::min(*available, left) : left;
    }
    return available;
}

void check_memory(const RunConfig& config, const SettingNames& names, std::optional<std::uint64_t> available,
                  bool training) {
    if (!available) return;
    const std::uint64_t needed = training_bytes(config, training);
    if (needed <= *available) return;
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    std::string sizes = fmt::format("{} {}, {} {}, {} {}, {} {}", names("model.embed_dim"), m.embed_dim,
                                    names("model.ffn_dim"), m.ffn_dim, names("model.heads"), m.heads,
                                    names("model.layers"), m.layers);
    if (m.kind != "encoder") sizes += fmt::format(", {} {}", names("model.decoder_layers"), m.decoder_layers);
    sizes += fmt::format(", {} {}", names("train.batch"), t.batch);
    throw UsageError(fmt::format(
        "{}{} would need about {:.1f} GiB ({}: {} and one batch's activations), but {:.1f} GiB of memory is "
        "available: choose smaller values",
        names.prefix("model.embed_dim"), training ? "training" : "running this model",
        static_cast<double>(needed) / kGiB, sizes,
        training ? fmt::format("parameters, gradients, {} state", t.optim) : std::string("parameters"),
        static_cast<double>(*available) / kGiB));
}

}  // namespace attograd::cli
