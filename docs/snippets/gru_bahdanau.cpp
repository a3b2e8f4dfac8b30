// A GRU encoder wired into nn::BahdanauDecoder (Bahdanau et al. 2015): the bidirectional GRU's
// outputs [B, S, 2H] are the annotations h_j, s_0 = tanh(W_s h<-_1) starts the decoder, the
// source padding is skipped by the lengths and masked in the attention, and greedy_decode runs
// the trained decoder.
#include <attograd/attograd.hpp>
using namespace attograd;

int main() {
    Generator gen(0);
    const std::int64_t V = 10, E = 16, H = 32;  // ids 0 pad, 1 bos, 2 eos (data::Vocabulary's), 3..9 words
    nn::Embedding embedding({.num_embeddings = V, .embedding_dim = E}, gen);
    nn::GRU encoder({.input_size = E, .hidden_size = H, .bidirectional = true}, gen);
    nn::Linear bridge({.in_features = H, .out_features = H}, gen);  // W_s
    nn::BahdanauDecoder decoder({.vocab_size = V, .embedding_dim = E, .hidden_size = H, .memory_dim = 2 * H},
                                gen);
    // s_0 [B, H] from the annotations: the backward direction's state at the first position
    const auto initial_state = [&](const Tensor& memory, const Tensor& /*mask*/) {
        return tanh(bridge.forward(narrow(select(memory, 1, 0), 1, H, H)));
    };
    const auto encode = [&](const data::PaddedSequences& source) {  // -> h_j [B, S, 2H], 0 past each length
        return encoder.forward(embedding.forward(source.ids), {}, source.lengths).output;
    };

    // Learn to reverse two sources of different lengths (teacher-forced: <bos> y -> y <eos>).
    const data::PaddedSequences source = data::pad_sequences({{3, 4, 5, 6}, {7, 8, 9}});
    const data::TeacherForcing tf = data::teacher_forcing({{6, 5, 4, 3}, {9, 8, 7}});
    std::vector<Tensor> parameters;
    for (const nn::Module* m :
         std::initializer_list<const nn::Module*>{&embedding, &encoder, &bridge, &decoder})
        for (const Tensor& p : m->parameters()) parameters.push_back(p);
    optim::Adam adam(parameters, {.lr = 1e-2});
    for (int step = 0; step < 150; ++step) {
        const Tensor memory = encode(source);
        const Tensor logits = decoder.forward(tf.decoder_input.ids, memory, source.key_padding_mask,
                                              initial_state(memory, source.key_padding_mask));  // [B, T, V]
        const Tensor loss = cross_entropy(reshape(logits, {-1, V}), reshape(tf.labels, {-1}),
                                          {.ignore_index = data::Vocabulary::pad_id});
        adam.zero_grad();
        loss.backward();
        adam.step();
        if (step % 50 == 0) fmt::print("step {}, loss {:.4f}\n", step, loss.item());
    }

    // Greedy decoding; decode_model carries s_{i-1} and the projected keys from step to step.
    const auto outputs =
        nn::greedy_decode(encode(source), source.key_padding_mask, decoder.decode_model(initial_state),
                          {.bos_id = data::Vocabulary::bos_id, .eos_id = data::Vocabulary::eos_id});
    for (const nn::Hypothesis& h : outputs) fmt::print("decoded {}\n", fmt::join(h.tokens, " "));
    const bool reversed = outputs[0].tokens == std::vector<std::int64_t>{6, 5, 4, 3} &&
                          outputs[1].tokens == std::vector<std::int64_t>{9, 8, 7};
    return reversed ? 0 : 1;
}
