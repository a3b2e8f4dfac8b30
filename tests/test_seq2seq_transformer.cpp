// nn::Seq2SeqTransformer: PyTorch's tutorial model (names, logits, loss gradients), float64
// gradcheck, padding and causal masks from the ids, the recorder's names, decoding, bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

using namespace attograd;
using namespace testing;
using Inputs = std::vector<Tensor>;

namespace {

// A tiny float64 model: vocabulary 6 (0 = pad), E 4, one encoder and one decoder layer.
nn::Seq2SeqTransformerOptions tiny(std::int64_t tgt_vocab_size = 0, bool scale = false) {
    return {.vocab_size = 6,
            .tgt_vocab_size = tgt_vocab_size,
            .pad_id = 0,
            .scale_embedding = scale,
            .max_len = 16,
            .transformer = {.d_model = 4,
                            .nhead = 2,
                            .num_encoder_layers = 1,
                            .num_decoder_layers = 1,
                            .dim_feedforward = 6,
                            .dropout = 0.0,
                            .dtype = DType::Float64}};
}

std::vector<std::string> parameter_names(const nn::Module& m) {
    std::vector<std::string> names;
    for (const auto& [name, p] : m.named_parameters()) names.push_back(name);
    return names;
}

}  // namespace

TEST_CASE("Seq2SeqTransformer matches PyTorch's tutorial model: names, logits, loss and every gradient") {
    const auto fixture = load_fixture("seq2seq_transformer");
    for (const auto& c : fixture.at("cases")) {
        INFO(c.at("name").get<std::string>());
        const auto& o = c.at("options");
        nn::Seq2SeqTransformer model({.vocab_size = c.at("src_vocab"),
                                      .tgt_vocab_size = c.at("tgt_vocab"),
                                      .pad_id = o.at("pad_id"),
                                      .scale_embedding = c.at("scale"),
                                      .transformer = {.d_model = o.at("d_model"),
                                                      .nhead = o.at("nhead"),
                                                      .num_encoder_layers = o.at("num_encoder_layers"),
                                                      .num_decoder_layers = o.at("num_decoder_layers"),
                                                      .dim_feedforward = o.at("dim_feedforward"),
                                                      .dropout = 0.0,
                                                      .dtype = DType::Float64}});
        CHECK(parameter_names(model) == c.at("keys").get<std::vector<std::string>>());  // PyTorch's order
        nn::StateDict state;
        for (const auto& [name, t] : c.at("params").items()) state[name] = fixture_tensor(t);
        model.load_state_dict(state, /*strict=*/false);  // every parameter; the table `pe` stays

        const Tensor src = fixture_tensor(c.at("src"), DType::Int64);
        const Tensor tgt = fixture_tensor(c.at("tgt"), DType::Int64);
        const Tensor logits = model.forward(src, tgt);
        CHECK(scaled_diff(logits, fixture_tensor(c.at("logits"))) < 1e-10);
        const Tensor loss =
            cross_entropy(transpose(logits, 1, 2), fixture_tensor(c.at("labels"), DType::Int64),
                          {.ignore_index = o.at("pad_id")});
        CHECK(loss.item() == doctest::Approx(c.at("loss").get<double>()).epsilon(1e-12));
        loss.backward();
        for (const auto& [name, p] : model.named_parameters()) {
            INFO(name);
            CHECK(scaled_diff(p.grad(), fixture_tensor(c.at("grads").at(name))) < 1e-10);
        }
    }
}

