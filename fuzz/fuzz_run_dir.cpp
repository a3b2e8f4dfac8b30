// libFuzzer target: the run-directory loader (load_run: config.json, the checksums, the task,
// the model and its checkpoint) must load or throw attograd::Error on any directory contents.
// The input is the files separated by "\n--8<--\n": config.json, model.safetensors,
// heldout.tsv, metrics.csv. Unless the first byte is odd, the harness records the files' true
// checksums in config.json (and config.json's own), so the fuzzer gets past them to the readers
// behind.
#include "run_dir.hpp"
#include "train/run_writer.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, std::string_view bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Models the config may ask for are bounded by validate(), but a 16-layer, 4096-wide one takes
// gigabytes: a real refusal would be ResourceError, here it only slows the fuzzer down.
bool small_model(const nlohmann::json& config) {
    if (!config.is_object() || !config.contains("model") || !config["model"].is_object()) return true;
    const auto& m = config["model"];
    const auto at_most = [&](const char* key, std::int64_t limit) {
        return !m.contains(key) || !m[key].is_number_integer() || m[key].get<std::int64_t>() <= limit;
    };
    return at_most("embed_dim", 64) && at_most("ffn_dim", 128) && at_most("layers", 3) &&
           at_most("decoder_layers", 3) && at_most("max_source_len", 64) && at_most("max_target_len", 64);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool keep_checksums = (data[0] & 1) != 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::vector<std::string_view> parts;
    constexpr std::string_view separator = "\n--8<--\n";
    for (std::size_t begin = 0;;) {
        const std::size_t end = input.find(separator, begin);
        parts.push_back(
            input.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
        if (end == std::string_view::npos || parts.size() == 4) break;
        begin = end + separator.size();
    }
    static const fs::path dir =
        fs::temp_directory_path() / ("attograd-fuzz-run-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const char* names[] = {"config.json", "model.safetensors", "heldout.tsv", "metrics.csv"};
    for (std::size_t i = 1; i < parts.size(); ++i) write(dir / names[i], parts[i]);

    std::string config(parts[0]);
    try {
        attograd::check_json_depth(config, 64, "fuzz");
        auto json = nlohmann::json::parse(config);
        if (!small_model(json)) return 0;
        if (!keep_checksums && json.is_object()) {
            json["files"] = nlohmann::json::object();
            for (std::size_t i = 1; i < parts.size(); ++i) {
                json["files"][names[i]] = {{"bytes", parts[i].size()},
                                           {"fnv1a64", attograd::file_checksum(dir / names[i])}};
            }
            json[attograd::train::config_checksum_field] = attograd::train::config_checksum(json);
            config = json.dump();
        }
    } catch (const std::exception&) {  // not JSON: the loader sees it as it is
    }
    write(dir / "config.json", config);
    try {
        attograd::cli::load_run(dir);
    } catch (const attograd::Error&) {
    }
    return 0;
}
