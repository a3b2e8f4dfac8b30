// AttentionRecorder: captures every attention layer's weights by module name, only while alive.
#include "attention_helpers.hpp"
#include "fixtures.hpp"

using namespace testing;

namespace {

// A two-level model: encoder.self_attn (global) and decoder.cross_attn (local-m), built from
// plain Modules so the recorder has to find the names itself.
struct Block : Module {
    std::shared_ptr<Attention> attn;
    Block(const char* name, AttentionOptions options, Generator& gen) {
        attn = register_module(name, std::make_shared<Attention>(options, gen));
    }
    std::string type_name() const override { return "Block"; }
};

struct Model : Module {
    std::shared_ptr<Block> encoder, decoder;
    explicit Model(Generator& gen) {
        encoder = register_module(
            "encoder", std::make_shared<Block>("self_attn", AttentionOptions{.query_dim = 4}, gen));
        decoder = register_module(
            "decoder",
            std::make_shared<Block>(
                "cross_attn",
                AttentionOptions{.query_dim = 4, .scoring = {.local = LocalMode::Monotonic, .window = 1}},
                gen));
    }
    std::string type_name() const override { return "Model"; }
    // Model code that knows nothing about recording; it even asks for no weights.
    Tensor forward(const Tensor& src, const Tensor& tgt) const {
        const Tensor memory = encoder->attn->forward(src, src, AttentionArgs{.need_weights = false}).output;
        return decoder->attn->forward(tgt, memory, AttentionArgs{.need_weights = false}).output;
    }
};

}  // namespace

TEST_CASE("the recorder captures every layer's weights under its module name, in call order") {
    Generator gen(1);
    Model model(gen);
    Tensor src = randn({2, 5, 4}, gen), tgt = randn({2, 3, 4}, gen);
    CHECK_FALSE(attention_recording());
    {
        AttentionRecorder recorder(model);
        CHECK(attention_recording());
        model.forward(src, tgt);
        const auto& records = recorder.records();
        REQUIRE(records.size() == 2);
        CHECK(records[0].name == "encoder.self_attn");
        CHECK(records[1].name == "decoder.cross_attn");
        CHECK(records[0].weights.shape() == Shape{2, 5, 5});
        CHECK(records[1].weights.shape() == Shape{2, 3, 5});  // dense view of the local band
        CHECK_FALSE(records[0].weights.requires_grad());
        // They are the weights the layers computed.
        const auto direct = model.encoder->attn->forward(src, src);
        CHECK(max_abs_diff(records[0].weights, direct.weights) == 0.0);
        REQUIRE(recorder.weights("encoder.self_attn").size() == 2);  // the direct call was recorded too
        CHECK(recorder.weights("decoder.cross_attn").size() == 1);
        CHECK(recorder.weights("nothing").empty());
        recorder.clear();
        CHECK(recorder.records().empty());
    }
    CHECK_FALSE(attention_recording());
}

TEST_CASE("nothing is recorded outside a recorder, and layers outside the root are ignored") {
    Generator gen(2);
    Model model(gen);
    Attention stranger({.query_dim = 4}, gen);
    Tensor src = randn({1, 4, 4}, gen);
    const auto lean = model.decoder->attn->forward(src, src, AttentionArgs{.need_weights = false});
    CHECK_FALSE(lean.weights.defined());  // no recorder: the local layer built no dense weights
    AttentionRecorder recorder(model);
    stranger.forward(src, src);
    CHECK(recorder.records().empty());
}

TEST_CASE("recorders nest: the innermost one receives the records") {
    Generator gen(3);
    Model model(gen);
    Tensor src = randn({1, 4, 4}, gen);
    AttentionRecorder outer(model);
    {
        AttentionRecorder inner(*model.encoder);  // names relative to the encoder
        model.encoder->attn->forward(src, src);
        REQUIRE(inner.records().size() == 1);
        CHECK(inner.records()[0].name == "self_attn");
    }
    CHECK(outer.records().empty());
    model.encoder->attn->forward(src, src);
    REQUIRE(outer.records().size() == 1);
    CHECK(outer.records()[0].name == "encoder.self_attn");
}
