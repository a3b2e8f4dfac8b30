// The Nadaraya-Watson example (examples/nadaraya_watson.cpp) runs, learns, and draws its heatmap.
#include "example_program.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

using testing::run_command;

double number_after(const std::string& text, const std::string& pattern) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_search(text, m, std::regex(pattern)), "no match for " << pattern);
    return std::stod(m[1].str());
}

}  // namespace

TEST_CASE("nadaraya_watson trains w by SGD: the parametric loss goes down, and it draws the heatmap") {
    testing::TempDir dir;
    const std::string svg = dir / "weights.svg";
    const auto [code, out] = run_command(std::string("NO_COLOR=1 ") + NADARAYA_WATSON_PROGRAM + " " + svg);
    INFO(out);
    REQUIRE(code == 0);
    CHECK(out.find("non-parametric (Gaussian kernel, w = 1): test MSE against f") != std::string::npos);
    const double first = number_after(out, R"(epoch 1, loss ([0-9.]+))");
    const double last = number_after(out, R"(epoch 5, loss ([0-9.]+))");
    CHECK(last < first);
    CHECK(out.find("parametric: training loss went down") != std::string::npos);
    // the learned kernel is sharper than the fixed one (d2l: w grows), and both heatmaps are drawn
    CHECK(number_after(out, R"(learned w = ([0-9.]+))") > 1.0);
    CHECK(out.find("non-parametric attention: test x (rows) over training x") != std::string::npos);
    CHECK(out.find("parametric attention: test x (rows) over training x") != std::string::npos);
    std::ifstream in(svg);
    std::stringstream content;
    content << in.rdbuf();
    CHECK(content.str().find("<svg") != std::string::npos);
    CHECK(content.str().find("parametric attention") != std::string::npos);
}

TEST_CASE("nadaraya_watson refuses extra arguments with a usage line and exit 2") {
    const auto [code, out] = run_command(std::string(NADARAYA_WATSON_PROGRAM) + " a.svg b.svg 2>/dev/null");
    CHECK(code == 2);
    CHECK(out.empty());
}