TEST_CASE("Seq2SeqTransformer passes float64 gradcheck for every parameter") {
    for (const bool separate : {false, true}) {
        INFO("separate embeddings " << separate);
        Generator gen(3);
        nn::Seq2SeqTransformer model(tiny(separate ? 5 : 0, /*scale=*/separate), gen);
        randomize_parameters(model, 40);
        const Tensor src = index_tensor({3, 1, 4, 2, 5, 0}, {2, 3});  // source 1 padded at the end
        const Tensor tgt = index_tensor({1, 2, 4, 1, 3, 0}, {2, 3});
        // Weight 0 at the padded target (as a loss ignores it): the pad row of the embedding gets
        // no gradient by design (padding_idx), and elsewhere padding reaches no weighted output.
        const Tensor real = to_dtype(reshape(ne(tgt, 0.0), {2, 3, 1}), DType::Float64);
        const Tensor r = rand64({2, 3, separate ? 5 : 6}, 9).detach() * real;
        auto f = [&](const Inputs&) { return sum(model.forward(src, tgt) * r); };
        CHECK_GRADCHECK(f, with_parameters(model, {}));
    }
}

TEST_CASE("Seq2SeqTransformer state_dict keys, shared or separate embeddings, and the recorder's names") {
    Generator gen(1);
    nn::Seq2SeqTransformer shared(tiny(), gen);
    const auto names = parameter_names(shared);
    CHECK(names.front() == "embedding.weight");
    CHECK(names[names.size() - 2] == "generator.weight");
    CHECK(names.back() == "generator.bias");
    CHECK(shared.state_dict().count("positional_encoding.pe") == 1);  // a buffer, not a parameter
    CHECK(shared.state_dict().at("generator.weight").shape() == Shape{6, 4});
    CHECK(std::count(names.begin(), names.end(),
                     "transformer.decoder.layers.0.multihead_attn.in_proj_weight") == 1);

    nn::Seq2SeqTransformer separate(tiny(9), gen);
    const auto separate_names = parameter_names(separate);
    CHECK(separate_names[0] == "src_embedding.weight");
    CHECK(separate_names[1] == "tgt_embedding.weight");
    CHECK(separate.state_dict().at("tgt_embedding.weight").shape() == Shape{9, 4});
    CHECK(separate.state_dict().at("generator.weight").shape() == Shape{9, 4});
    CHECK(separate.state_dict().at("src_embedding.weight").shape() == Shape{6, 4});

    // The pad row of the embedding starts at zero (Embedding's padding_idx).
    const auto pad_row = narrow(shared.state_dict().at("embedding.weight"), 0, 0, 1).to_vector<double>();
    CHECK(std::all_of(pad_row.begin(), pad_row.end(), [](double v) { return v == 0.0; }));

    const std::int64_t B = 2, S = 3, T = 4;
    nn::AttentionRecorder recorder(shared);
    (void)shared.forward(index_tensor({3, 1, 4, 2, 5, 0}, {B, S}),
                         index_tensor({1, 2, 4, 3, 1, 5, 2, 0}, {B, T}));
    std::vector<std::string> recorded;
    for (const auto& r : recorder.records()) recorded.push_back(r.name);
    CHECK(recorded == std::vector<std::string>{"transformer.encoder.layers.0.self_attn",
                                               "transformer.decoder.layers.0.self_attn",
                                               "transformer.decoder.layers.0.multihead_attn"});
    const auto cross = recorder.weights("transformer.decoder.layers.0.multihead_attn");
    REQUIRE(cross.size() == 1);
    CHECK(cross[0].shape() == Shape{B, 2, T, S});
    // The padded source position of batch 1 gets no cross-attention; the causal mask holds in the
    // decoder's self-attention (no weight above the diagonal).
    for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t t = 0; t < T; ++t) CHECK(cross[0].at({1, h, t, S - 1}) == 0.0);
    const Tensor self = recorder.weights("transformer.decoder.layers.0.self_attn")[0];
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t s = t + 1; s < T; ++s) CHECK(self.at({0, 0, t, s}) == 0.0);
}

