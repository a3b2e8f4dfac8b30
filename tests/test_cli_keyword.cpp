// The keyword tasks end to end: an attention-over-recurrent-encoder classifier learns keyword
// and attends to the cue word; on keyword-end, where the label is in the state the encoder ends
// in, the faithfulness table shows its attention does not decide the output.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace cli_test;

namespace {

// The figures of the faithfulness table's row starting with `layer` and its head 0, by column name.
std::map<std::string, double> table_row(const std::string& out, const std::string& layer) {
    std::istringstream lines(out);
    std::vector<std::string> header;
    std::map<std::string, double> row;
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::vector<std::string> cells;
        for (std::string w; words >> w;) cells.push_back(w);
        if (!cells.empty() && cells[0] == "layer") header = cells;
        if (cells.size() == header.size() && cells.size() > 2 && cells[0] == layer && cells[1] == "0") {
            for (std::size_t i = 2; i < cells.size(); ++i)
                if (cells[i] != "-") row[header[i]] = std::stod(cells[i]);
        }
    }
    return row;
}

// Trains `task` with the bidirectional GRU and Bahdanau attention (it must reach the 95 %
// target) and returns `inspect --faithfulness` over 40 held-out examples.
Outcome trained_faithfulness(const TempDir& tmp, const std::string& task) {
    const std::string dir = tmp / task;
    const Outcome trained = run({"train", "--task", task, "--model", "rnn", "--bidirectional", "--steps",
                                 "600", "--eval-every", "100", "--seed", "1", "--out", dir});
    require_ok(trained);
    INFO(trained.out);
    CHECK(trained.out.find("(target 95% reached)") != std::string::npos);
    const Outcome o = run({"inspect", "--run", dir, "--faithfulness", "--samples", "40"});
    require_ok(o);
    return o;
}

}  // namespace

TEST_CASE("keyword: a bidirectional GRU with attention learns the label and attends to the cue") {
    TempDir tmp;
    const Outcome o = trained_faithfulness(tmp, "keyword");
    INFO(o.out);
    // one decision per example: the label (every target is one token, so <eos> is no decision)
    CHECK(o.out.find("faithfulness over 40 held-out example(s), 40 decision(s)") != std::string::npos);
    const auto row = table_row(o.out, "decoder.attention");
    REQUIRE(row.count("align") == 1);
    CHECK(row.at("acc") >= 0.95);
    CHECK(row.at("align") > 0.2);                   // 1 / 25 keys by chance
    CHECK(row.at("acc") - row.at("acc_ko") > 0.2);  // knocking the attention out costs accuracy
}

TEST_CASE("keyword-end: the label is in the encoder's last state, attention does not decide it") {
    TempDir tmp;
    const Outcome o = trained_faithfulness(tmp, "keyword-end");
    INFO(o.out);
    const auto row = table_row(o.out, "decoder.attention");
    REQUIRE(row.count("perm_tvd") == 1);
    CHECK(row.at("acc") >= 0.95);
    CHECK(row.at("perm_tvd") < 0.01);                // permuting the weights changes nothing
    CHECK(row.at("acc") - row.at("acc_ko") < 0.05);  // nor does knocking the attention out
    CHECK(line_with(o.out, "decoder.attention head 0: ").find("not an explanation") != std::string::npos);
}
