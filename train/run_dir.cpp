// Reading a run directory: bounded config.json, finite checkpoints, one generation per read.
#include "train/run_dir.hpp"

#include "core/detail/held_directory.hpp"
#include "core/input_file.hpp"
#include "core/ops_reduce.hpp"
#include "core/protected_path.hpp"
#include "core/serialization.hpp"
#include "data/text.hpp"
#include "train/file_io.hpp"
#include "train/run_writer.hpp"

#include <fcntl.h>

#include <unistd.h>
#include <climits>

#include <set>
#include <string>
#include <vector>

namespace attograd::train {

void check_all_finite(const std::map<std::string, Tensor>& state, const std::filesystem::path& file) {
    for (const auto& [name, tensor] : state)
        AG_CHECK(all_finite(tensor), IoError,
                 "{}: tensor '{}' holds NaN or Inf values (a corrupt checkpoint)", shown_path(file), name);
}

nlohmann::json read_run_json(const std::filesystem::path& path) {
    const std::string text = read_file(path, std::size_t{64} << 20);
    check_json_depth(text, 64, shown_path(path));  // deeper JSON would overflow the stack when copied
    // A key twice in one object: the parser keeps the last, so the file would say one thing and
    // be read as another, under a checksum of what was read.
    std::vector<std::set<std::string>> keys;
    std::string duplicate;
    const auto note_keys = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        if (event == Event::object_start) keys.emplace_back();
        if (event == Event::object_end && !keys.empty()) keys.pop_back();
        if (event == Event::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty())
            duplicate = parsed.get<std::string>();
        return true;
    };
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(text, note_keys);
    } catch (const nlohmann::json::exception& e) {
        throw IoError(fmt::format("{}: not valid JSON: {}", shown_path(path), excerpt(e.what(), 200)));
    }
    AG_CHECK(duplicate.empty(), IoError, "{}: the key '{}' appears twice in one object", shown_path(path),
             data::escape_control(excerpt(duplicate, 80)));
    return json;
}

DirectoryPin::DirectoryPin(const std::filesystem::path& dir)
    : dir_(dir), fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}

DirectoryPin::~DirectoryPin() {
    if (fd_ >= 0) ::close(fd_);
}

bool DirectoryPin::moved() const { return fd_ >= 0 && !detail::still_at(fd_, dir_); }

nlohmann::json open_run(const std::filesystem::path& dir) {
    check_protected_path(dir / "config.json", shown_path(dir));
    std::error_code ec;
    const auto status = std::filesystem::status(dir, ec);
    AG_CHECK(ec != std::errc::filename_too_long, IoError,
             "{}: its path is {} bytes, more than the {} the system takes", shown_path(dir),
             std::filesystem::absolute(dir).native().size(), PATH_MAX - 1);
    AG_CHECK(std::filesystem::exists(status), IoError, "{}: no such run directory", shown_path(dir));
    AG_CHECK(std::filesystem::is_directory(status), IoError, "{}: is {}, not a run directory",
             shown_path(dir),
             std::filesystem::is_fifo(status)           ? "a FIFO"
             : std::filesystem::is_regular_file(status) ? "a regular file"
             : std::filesystem::is_socket(status)       ? "a socket"
                                                        : "a device");
    const auto config_path = dir / "config.json";
    AG_CHECK(std::filesystem::exists(config_path), IoError,
             "{}: not a run directory (no config.json; a training run writes one)", shown_path(dir));
    nlohmann::json json = read_run_json(config_path);
    verify_config_checksum(json, config_path);  // a changed setting or a deleted "files" entry
    verify_run_files(json, dir);                // a flipped byte in any file of the run is refused here
    return json;
}

std::map<std::string, Tensor> load_checkpoint(const std::filesystem::path& file) {
    auto state = load_safetensors(file);  // IoError naming the file when corrupt
    check_all_finite(state, file);
    return state;
}

}  // namespace attograd::train