TEST_CASE("Seq2SeqTransformer masks pad ids: padding a source or a target changes no real logit") {
    Generator gen(2);
    nn::Seq2SeqTransformer model(tiny(), gen);
    randomize_parameters(model, 50);
    const Tensor tgt = index_tensor({1, 3, 2}, {1, 3});
    const Tensor short_src = index_tensor({4, 2, 5}, {1, 3});
    const Tensor padded_src = index_tensor({4, 2, 5, 0, 0}, {1, 5});
    const Tensor logits = model.forward(short_src, tgt);
    CHECK(max_abs_diff(logits, model.forward(padded_src, tgt)) < 1e-12);
    // Causal: the logits of a position do not depend on later targets, padding or not.
    const Tensor longer = model.forward(short_src, index_tensor({1, 3, 2, 4, 0}, {1, 5}));
    CHECK(max_abs_diff(logits, narrow(longer, 1, 0, 3)) < 1e-12);
    // Without a pad id nothing is masked: the padded source changes the output.
    nn::Seq2SeqTransformerOptions unpadded = tiny();
    unpadded.pad_id = -1;
    nn::Seq2SeqTransformer plain(unpadded, gen);
    randomize_parameters(plain, 50);
    CHECK_FALSE(plain.key_padding_mask(padded_src).defined());
    CHECK(max_abs_diff(plain.forward(short_src, tgt), plain.forward(padded_src, tgt)) > 1e-6);
    CHECK(model.key_padding_mask(padded_src).to_vector<double>() == std::vector<double>{0, 0, 0, 1, 1});
}

TEST_CASE("Seq2SeqTransformer decodes through nn::beam_search and nn::greedy_decode") {
    Generator gen(4);
    nn::Seq2SeqTransformer model(tiny(), gen);
    randomize_parameters(model, 60, 1.0);
    model.eval();
    const Tensor src = index_tensor({3, 4, 5, 2, 3, 0}, {2, 3});
    const nn::DecodeOptions options{.bos_id = 1, .eos_id = 2, .max_length = 5, .beam_size = 3};
    const auto beams = model.beam_search(src, options);
    const auto by_hand =
        nn::beam_search(model.encode(src), model.key_padding_mask(src), model.decode_step(), options);
    REQUIRE(beams.size() == 2);
    REQUIRE(by_hand.size() == 2);
    for (std::size_t b = 0; b < 2; ++b) {
        CHECK(beams[b][0].tokens == by_hand[b][0].tokens);
        CHECK(beams[b][0].log_prob == doctest::Approx(by_hand[b][0].log_prob));
    }
    const auto greedy = model.greedy_decode(src, options);
    const auto greedy_by_hand =
        nn::greedy_decode(model.encode(src), model.key_padding_mask(src), model.decode_step(), options);
    REQUIRE(greedy.size() == 2);
    for (std::size_t b = 0; b < 2; ++b) CHECK(greedy[b].tokens == greedy_by_hand[b].tokens);
    // The step's logits are decode's: [N, t, V].
    const Tensor memory = model.encode(src);
    CHECK(model.decode_step()(index_tensor({1, 1}, {2, 1}), memory, model.key_padding_mask(src)).shape() ==
          Shape{2, 1, 6});
}

TEST_CASE("Seq2SeqTransformer follows Module::to into float64") {
    nn::Seq2SeqTransformerOptions o = tiny();
    o.transformer.dtype = DType::Float32;
    Generator gen(5);
    nn::Seq2SeqTransformer model(o, gen);
    model.to(DType::Float64);
    CHECK(model.options().transformer.dtype == DType::Float64);
    const Tensor logits = model.forward(index_tensor({3, 4}, {1, 2}), index_tensor({1, 3, 5}, {1, 3}));
    CHECK(logits.dtype() == DType::Float64);
    CHECK(all_finite(logits));
}

