// Reading whole files with a size bound (writes go through attograd::write_file_atomic).
#include "file_io.hpp"
#include "quoting.hpp"

#include "core/input_file.hpp"

namespace attograd::cli {

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes) {
    return InputFile(path, shown_path(path)).read_all(max_bytes);  // refuses FIFOs, sockets, devices
}

}  // namespace attograd::cli
