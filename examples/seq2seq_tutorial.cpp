// PyTorch's tutorial "NLP From Scratch: Translation with a Sequence to Sequence Network and
// Attention" in attograd: an EncoderRNN (Embedding + GRU) and an AttnDecoderRNN with
// BahdanauAttention, trained teacher-forced on a TSV of sentence pairs, then greedy decoding of
// held-out sources with the attention drawn in the terminal (and as SVG).
//
//   tutorial                          here
//   EncoderRNN: Embedding + nn.GRU    Encoder: nn::Embedding + nn::GRU (lengths skip the padding)
//   BahdanauAttention (Wa, Ua, Va)    nn::AdditiveScore inside nn::BahdanauDecoder (score_bias)
//   AttnDecoderRNN                    nn::BahdanauDecoder (deep_output = false)
//   decoder_hidden = encoder_hidden   initial_state(): the encoder's last state
//   evaluate() + showAttention()      nn::greedy_decode + nn::AttentionRecorder + inspect/
//
// --bidirectional reads the source both ways as the paper's encoder (d2l.ai's Bahdanau model
// takes its annotations from a GRU too): memory is [B, S, 2H] and s_0 = tanh(W_s h<-_1)
// (Bahdanau et al. 2015, appendix A.2.2). The tutorial's dropout is left out.
//
// Usage: seq2seq_tutorial PAIRS.tsv [--steps N] [--bidirectional] [--svg FILE.svg]
//   PAIRS.tsv: one `source<TAB>target` sentence pair per line (words split at whitespace);
//   every tenth pair is held out and decoded after training.
#include "attograd.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace attograd;

namespace {

constexpr std::int64_t kHidden = 128;  // the tutorial's hidden_size (embeddings are as wide)
constexpr std::int64_t kBatch = 16;

struct Options {
    std::string tsv, svg;
    std::int64_t steps = 400;
    bool bidirectional = false;
};

/// EncoderRNN + AttnDecoderRNN as one module (so that one AttentionRecorder and one optimiser
/// see every part).
class Seq2Seq : public nn::Module {
public:
    Seq2Seq(std::int64_t vocab_size, bool bidirectional, Generator& gen) : bidirectional_(bidirectional) {
        const std::int64_t memory_dim = bidirectional ? 2 * kHidden : kHidden;
        embedding_ = register_module(
            "embedding",
            std::make_shared<nn::Embedding>(
                nn::EmbeddingOptions{.num_embeddings = vocab_size, .embedding_dim = kHidden}, gen));
        gru_ = register_module(
            "gru",
            std::make_shared<nn::GRU>(
                nn::GRUOptions{.input_size = kHidden, .hidden_size = kHidden, .bidirectional = bidirectional},
                gen));
        if (bidirectional)
            bridge_ = register_module(
                "bridge", std::make_shared<nn::Linear>(
                              nn::LinearOptions{.in_features = kHidden, .out_features = kHidden}, gen));
        decoder_ = register_module("decoder", std::make_shared<nn::BahdanauDecoder>(
                                                  nn::BahdanauDecoderOptions{.vocab_size = vocab_size,
                                                                             .embedding_dim = kHidden,
                                                                             .hidden_size = kHidden,
                                                                             .memory_dim = memory_dim,
                                                                             .score_bias = true,
                                                                             .deep_output = false},
                                                  gen));
    }
    std::string type_name() const override { return "Seq2Seq"; }

    /// Source ids [B, S] and their lengths [B] -> the annotations [B, S, D*H] (0 past each length).
    Tensor encode(const data::PaddedSequences& source) const {
        return gru_->forward(embedding_->forward(source.ids), {}, source.lengths).output;
    }

    /// s_0 [B, H] from the annotations [B, S, D*H] and the source padding mask [B, S] (undefined:
    /// none): the forward GRU's state after the last real word, or tanh(W_s h<-_1) when bidirectional.
    Tensor initial_state(const Tensor& memory, const Tensor& mask) const {
        if (bidirectional_) return tanh(bridge_->forward(narrow(select(memory, 1, 0), 1, kHidden, kHidden)));
        const std::int64_t batch = memory.size(0), steps = memory.size(1);
        const auto lengths = mask.defined() ? nn::lengths_from_padding_mask(mask).to_vector<std::int64_t>()
                                            : std::vector<std::int64_t>(batch, steps);
        std::vector<std::int64_t> rows;
        for (std::int64_t b = 0; b < batch; ++b) rows.push_back(b * steps + lengths[b] - 1);
        return index_select(reshape(memory, {batch * steps, -1}), 0, index_tensor(rows, {batch}));
    }

    /// Teacher-forced logits [B, T, V] for decoder inputs tgt_in [B, T] (<bos> y).
    Tensor forward(const data::PaddedSequences& source, const Tensor& tgt_in) const {
        const Tensor memory = encode(source);
        return decoder_->forward(tgt_in, memory, source.key_padding_mask,
                                 initial_state(memory, source.key_padding_mask));
    }

