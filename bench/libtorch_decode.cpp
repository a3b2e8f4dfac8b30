// bench_decode's Transformer in LibTorch, decoded greedily with a key/value cache written out by
// hand (LibTorch's TransformerDecoder has none): embedding 1000 -> 256 plus sinusoidal positions,
// a 2-layer encoder (torch::nn::TransformerEncoder), 2 post-norm decoder layers whose
// self-attention appends each step's keys and values and whose cross-attention projects the
// memory once, the final LayerNorm and the generator. Batch 4 sources of 32 positions; every
// output runs to its full length (no eos). Prints the BLAS it loaded (`blas <path>`), then
// `greedy <length> <tokens per second>` for each length given. Arguments:
// [--threads N] length... (default 16 64 256); timed by the thread's CPU time (bench/timing.hpp).
#include "timing.hpp"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t kBatch = 4, kSrcLen = 32, kVocab = 1000, kE = 256, kHeads = 4, kFF = 1024, kLayers = 2;

// One decoder layer's parameters (PyTorch's TransformerDecoderLayer, post-norm, ReLU).
struct DecoderLayer : torch::nn::Module {
    torch::nn::Linear self_in{nullptr}, self_out{nullptr}, cross_q{nullptr}, cross_kv{nullptr},
        cross_out{nullptr}, linear1{nullptr}, linear2{nullptr};
    torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
    DecoderLayer()
        : self_in(register_module("self_in", torch::nn::Linear(kE, 3 * kE))),
          self_out(register_module("self_out", torch::nn::Linear(kE, kE))),
          cross_q(register_module("cross_q", torch::nn::Linear(kE, kE))),
          cross_kv(register_module("cross_kv", torch::nn::Linear(kE, 2 * kE))),
          cross_out(register_module("cross_out", torch::nn::Linear(kE, kE))),
          linear1(register_module("linear1", torch::nn::Linear(kE, kFF))),
          linear2(register_module("linear2", torch::nn::Linear(kFF, kE))),
          norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kE})))),
          norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kE})))),
          norm3(register_module("norm3", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kE})))) {}
};

// [B, T, E] -> [B, h, T, d]
torch::Tensor heads(const torch::Tensor& x) {
    return x.view({x.size(0), x.size(1), kHeads, kE / kHeads}).transpose(1, 2);
}

// softmax(q k^T / sqrt(d)) v over [B, h, *, d] -> [B, 1, E]
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    const auto w = torch::softmax(torch::matmul(q, k.transpose(2, 3)) / std::sqrt(double(kE / kHeads)), -1);
    return torch::matmul(w, v).transpose(1, 2).reshape({q.size(0), 1, kE});
}

struct Cache {
    torch::Tensor self_k, self_v, cross_k, cross_v;  // [B, h, t, d], [B, h, S, d]
};

// Sinusoidal positions [max_len, E] (Vaswani et al. 2017, §3.5).
torch::Tensor positions(std::int64_t max_len) {
    const auto pos = torch::arange(max_len, torch::kFloat).unsqueeze(1);
    const auto div = torch::exp(torch::arange(0, kE, 2, torch::kFloat) * (-std::log(10000.0) / double(kE)));
    auto pe = torch::zeros({max_len, kE});
    pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)},
                  torch::sin(pos * div));
    pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)},
                  torch::cos(pos * div));
    return pe;
}

std::string loaded_blas() {
    std::ifstream maps("/proc/self/maps");
    std::string line, found = "none";
    while (std::getline(maps, line)) {
        const auto slash = line.find('/');
        if (slash == std::string::npos) continue;
        const std::string path = line.substr(slash);
        if (path.find("openblas") != std::string::npos) return path;
        if (path.find("libblas") != std::string::npos || path.find("libmkl") != std::string::npos)
            found = path;
    }
    return found;
}

}  // namespace

int main(int argc, char** argv) {
    torch::set_num_threads(bench::int_flag(argc, argv, "--threads", 1));
    std::vector<std::int64_t> lengths;
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--threads") {
            ++i;
            continue;
        }
        lengths.push_back(std::atoll(argv[i]));
    }
    if (lengths.empty()) lengths = {16, 64, 256};
    torch::manual_seed(0);
    torch::NoGradGuard no_grad;
    torch::nn::Embedding embedding(kVocab, kE);
    torch::nn::TransformerEncoder encoder(
        torch::nn::TransformerEncoderOptions(
            torch::nn::TransformerEncoderLayerOptions(kE, kHeads).dim_feedforward(kFF).dropout(0.0), kLayers)
            .norm(torch::nn::AnyModule(torch::nn::LayerNorm(torch::nn::LayerNormOptions({kE})))));
    std::vector<std::shared_ptr<DecoderLayer>> layers;
    for (int l = 0; l < kLayers; ++l) layers.push_back(std::make_shared<DecoderLayer>());
    torch::nn::LayerNorm final_norm(torch::nn::LayerNormOptions({kE}));
    torch::nn::Linear generator(kE, kVocab);
    encoder->eval();
    const auto pe = positions(512);
    const auto src = torch::randint(3, kVocab, {kBatch, kSrcLen}, torch::kLong);

    auto greedy = [&](std::int64_t length) {
        // the encoder is sequence-first: [S, B, E]
        const auto memory =
            encoder->forward((embedding(src) + pe.slice(0, 0, kSrcLen)).transpose(0, 1)).transpose(0, 1);
        std::vector<Cache> caches(kLayers);
        for (int l = 0; l < kLayers; ++l) {
            const auto kv = layers[l]->cross_kv(memory).chunk(2, -1);
            caches[l].cross_k = heads(kv[0]);
            caches[l].cross_v = heads(kv[1]);
        }
        auto token = torch::full({kBatch}, 1, torch::kLong);
        for (std::int64_t t = 0; t < length; ++t) {
            auto x = embedding(token).unsqueeze(1) + pe.slice(0, t, t + 1);  // [B, 1, E]
            for (int l = 0; l < kLayers; ++l) {
                DecoderLayer& d = *layers[l];
                Cache& c = caches[l];
                const auto qkv = d.self_in(x).chunk(3, -1);
                const auto k = heads(qkv[1]), v = heads(qkv[2]);
                c.self_k = t == 0 ? k : torch::cat({c.self_k, k}, 2);
                c.self_v = t == 0 ? v : torch::cat({c.self_v, v}, 2);
                x = d.norm1(x + d.self_out(attend(heads(qkv[0]), c.self_k, c.self_v)));
                x = d.norm2(x + d.cross_out(attend(heads(d.cross_q(x)), c.cross_k, c.cross_v)));
                x = d.norm3(x + d.linear2(torch::relu(d.linear1(x))));
            }
            token = generator(final_norm(x)).squeeze(1).argmax(-1);
        }
        return token;
    };
    std::printf("blas %s\n", loaded_blas().c_str());
    for (const std::int64_t length : lengths) {
        const double start = bench::now(bench::Clock::ThreadCpu);
        greedy(length);
        const double first = bench::now(bench::Clock::ThreadCpu) - start;
        const double s =
            first > 2.0 ? first
                        : bench::median_seconds([&] { greedy(length); }, 1, 3, 0, bench::Clock::ThreadCpu);
        std::printf("greedy %lld %.1f\n", static_cast<long long>(length), double(kBatch * length) / s);
        std::fflush(stdout);
    }
    return 0;
}
