// Decoding speed: generated tokens per second of greedy and beam search (4 beams) at output
// lengths 16, 64 and 256, with the incremental state (key/value cache, carried recurrent state)
// and with the stateless step that re-runs the decoder over the whole prefix, for a
// Seq2SeqTransformer and a LuongDecoder; beside them LibTorch's cached greedy decode of the same
// Transformer (libtorch_decode, run from this program's directory when it was built).
//   bench_decode [--threads N] [--max-length L] [transformer|luong]
// One thread by default, timed by the thread's CPU time (bench/timing.hpp: the machine is shared).
// eos gets an output bias of -1e9, so every output runs to exactly L tokens.
#include "attograd.hpp"
#include "core/detail/gemm.hpp"
#include "timing.hpp"

#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace attograd;

namespace {

constexpr std::int64_t kBatch = 4, kSrcLen = 32, kVocab = 1000, kBos = 1, kEos = 2;

// Seconds of one call: the median of 3 runs after one warm-up, or one run when a run takes over
// two seconds (the stateless path at length 256).
template <class Fn>
double seconds_per_call(Fn&& fn) {
    const double start = bench::now(bench::Clock::ThreadCpu);
    fn();
    const double first = bench::now(bench::Clock::ThreadCpu) - start;
    if (first > 2.0) return first;
    return bench::median_seconds(fn, 1, 3, 0, bench::Clock::ThreadCpu);
}

// Makes eos unreachable, so that every hypothesis runs to max_length.
void silence_eos(nn::Module& model, const std::string& bias_name) {
    for (auto& [name, p] : model.named_parameters())
        if (name == bias_name) p.data<float>()[kEos] = -1e9f;
}

// Greedy and beam figures of one model at each length: tokens per second, cached and not.
template <class Decode>
void run(const char* model, const std::vector<std::int64_t>& lengths, const Decode& decode,
         const std::map<std::int64_t, double>& torch_greedy) {
    for (const std::int64_t beam : {1, 4}) {
        for (const std::int64_t length : lengths) {
            double rate[2];
            for (const bool cache : {true, false}) {
                const nn::DecodeOptions options{.bos_id = kBos,
                                                .eos_id = kEos,
                                                .max_length = length,
                                                .beam_size = beam,
                                                .use_cache = cache};
                const double s = seconds_per_call([&] { decode(options); });
                rate[cache ? 0 : 1] = static_cast<double>(kBatch * length) / s;
            }
            const auto torch = torch_greedy.find(length);
            const std::string torch_rate = beam == 1 && torch != torch_greedy.end()
                                               ? fmt::format("{:10.0f}", torch->second)
                                               : fmt::format("{:>10}", "-");
            std::printf("%-12s %-7s %6lld %12.0f %12.0f %8.1fx %s\n", model, beam == 1 ? "greedy" : "beam 4",
                        static_cast<long long>(length), rate[0], rate[1], rate[0] / rate[1],
                        torch_rate.c_str());
            std::fflush(stdout);
        }
    }
}

// LibTorch's cached greedy tokens per second by length, from libtorch_decode beside this program
// (empty when it was not built). Prints the BLAS it loaded.
std::map<std::int64_t, double> libtorch_greedy(const std::filesystem::path& self, int threads,
                                               const std::vector<std::int64_t>& lengths) {
    std::map<std::int64_t, double> out;
    const auto peer = self.parent_path() / "libtorch_decode";
    if (!std::filesystem::exists(peer)) {
        std::printf("libtorch_decode not built (apt-get install libtorch-dev)\n");
        return out;
    }
    std::string args = fmt::format(" --threads {}", threads);
    for (const std::int64_t l : lengths) args += fmt::format(" {}", l);
    FILE* pipe = popen((peer.string() + args).c_str(), "r");
    if (pipe == nullptr) return out;
    char line[512];
    while (std::fgets(line, sizeof line, pipe) != nullptr) {
        long long length = 0;
        double rate = 0;
        char blas[400];
        if (std::sscanf(line, "blas %399s", blas) == 1) std::printf("libtorch blas %s\n", blas);
        if (std::sscanf(line, "greedy %lld %lf", &length, &rate) == 2) out[length] = rate;
    }
    pclose(pipe);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = bench::int_flag(argc, argv, "--threads", 1);
    omp_set_num_threads(threads);
    const std::int64_t max_length = bench::int_flag(argc, argv, "--max-length", 256);
    const std::string only = bench::chosen_config(argc, argv, {"transformer", "luong"});
    std::vector<std::int64_t> lengths;
    for (const std::int64_t l : {16, 64, 256})
        if (l <= max_length) lengths.push_back(l);
    std::printf(
        "bench_decode: %d thread(s), GEMM %s, batch %lld sources of %lld positions, vocabulary %lld\n",
        threads, detail::gemm_backend(), static_cast<long long>(kBatch), static_cast<long long>(kSrcLen),
        static_cast<long long>(kVocab));
    std::printf("%-12s %-7s %6s %12s %12s %9s %10s\n", "model", "search", "length", "cached tok/s",
                "full tok/s", "speed-up", "torch tok/s");
    Generator gen(0);
    const Tensor src = randint(3, kVocab, {kBatch, kSrcLen}, gen);
    if (only.empty() || only == "transformer") {
        // d_model 256, 4 heads, 2 + 2 layers, feed-forward 1024 (libtorch_decode builds the same)
        nn::Seq2SeqTransformer model({.vocab_size = kVocab,
                                      .pad_id = 0,
                                      .max_len = 512,
                                      .transformer = {.d_model = 256,
                                                      .nhead = 4,
                                                      .num_encoder_layers = 2,
                                                      .num_decoder_layers = 2,
                                                      .dim_feedforward = 1024,
                                                      .dropout = 0.0}},
                                     gen);
        model.eval();
        silence_eos(model, "generator.bias");
        const auto torch = libtorch_greedy(std::filesystem::absolute(argv[0]), threads, lengths);
        run(
            "transformer", lengths,
            [&](const nn::DecodeOptions& o) {
                if (o.beam_size == 1)
                    model.greedy_decode(src, o);
                else
                    model.beam_search(src, o);
            },
            torch);
    }
    if (only.empty() || only == "luong") {
        // 2 LSTM layers of 256, general score, input feeding, over memory [4, 32, 256]
        nn::LuongDecoder decoder(
            {.vocab_size = kVocab, .embedding_dim = 256, .hidden_size = 256, .num_layers = 2}, gen);
        decoder.eval();
        silence_eos(decoder, "out.bias");
        const Tensor memory = randn({kBatch, kSrcLen, 256}, gen);
        const nn::DecodeModel m = decoder.decode_model();
        run("luong", lengths,
            [&](const nn::DecodeOptions& o) {
                if (o.beam_size == 1)
                    nn::greedy_decode(memory, Tensor(), m, o);
                else
                    nn::beam_search(memory, Tensor(), m, o);
            },
            {});
    }
    return 0;
}
