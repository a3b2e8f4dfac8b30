// The charlm task: fortune-format texts read, normalised to one line each, split into training
// and held-out text, and cut into windows.
#include "data/char_lm.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "data/text.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

namespace attograd::data {
namespace {

constexpr const char* fortunes_dir = "/usr/share/games/fortunes/";
constexpr std::size_t max_file_bytes = std::size_t{64} << 20;  // a text, not a corpus

// The texts of one fortune-format file, in order, each normalised to one line.
std::vector<std::string> read_texts(const std::string& path) {
    AG_CHECK(std::filesystem::exists(path), IoError, "charlm: cannot read '{}': no such file{}", path,
             path.rfind(fortunes_dir, 0) == 0 ? " (install the Debian package fortunes-min: make deps)" : "");
    const std::string bytes = InputFile(path, "charlm: " + path).read_all(max_file_bytes);
    AG_CHECK(is_valid_utf8(bytes), ValueError, "charlm: '{}' is not UTF-8 text", path);
    std::vector<std::string> texts;
    std::string text;
    bool space = false;
    auto finish = [&] {
        if (!text.empty()) texts.push_back(text);
        text.clear();
        space = false;
    };
    std::size_t start = 0;
    while (start < bytes.size()) {
        std::size_t end = bytes.find('\n', start);
        if (end == std::string::npos) end = bytes.size();
        const std::string_view line = std::string_view(bytes).substr(start, end - start);
        start = end + 1;
        if (trim(line) == "%") {
            finish();
            continue;
        }
        space = !text.empty();  // the line break
        for (std::size_t i = 0; i < line.size();) {
            // Spaces, tabs and every other control character separate words like a line break.
            if (const std::size_t n = control_length(line, i); n > 0 || line[i] == ' ') {
                space = !text.empty();
                i += std::max<std::size_t>(n, 1);
                continue;
            }
            if (space) text += ' ';
            space = false;
            text += line[i++];
        }
    }
    finish();
    return texts;
}

class CharLMTask final : public Task {
public:
    explicit CharLMTask(const CharLMOptions& o) : context_(o.context) {
        AG_CHECK(o.context >= 1, ValueError, "charlm: context must be >= 1, got {}", o.context);
        AG_CHECK(!o.paths.empty(), ValueError, "charlm: no text file given");
        std::vector<std::string> texts;
        for (const auto& path : o.paths) {
            for (auto& t : read_texts(path)) texts.push_back(std::move(t));
        }
        std::string train_text, held_text;
        for (std::size_t i = 0; i < texts.size(); ++i) {
            std::string& into = i % 10 == 9 ? held_text : train_text;
            if (!into.empty()) into += " % ";
            into += texts[i];
        }
        train_ = split_chars(train_text);
        const std::vector<std::string> held = split_chars(held_text);
        const auto need = static_cast<std::size_t>(o.context) + 1;
        AG_CHECK(
            train_.size() >= need && held.size() >= need, ValueError,
            "charlm: {} texts give {} training and {} held-out characters (every 10th text is held out); "
            "context {} needs at least {} of each",
            texts.size(), train_.size(), held.size(), o.context, need);
        std::set<std::string> chars(train_.begin(), train_.end());
        chars.insert(held.begin(), held.end());
        symbols_.assign(chars.begin(), chars.end());
        for (std::size_t s = 0; s + need <= held.size() && held_out_.size() < GeneratedTask::held_out_size;
             s += need)
            held_out_.push_back(window(held, s));

        info_.name = "charlm";
        info_.description = "predict the next character of English text (Debian's fortune cookies)";
        info_.example = "Advancement in positio -> dvancement in position";
        info_.metric = Metric::Token;
        info_.char_level = true;
        info_.max_source_len = o.context;
        info_.min_source_len = 1;
        info_.max_target_len = o.context;
        info_.same_length = true;
    }

    std::vector<std::string> symbols() const override { return symbols_; }

    Example train_example(Generator& generator) const override {
        const auto last = static_cast<std::int64_t>(train_.size()) - context_ - 1;
        return window(train_, static_cast<std::size_t>(generator.randint(0, last + 1)));
    }

private:
    Example window(const std::vector<std::string>& chars, std::size_t start) const {
        const auto n = static_cast<std::ptrdiff_t>(context_);
        const auto first = chars.begin() + static_cast<std::ptrdiff_t>(start);
        return Example{{first, first + n}, {first + 1, first + n + 1}};
    }

    std::int64_t context_;
    std::vector<std::string> train_;
    std::vector<std::string> symbols_;
};

}  // namespace

std::vector<std::string> fortunes_paths() {
    return {std::string(fortunes_dir) + "fortunes", std::string(fortunes_dir) + "literature",
            std::string(fortunes_dir) + "riddles"};
}

std::unique_ptr<Task> make_charlm_task(const CharLMOptions& options) {
    return std::make_unique<CharLMTask>(options);
}

TaskEntry charlm_task_entry() {
    return {.name = "charlm",
            .make = [] { return make_charlm_task(); },
            .target_accuracy = 0.5,
            .defaults = {{"model.kind", "lm"},
                         {"model.layers", 2},
                         {"model.heads", 4},
                         {"model.ffn_dim", 256},
                         {"train.steps", 2000},
                         {"train.eval_every", 250}}};
}

}  // namespace attograd::data
