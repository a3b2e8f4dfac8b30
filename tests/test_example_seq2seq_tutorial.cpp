// The seq2seq tutorial example (examples/seq2seq_tutorial.cpp) trains on a toy TSV, decodes the
// held-out pairs and draws their attention.
#include "example_program.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

using testing::run_command;

double loss_at(const std::string& text, int step) {
    std::smatch m;
    const std::regex pattern("step " + std::to_string(step) + ", loss ([0-9.]+)");
    REQUIRE_MESSAGE(std::regex_search(text, m, pattern), "no loss at step " << step);
    return std::stod(m[1].str());
}

const std::string kPairs = std::string(ATTOGRAD_FIXTURE_DIR) + "/toy_pairs.tsv";

}  // namespace

TEST_CASE("seq2seq_tutorial trains the GRU encoder and Bahdanau decoder, decodes and draws the attention") {
    for (const std::string flags : {"", " --bidirectional"}) {
        INFO("flags: " << flags);
        testing::TempDir dir;
        const std::string svg = dir / "attention.svg";
        const auto [code, out] = run_command("NO_COLOR=1 " + std::string(SEQ2SEQ_TUTORIAL_PROGRAM) + " " +
                                             kPairs + " --steps 150 --svg " + svg + flags);
        INFO(out);
        REQUIRE(code == 0);
        CHECK(out.find("33 training pairs, 3 held out") != std::string::npos);
        CHECK(loss_at(out, 150) < 0.25 * loss_at(out, 1));
        // each held-out source is decoded and its attention drawn over the source words
        CHECK(out.find("> the black dog sleeps") != std::string::npos);
        CHECK(out.find("decoder.attention") != std::string::npos);
        CHECK(out.find("scale: 0") != std::string::npos);
        std::ifstream in(svg);
        std::stringstream content;
        content << in.rdbuf();
        CHECK(content.str().find("<svg") != std::string::npos);
        CHECK(content.str().find("sleeps") ==
              std::string::npos);  // the last held-out pair: "the black fish runs"
        CHECK(content.str().find("fish") != std::string::npos);
    }
}

TEST_CASE("seq2seq_tutorial refuses a missing file and bad arguments with exit 2") {
    CHECK(run_command(std::string(SEQ2SEQ_TUTORIAL_PROGRAM) + " 2>/dev/null").first == 2);
    CHECK(
        run_command(std::string(SEQ2SEQ_TUTORIAL_PROGRAM) + " " + kPairs + " --steps 0 2>/dev/null").first ==
        2);
    CHECK(run_command(std::string(SEQ2SEQ_TUTORIAL_PROGRAM) + " /nonexistent/pairs.tsv 2>/dev/null").first ==
          2);
}