    /// What greedy_decode / beam_search call for the next token.
    nn::DecodeStep decode_step() const {
        return decoder_->decode_step(
            [this](const Tensor& memory, const Tensor& mask) { return initial_state(memory, mask); });
    }

private:
    bool bidirectional_;
    std::shared_ptr<nn::Embedding> embedding_;
    std::shared_ptr<nn::GRU> gru_;
    std::shared_ptr<nn::Linear> bridge_;
    std::shared_ptr<nn::BahdanauDecoder> decoder_;
};

bool parse(int argc, char** argv, Options& options) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--bidirectional") {
            options.bidirectional = true;
        } else if ((arg == "--steps" || arg == "--svg") && i + 1 < argc) {
            const std::string value = argv[++i];
            if (arg == "--svg") {
                options.svg = value;
                continue;
            }
            char* end = nullptr;
            options.steps = std::strtoll(value.c_str(), &end, 10);
            if (*end != '\0' || options.steps < 1) return false;
        } else if (arg.starts_with("-") || !options.tsv.empty()) {
            return false;
        } else {
            options.tsv = arg;
        }
    }
    return !options.tsv.empty();
}

}  // namespace

int main(int argc, char** argv) try {
    Options options;
    if (!parse(argc, argv, options)) {
        std::fprintf(stderr, "usage: %s PAIRS.tsv [--steps N] [--bidirectional] [--svg FILE.svg]\n", argv[0]);
        return 2;
    }
    const auto dataset = data::TsvDataset::read(options.tsv, /*chars=*/false);
    const data::Vocabulary vocab(dataset.symbols());  // one vocabulary for both languages
    std::vector<data::Example> train, held_out;
    for (std::int64_t i = 0; i < dataset.size(); ++i) (i % 10 == 9 ? held_out : train).push_back(dataset[i]);
    if (held_out.empty()) held_out.push_back(train.back());
    fmt::print("{} training pairs, {} held out, {} words\n", train.size(), held_out.size(), vocab.size());

    Generator gen(0);
    Seq2Seq model(vocab.size(), options.bidirectional, gen);
    optim::Adam adam(model.parameters(), {.lr = 1e-3});
    const data::Batcher batcher(train, vocab, {.batch_size = kBatch, .shuffle = true});
    std::int64_t step = 0;
    for (const data::Batch& batch : batcher.batches(options.steps, gen)) {
        const data::TeacherForcing tf = data::teacher_forcing(batch.target);  // <bos> y -> y <eos>
        const Tensor logits = model.forward(batch.source, tf.decoder_input.ids);
        const Tensor loss = cross_entropy(reshape(logits, {-1, vocab.size()}), reshape(tf.labels, {-1}),
                                          {.ignore_index = data::Vocabulary::pad_id});
        adam.zero_grad();
        loss.backward();
        adam.step();
        if (++step == 1 || step % 50 == 0 || step == options.steps)
            fmt::print("step {}, loss {:.4f}\n", step, loss.item());
    }

    // Held-out sources, one at a time as the tutorial's evaluate(); the recorder gets the
    // decoder's [1, output length, source length] attention of each.
    model.eval();
    const inspect::TermOptions term{.colour = inspect::detect_term_colour(stdout),
                                    .width = inspect::terminal_width(stdout)};
    inspect::AttentionMap map;
    for (const data::Example& example : held_out) {
        const data::Batch one = data::collate({example}, vocab);
        nn::AttentionRecorder recorder(model);
        const Tensor memory = model.encode(one.source);
        const nn::Hypothesis output = nn::greedy_decode(memory, {}, model.decode_step(),
                                                        {.bos_id = data::Vocabulary::bos_id,
                                                         .eos_id = data::Vocabulary::eos_id,
                                                         .max_length = 2 * memory.size(1) + 2})
                                          .front();
        fmt::print("\n> {}\n= {}\n< {}\n", data::join(example.source, " "), data::join(example.target, " "),
                   data::join(vocab.decode(output.tokens), " "));
        const nn::RecordedAttention& record = recorder.records().back();
        map = inspect::AttentionMap{.module = record.name, .head = -1};
        map.queries = vocab.lookup_tokens(output.output_ids(data::Vocabulary::eos_id));
        map.keys = example.source;
        map.weights = record.weights.to_vector<double>();
        fmt::print("{}", inspect::render_heatmap(map, term));
    }
    if (!options.svg.empty()) {  // the last held-out pair's attention, as showAttention() plots it
        std::ofstream out(options.svg, std::ios::binary);
        out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" << inspect::render_svg(map);
        if (!out.flush()) {
            std::fprintf(stderr, "seq2seq_tutorial: cannot write %s\n", options.svg.c_str());
            return 2;
        }
        fmt::print("wrote {}\n", options.svg);
    }
} catch (const Error& e) {
    std::fprintf(stderr, "seq2seq_tutorial: %s\n", e.what());
    return 2;
}
