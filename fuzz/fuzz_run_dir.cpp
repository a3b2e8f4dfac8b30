// libFuzzer target: resuming a run directory with the library's Trainer (train/: config.json
// and its checksums, the progress state of the Trainer and its callbacks, the model's and the
// optimizer's checkpoints, the CSV log) must resume or throw attograd::Error on any directory
// contents. The input is the files of fuzzing::kRunFiles separated by "\n--8<--\n". Unless
// the first byte is odd, the harness records the files' true checksums in config.json (and
// config.json's own), so the fuzzer gets past them to the readers behind.
#include "linear_run.hpp"

#include "core/input_file.hpp"
#include "train/run_writer.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;
using attograd::fuzzing::kRunFiles;

void write(const fs::path& path, std::string_view bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The input's parts: at most one per run file.
std::vector<std::string_view> split(std::string_view input) {
    constexpr std::string_view separator = "\n--8<--\n";
    std::vector<std::string_view> parts;
    for (std::size_t begin = 0;;) {
        const std::size_t end = input.find(separator, begin);
        parts.push_back(
            input.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
        if (end == std::string_view::npos || parts.size() == std::size(kRunFiles)) return parts;
        begin = end + separator.size();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool keep_checksums = (data[0] & 1) != 0;
    const auto parts = split(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    static const fs::path dir =
        fs::temp_directory_path() / ("attograd-fuzz-run-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (std::size_t i = 1; i < parts.size(); ++i) write(dir / kRunFiles[i], parts[i]);

    std::string config(parts[0]);
    try {
        attograd::check_json_depth(config, 64, "fuzz");
        auto json = nlohmann::json::parse(config);
        if (!keep_checksums && json.is_object()) {
            json["files"] = nlohmann::json::object();
            for (std::size_t i = 1; i < parts.size(); ++i) {
                json["files"][kRunFiles[i]] = {{"bytes", parts[i].size()},
                                               {"fnv1a64", attograd::file_checksum(dir / kRunFiles[i])}};
            }
            json[attograd::train::config_checksum_field] = attograd::train::config_checksum(json);
            config = json.dump();
        }
    } catch (const std::exception&) {  // not JSON: the Trainer sees it as it is
    }
    write(dir / kRunFiles[0], config);
    try {
        // A few steps past the corpus runs' 2, so that a resumed run also trains and saves.
        attograd::fuzzing::LinearRun(dir, 4).fit(dir);
    } catch (const attograd::Error&) {
    }
    return 0;
}
