// The language-model tasks: induction's repeated segments and next-token targets; charlm's
// reading of fortune-format files, held-out split, windows and errors.
#include "core/error.hpp"
#include "data/char_lm.hpp"
#include "data/induction.hpp"
#include "data/text.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>

using namespace attograd;
using namespace attograd::data;

namespace {

// The whole sequence of a next-token example: the source, then the target's last token.
std::vector<std::string> sequence(const Example& example) {
    std::vector<std::string> x = example.source;
    x.push_back(example.target.back());
    return x;
}

// The length L in [lo, hi] of a segment that ends the sequence twice over, or 0.
std::size_t repeated_segment(const std::vector<std::string>& x, std::size_t lo, std::size_t hi) {
    for (std::size_t l = lo; l <= hi && 2 * l <= x.size(); ++l) {
        if (std::equal(x.end() - static_cast<std::ptrdiff_t>(l), x.end(),
                       x.end() - static_cast<std::ptrdiff_t>(2 * l)))
            return l;
    }
    return 0;
}

void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("induction: next-token examples whose sequence ends with a segment repeated") {
    const auto task =
        make_induction_task({.vocab_size = 5, .length = 16, .min_segment = 3, .max_segment = 8});
    CHECK(task->info().max_source_len == 15);
    CHECK(task->symbols() == std::vector<std::string>{"a", "b", "c", "d", "e"});
    Generator generator(5);
    std::set<std::size_t> lengths;
    for (int i = 0; i < 200; ++i) {
        const Example example = task->train_example(generator);
        REQUIRE(example.source.size() == 15);
        // target t is source t + 1
        CHECK(std::vector<std::string>(example.source.begin() + 1, example.source.end()) ==
              std::vector<std::string>(example.target.begin(), example.target.end() - 1));
        const std::size_t l = repeated_segment(sequence(example), 3, 8);
        CHECK(l >= 3);
        lengths.insert(l);
    }
    CHECK(lengths.size() >= 4);  // the segment length varies, so no fixed offset finds the copy
    CHECK(task->held_out().size() == GeneratedTask::held_out_size);
    CHECK(make_induction_task({.vocab_size = 5, .length = 16, .min_segment = 3, .max_segment = 8})
              ->held_out()
              .front() == task->held_out().front());
}

TEST_CASE("induction: options out of range name the option") {
    CHECK_THROWS_WITH_AS(make_induction_task({.vocab_size = 27}),
                         doctest::Contains("vocab_size must be in [2, 26]"), ValueError);
    CHECK_THROWS_WITH_AS(make_induction_task({.length = 20, .min_segment = 6, .max_segment = 11}),
                         doctest::Contains("length 20 must hold the segment twice (2 * max_segment = 22)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(make_induction_task({.min_segment = 1}),
                         doctest::Contains("min_segment 1 must be >= 2"), ValueError);
}

TEST_CASE("charlm: fortune-format texts become one line each, every 10th held out, windows of context + 1") {
    testing::TempDir dir;
    std::string file;
    for (int i = 0; i < 20; ++i)
        file += "Text " + std::string(1, static_cast<char>('A' + i)) + "\n  two\tlines\n%\n";
    write(dir / "texts", file);
    const auto task = make_charlm_task({.paths = {dir / "texts"}, .context = 6});
    CHECK(task->info().char_level);
    CHECK(task->info().max_source_len == 6);
    // The 10th and 20th texts (J, T) are held out: windows of 7 characters, cut one after the other.
    const std::string held = "Text J two lines % Text T two lines";
    REQUIRE(task->held_out().size() == held.size() / 7);
    for (std::size_t i = 0; i < task->held_out().size(); ++i) {
        CHECK(join(task->held_out()[i].source, "") == held.substr(i * 7, 6));
        CHECK(join(task->held_out()[i].target, "") == held.substr(i * 7 + 1, 6));
    }
    const std::vector<std::string> symbols = task->symbols();
    CHECK(std::find(symbols.begin(), symbols.end(), std::string("J")) !=
          symbols.end());  // held-out characters too
    CHECK(std::find(symbols.begin(), symbols.end(), std::string("\t")) == symbols.end());
    Generator generator(1);
    for (int i = 0; i < 100; ++i) {
        const Example example = task->train_example(generator);
        const std::string text = join(example.source, "") + example.target.back();
        CHECK(text.size() == 7);
        CHECK(text.find('J') == std::string::npos);
        CHECK(text.find('\n') == std::string::npos);
    }
}

TEST_CASE("charlm: missing files, too little text and bad options are clear errors") {
    CHECK_THROWS_WITH_AS(make_charlm_task({.paths = {"/usr/share/games/fortunes/no-such-file"}}),
                         doctest::Contains("install the Debian package fortunes-min"), IoError);
    testing::TempDir dir;
    CHECK_THROWS_WITH_AS(
        make_charlm_task({.paths = {dir / "missing"}}),
        doctest::Contains(("charlm: cannot read '" + (dir / "missing") + "': no such file").c_str()),
        IoError);
    write(dir / "short", "one\n%\ntwo\n");
    CHECK_THROWS_WITH_AS(
        make_charlm_task({.paths = {dir / "short"}, .context = 8}),
        doctest::Contains(
            "charlm: 2 texts give 9 training and 0 held-out characters (every 10th text is held out)"),
        ValueError);
    write(dir / "latin1", "caf\xe9\n");
    CHECK_THROWS_WITH_AS(make_charlm_task({.paths = {dir / "latin1"}}),
                         doctest::Contains("is not UTF-8 text"), ValueError);
    CHECK_THROWS_WITH_AS(make_charlm_task({.paths = {dir / "short"}, .context = 0}),
                         doctest::Contains("charlm: context must be >= 1, got 0"), ValueError);
}

TEST_CASE("charlm: the installed fortunes (Debian's fortunes-min) give a task") {
    const auto task = make_charlm_task();
    // About 9,500 held-out characters (82 texts): 143 windows of 65.
    CHECK(task->held_out().size() > 100);
    for (const Example& example : task->held_out()) CHECK(example.source.size() == 64);
    CHECK(task->symbols().size() > 60);
}
