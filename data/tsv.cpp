// TSV datasets: reading `source<TAB>target` lines, and user examples as a task.
#include "data/tsv.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "data/text.hpp"
#include "data/vocabulary.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace attograd::data {

namespace {

class DataTask final : public Task {
public:
    DataTask(std::vector<Example> train, std::vector<Example> held_out, bool chars,
             std::vector<std::string> symbols)
        : train_(std::move(train)), symbols_(std::move(symbols)) {
        held_out_ = std::move(held_out);
        info_.name = "data";
        info_.description = "your TSV file of source<TAB>target lines";
        info_.metric = Metric::Sequence;
        info_.char_level = chars;
        info_.same_length = true;
        // The shortest training source; a saved run's task has only its held-out examples.
        info_.min_source_len = std::numeric_limits<std::int64_t>::max();
        for (const auto& example : train_.empty() ? held_out_ : train_)
            info_.min_source_len = std::min<std::int64_t>(info_.min_source_len, std::ssize(example.source));
        if (info_.min_source_len == std::numeric_limits<std::int64_t>::max()) info_.min_source_len = 1;
        for (const auto* split : {&train_, &held_out_}) {
            for (const auto& example : *split) {
                info_.max_source_len =
                    std::max<std::int64_t>(info_.max_source_len, std::ssize(example.source));
                info_.max_target_len =
                    std::max<std::int64_t>(info_.max_target_len, std::ssize(example.target));
                info_.same_length = info_.same_length && example.source.size() == example.target.size();
            }
        }
    }

    std::vector<std::string> symbols() const override { return symbols_; }

    Example train_example(Generator& generator) const override {
        AG_CHECK(!train_.empty(), ValueError, "data: this run holds only its held-out examples");
        return train_[static_cast<std::size_t>(generator.randint(0, std::ssize(train_)))];
    }

private:
    std::vector<Example> train_;
    std::vector<std::string> symbols_;
};

}  // namespace

TsvDataset TsvDataset::parse(std::string_view text, bool chars, const std::string& name) {
    std::vector<Example> examples;
    std::int64_t number = 0;
    text = strip_bom(text);  // a BOM would otherwise be part of the first source's first token
    while (!text.empty()) {
        ++number;
        const auto newline = text.find('\n');
        std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (trim(line).empty()) continue;
        AG_CHECK(is_valid_utf8(line), ValueError, "{}:{}: not valid UTF-8", name, number);
        AG_CHECK(
            line.find('\r') == std::string_view::npos, ValueError,
            "{}:{}: holds a carriage return inside the line (lines end in \\n or \\r\\n; a file whose lines "
            "end in \\r alone reads as one line)",
            name, number);
        const auto tab = line.find('\t');
        AG_CHECK(tab != std::string_view::npos, ValueError,
                 "{}:{}: expected 'source<TAB>target', found no tab", name, number);
        AG_CHECK(line.find('\t', tab + 1) == std::string_view::npos, ValueError,
                 "{}:{}: expected 'source<TAB>target', found more than one tab", name, number);
        const auto tokens = [&](std::string_view side) {
            return chars ? split_chars(side) : split_whitespace(side);
        };
        Example example{tokens(line.substr(0, tab)), tokens(line.substr(tab + 1))};
        AG_CHECK(!example.source.empty(), ValueError, "{}:{}: the source is empty", name, number);
        AG_CHECK(!example.target.empty(), ValueError, "{}:{}: the target is empty", name, number);
        for (const auto* side : {&example.source, &example.target}) {
            for (const auto& token : *side) {
                AG_CHECK(!Vocabulary::is_reserved(token), ValueError,
                         "{}:{}: the {} holds '{}', a reserved token (<pad> <bos> <eos> <unk> are attograd's "
                         "special "
                         "tokens and are not read from files); rename it",
                         name, number, side == &example.source ? "source" : "target", token);
                const std::string problem = Vocabulary::token_problem(token);
                AG_CHECK(problem.empty(), ValueError, "{}:{}: the {} token '{}' {}", name, number,
                         side == &example.source ? "source" : "target", escape_control(token), problem);
            }
        }
        examples.push_back(std::move(example));
    }
    AG_CHECK(!examples.empty(), ValueError, "{}: no examples (expected source<TAB>target lines)", name);
    return TsvDataset(std::move(examples), chars);
}

TsvDataset TsvDataset::read(const std::filesystem::path& path, bool chars) {
    // Bounded, so that a file without newlines (or /dev/zero) cannot fill the memory; InputFile
    // refuses directories, FIFOs and devices at once.
    constexpr std::size_t max_bytes = std::size_t{256} << 20;
    const std::string text = InputFile(path, path.string()).read_all(max_bytes);
    return parse(text, chars, path.string());
}

const Example& TsvDataset::operator[](std::int64_t i) const {
    AG_CHECK(i >= 0 && i < size(), IndexError, "TsvDataset: index {} outside [0, {})", i, size());
    return examples_[static_cast<std::size_t>(i)];
}

std::vector<std::string> TsvDataset::symbols() const {
    std::set<std::string> symbols;
    for (const auto& example : examples_) {
        symbols.insert(example.source.begin(), example.source.end());
        symbols.insert(example.target.begin(), example.target.end());
    }
    return {symbols.begin(), symbols.end()};
}

std::string to_tsv(const std::vector<Example>& examples, bool chars) {
    std::string out;
    for (const auto& example : examples) {
        out += join(example.source, chars ? "" : " ") + "\t" + join(example.target, chars ? "" : " ") + "\n";
    }
    return out;
}

TaskEntry data_task_entry() {
    return {.name = "data",
            .make = {},
            .target_accuracy = 1.0,
            .defaults = {{"model.layers", 1}, {"model.decoder_layers", 1}, {"train.steps", 2000}}};
}

std::unique_ptr<Task> make_data_task(const TsvDataset& dataset) {
    const auto& examples = dataset.examples();
    // Group by source so that a source never lands in both splits.
    std::map<std::vector<std::string>, std::vector<std::size_t>> by_source;
    for (std::size_t i = 0; i < examples.size(); ++i) by_source[examples[i].source].push_back(i);
    AG_CHECK(
        by_source.size() >= 2, ValueError,
        "data: needs at least 2 examples with different sources (one is held out for evaluation), got {}",
        by_source.size());
    std::vector<const std::vector<std::size_t>*> groups;
    for (const auto& [source, indices] : by_source) groups.push_back(&indices);
    Generator generator(1006);  // fixed: the split does not depend on the training seed
    for (std::size_t i = groups.size() - 1; i > 0; --i) {
        std::swap(groups[i],
                  groups[static_cast<std::size_t>(generator.randint(0, static_cast<std::int64_t>(i) + 1))]);
    }
    const std::size_t held = std::max<std::size_t>(1, groups.size() / 10);
    std::vector<Example> train;
    std::vector<Example> held_out;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        for (const std::size_t i : *groups[g]) (g < held ? held_out : train).push_back(examples[i]);
    }
    return std::make_unique<DataTask>(std::move(train), std::move(held_out), dataset.chars(),
                                      dataset.symbols());
}

std::unique_ptr<Task> make_saved_data_task(std::vector<Example> held_out, bool chars,
                                           std::vector<std::string> symbols) {
    return std::make_unique<DataTask>(std::vector<Example>{}, std::move(held_out), chars, std::move(symbols));
}

}  // namespace attograd::data
