// Runs Debian's headless Chromium on a local HTML file and returns the DOM after its scripts
// ran (--dump-dom) and Chromium's log: for the HTML report's browser test and benchmark.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace headless {

inline constexpr const char* chromium_path = "/usr/bin/chromium";

/// True when Chromium is installed where Debian puts it.
inline bool chromium_available() { return ::access(chromium_path, X_OK) == 0; }

struct DumpedPage {
    int status = -1;       ///< std::system's status (0: Chromium exited normally)
    std::string dom;       ///< the serialised DOM
    std::string log;       ///< Chromium's stderr: console messages and uncaught script errors
    double seconds = 0.0;  ///< wall time of the whole Chromium run
};

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// Chromium, offline and with a fresh profile, loads `page` (file://) and prints its DOM once
/// the page is idle or `virtual_time_budget_ms` of virtual time have passed (0: after the
/// load event, in real time), in a window `window_width` pixels wide (0: Chromium's default).
/// Killed after 60 s.
inline DumpedPage dump_dom(const std::filesystem::path& page, int virtual_time_budget_ms,
                           int window_width = 0) {
    std::string dir = (std::filesystem::temp_directory_path() / "attograd-chromium-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) throw std::runtime_error("dump_dom: mkdtemp failed");
    const std::filesystem::path out = std::filesystem::path(dir) / "dom.html";
    const std::filesystem::path err = std::filesystem::path(dir) / "log.txt";
    std::string budget =
        virtual_time_budget_ms > 0 ? fmt::format("--virtual-time-budget={}", virtual_time_budget_ms) : "";
    if (window_width > 0) budget += fmt::format(" --window-size={},900", window_width);
    const std::string command = fmt::format(
        "timeout 60 {} --headless --no-sandbox --disable-gpu --disable-background-networking "
        "--disable-component-update --disable-sync --no-first-run --user-data-dir='{}/profile' "
        "--enable-logging=stderr --v=0 {} --dump-dom 'file://{}' > '{}' 2> '{}'",
        chromium_path, dir, budget, std::filesystem::absolute(page).string(), out.string(), err.string());
    const auto start = std::chrono::steady_clock::now();
    DumpedPage result;
    result.status = std::system(command.c_str());
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.dom = read_text(out);
    result.log = read_text(err);
    std::filesystem::remove_all(dir);
    return result;
}

/// The text between `<tag id="id">` and the next `</tag>` in `dom`, with the five XML
/// character references decoded; "" when absent.
inline std::string element_text(const std::string& dom, const std::string& tag, const std::string& id) {
    const std::string open = fmt::format("<{} id=\"{}\">", tag, id);
    const auto begin = dom.rfind(open);  // the last: a script may mention the tag in its text
    if (begin == std::string::npos) return "";
    const auto end = dom.find("</" + tag + ">", begin);
    const std::string raw = dom.substr(begin + open.size(), end - begin - open.size());
    std::string text;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        bool replaced = false;
        for (const auto& [entity, c] :
             {std::pair{"&lt;", '<'}, std::pair{"&gt;", '>'}, std::pair{"&quot;", '"'},
              std::pair{"&#39;", '\''}, std::pair{"&amp;", '&'}}) {
            const std::string e = entity;
            if (raw.compare(i, e.size(), e) == 0) {
                text += c;
                i += e.size() - 1;
                replaced = true;
                break;
            }
        }
        if (!replaced) text += raw[i];
    }
    return text;
}

}  // namespace headless