TEST_CASE("Seq2SeqTransformer rejects bad options and inputs, naming the argument and the shapes") {
    using O = nn::Seq2SeqTransformerOptions;
    const nn::TransformerOptions arch = tiny().transformer;
    CHECK_THROWS_WITH_AS(nn::Seq2SeqTransformer(O{.vocab_size = 0, .transformer = arch}),
                         doctest::Contains("Seq2SeqTransformer: vocab_size must be >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(
        nn::Seq2SeqTransformer(O{.vocab_size = 5, .tgt_vocab_size = -2, .transformer = arch}),
        doctest::Contains("tgt_vocab_size must be >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Seq2SeqTransformer(O{.vocab_size = 5, .pad_id = 5, .transformer = arch}),
                         doctest::Contains("Seq2SeqTransformer: pad_id 5 must be -1 or an id"), ValueError);
    CHECK_THROWS_WITH_AS(
        nn::Seq2SeqTransformer(O{.vocab_size = 5, .tgt_vocab_size = 3, .pad_id = 3, .transformer = arch}),
        doctest::Contains("pad_id 3 must be -1 or an id of both vocabularies (5 and 3)"), ValueError);
    CHECK_THROWS_WITH_AS(nn::Seq2SeqTransformer(O{.vocab_size = 5, .max_len = 0, .transformer = arch}),
                         doctest::Contains("max_len must be >= 1"), ValueError);
    CHECK_THROWS_WITH_AS(
        nn::Seq2SeqTransformer(O{.vocab_size = 5, .transformer = {.d_model = 4, .nhead = 3}}),
        doctest::Contains("Transformer: nhead 3 must be >= 1 and divide d_model 4"), ValueError);

    Generator gen(6);
    const nn::Seq2SeqTransformer model(tiny(), gen);
    const Tensor src = index_tensor({3, 4, 5, 2}, {2, 2}), tgt = index_tensor({1, 3, 1, 4}, {2, 2});
    CHECK_THROWS_WITH_AS(
        model.encode(index_tensor({3, 4}, {2})),
        doctest::Contains("Seq2SeqTransformer::encode: src must be ids [batch, length], got [2]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(model.encode(Tensor{}), doctest::Contains("got an undefined tensor"), ShapeError);
    CHECK_THROWS_WITH_AS(model.encode(ones({2, 2})),
                         doctest::Contains("Seq2SeqTransformer::encode: src must be int64, got float32"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(
        model.encode(index_tensor({3, 6}, {1, 2})),
        doctest::Contains("Seq2SeqTransformer::encode: src [1, 2] holds id 6 at [0, 1], outside "
                          "[0, 6)"),
        IndexError);
    CHECK_THROWS_WITH_AS(model.encode(index_tensor({-1}, {1, 1})), doctest::Contains("holds id -1"),
                         IndexError);
    CHECK_THROWS_WITH_AS(model.encode(zeros({1, 17}, {.dtype = DType::Int64})),
                         doctest::Contains("src [1, 17] is longer than max_len 16"), ShapeError);
    CHECK_THROWS_WITH_AS(
        model.forward(src, index_tensor({1, 3, 4}, {3, 1})),
        doctest::Contains("Seq2SeqTransformer::forward: the batch sizes of src [2, 2] and tgt "
                          "[3, 1] must be equal"),
        ShapeError);
    CHECK_THROWS_WITH_AS(model.decode(index_tensor({1, 9}, {1, 2}), model.encode(src)),
                         doctest::Contains("Seq2SeqTransformer::decode: tgt [1, 2] holds id 9"), IndexError);
    CHECK_THROWS_WITH_AS(model.decode(tgt, model.encode(src), ones({2, 5}, {.dtype = DType::Bool})),
                         doctest::Contains("mask"), ShapeError);
}

TEST_CASE("Seq2SeqTransformer refuses length-0 sequences, naming itself and the argument") {
    Generator gen(7);
    nn::Seq2SeqTransformer model(tiny(), gen);
    model.eval();
    const Tensor src = index_tensor({3, 4, 5, 2}, {2, 2}), empty_ids = zeros({2, 0}, {.dtype = DType::Int64});
    CHECK_THROWS_WITH_AS(model.encode(empty_ids),
                         doctest::Contains("Seq2SeqTransformer::encode: src must hold at least one position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(model.forward(src, empty_ids),
                         doctest::Contains("Seq2SeqTransformer::decode: tgt must hold at least one position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(model.beam_search(empty_ids, {.bos_id = 1, .eos_id = 2}),
                         doctest::Contains("Seq2SeqTransformer::encode: src must hold at least one position"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(model.greedy_decode(empty_ids, {.bos_id = 1, .eos_id = 2}),
                         doctest::Contains("Seq2SeqTransformer::encode: src must hold at least one position"),
                         ShapeError);
}

TEST_CASE("Seq2SeqTransformer's decoders check bos_id and eos_id against the target vocabulary up front") {
    Generator gen(8);
    nn::Seq2SeqTransformer model(tiny(), gen);  // V = 6, pad_id 0
    model.eval();
    const Tensor src = index_tensor({3, 4, 5, 2}, {2, 2});
    CHECK_THROWS_WITH_AS(model.greedy_decode(src, {.bos_id = 6, .eos_id = 2}),
                         doctest::Contains("Seq2SeqTransformer::greedy_decode: bos_id 6 must be an id of the "
                                           "target vocabulary [0, 6)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(model.beam_search(src, {.bos_id = 1, .eos_id = 10}),
                         doctest::Contains("Seq2SeqTransformer::beam_search: eos_id 10 must be an id of the "
                                           "target vocabulary [0, 6)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(model.beam_search(src, {.bos_id = -1, .eos_id = 2}),
                         doctest::Contains("Seq2SeqTransformer::beam_search: bos_id -1"), ValueError);
    CHECK_THROWS_WITH_AS(
        model.greedy_decode(src, {.bos_id = 0, .eos_id = 2}),
        doctest::Contains("Seq2SeqTransformer::greedy_decode: bos_id 0 must differ from pad_id 0"),
        ValueError);
    // a separate target vocabulary is the one checked
    nn::Seq2SeqTransformer two(tiny(3), gen);
    two.eval();
    CHECK_THROWS_WITH_AS(two.greedy_decode(src, {.bos_id = 1, .eos_id = 4}),
                         doctest::Contains("eos_id 4 must be an id of the target vocabulary [0, 3)"),
                         ValueError);
    CHECK(two.greedy_decode(src, {.bos_id = 1, .eos_id = 2, .max_length = 3}).size() == 2);
}

TEST_CASE("Seq2SeqTransformer names the option that would make a parameter or buffer too large") {
    using O = nn::Seq2SeqTransformerOptions;
    const nn::TransformerOptions arch = tiny().transformer;  // d_model 4, float64
    CHECK_THROWS_WITH_AS(
        nn::Seq2SeqTransformer(O{.vocab_size = 10, .max_len = std::int64_t{1} << 40, .transformer = arch}),
        doctest::Contains("Seq2SeqTransformer: max_len 1099511627776 makes positional_encoding.pe "
                          "[1099511627776, 4] (float64), which needs"),
        ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::Seq2SeqTransformer(O{.vocab_size = std::int64_t{1} << 61, .transformer = arch}),
        doctest::Contains("Seq2SeqTransformer: vocab_size 2305843009213693952 makes "
                          "embedding.weight [2305843009213693952, 4], which has too many elements"),
        ResourceError);
    CHECK_THROWS_WITH_AS(
        nn::Seq2SeqTransformer(
            O{.vocab_size = 10, .tgt_vocab_size = std::int64_t{1} << 50, .transformer = arch}),
        doctest::Contains("Seq2SeqTransformer: tgt_vocab_size 1125899906842624 makes generator.weight"),
        ResourceError);
    // the default max_len of PyTorch's tutorial with a PyTorch-sized model still builds
    CHECK_NOTHROW(nn::Seq2SeqTransformer(O{.vocab_size = 10, .transformer = arch}));
}
