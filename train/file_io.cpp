// Reading whole files with a size bound (writes go through attograd::write_file_atomic).
#include "train/file_io.hpp"

#include "core/input_file.hpp"
#include "data/text.hpp"

namespace attograd::train {

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes) {
    return InputFile(path, shown_path(path)).read_all(max_bytes);  // refuses FIFOs, sockets, devices
}

std::string shown_path(const std::filesystem::path& path) { return data::escape_control(path.string()); }

}  // namespace attograd::train
