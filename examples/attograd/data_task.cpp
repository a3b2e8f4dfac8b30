// User data: a TSV file of `source<TAB>target` lines as a task.
#include "data_task.hpp"

#include "file_io.hpp"
#include "core/error.hpp"
#include "text.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace attograd::cli {

namespace {

class DataTask final : public Task {
public:
    DataTask(std::vector<Example> train, std::vector<Example> held_out, bool chars,
             std::vector<std::string> symbols)
        : train_(std::move(train)), symbols_(std::move(symbols)) {
        held_out_ = std::move(held_out);
        info_.name = "data";
        info_.description = "your TSV file of source<TAB>target lines";
        info_.default_model = "seq2seq";
        info_.metric = Metric::Sequence;
        info_.target_accuracy = 1.0;
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

std::vector<Example> parse_tsv(const std::string& text, bool chars, const std::string& name) {
    std::vector<Example> examples;
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (trim(line).empty()) continue;
        AG_CHECK(is_valid_utf8(line), ValueError, "{}:{}: not valid UTF-8", name, number);
        const auto tab = line.find('\t');
        AG_CHECK(tab != std::string::npos, ValueError, "{}:{}: expected 'source<TAB>target', found no tab",
                 name, number);
        AG_CHECK(line.find('\t', tab + 1) == std::string::npos, ValueError,
                 "{}:{}: expected 'source<TAB>target', found more than one tab", name, number);
        const std::string source = line.substr(0, tab);
        const std::string target = line.substr(tab + 1);
        Example example{chars ? split_chars(source) : split_whitespace(source),
                        chars ? split_chars(target) : split_whitespace(target)};
        AG_CHECK(!example.source.empty(), ValueError, "{}:{}: the source is empty", name, number);
        AG_CHECK(!example.target.empty(), ValueError, "{}:{}: the target is empty", name, number);
        examples.push_back(std::move(example));
    }
    AG_CHECK(!examples.empty(), ValueError, "{}: no examples (expected source<TAB>target lines)", name);
    return examples;
}

std::vector<Example> read_tsv(const std::string& path, bool chars) {
    std::error_code error;
    AG_CHECK(!std::filesystem::is_directory(path, error), ValueError, "{}: is a directory, not a TSV file", path);
    // Bounded, so that a file without newlines (or /dev/zero) cannot fill the memory.
    constexpr std::size_t max_bytes = std::size_t{256} << 20;
    const std::string text = read_file(path, max_bytes);
    return parse_tsv(text, chars, path);
}

std::string to_tsv(const std::vector<Example>& examples, bool chars) {
    std::string out;
    for (const auto& example : examples) {
        out += join(example.source, chars ? "" : " ") + "\t" + join(example.target, chars ? "" : " ") + "\n";
    }
    return out;
}

std::unique_ptr<Task> make_data_task(std::vector<Example> examples, bool chars) {
    // Group by source so that a source never lands in both splits.
    std::map<std::vector<std::string>, std::vector<std::size_t>> by_source;
    std::set<std::string> symbols;
    for (std::size_t i = 0; i < examples.size(); ++i) {
        by_source[examples[i].source].push_back(i);
        symbols.insert(examples[i].source.begin(), examples[i].source.end());
        symbols.insert(examples[i].target.begin(), examples[i].target.end());
    }
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
    return std::make_unique<DataTask>(std::move(train), std::move(held_out), chars,
                                      std::vector<std::string>(symbols.begin(), symbols.end()));
}

std::unique_ptr<Task> make_saved_data_task(std::vector<Example> held_out, bool chars,
                                           std::vector<std::string> symbols) {
    return std::make_unique<DataTask>(std::vector<Example>{}, std::move(held_out), chars, std::move(symbols));
}

}  // namespace attograd::cli
