// libFuzzer target: read_safetensors on arbitrary bytes must return or throw attograd::Error,
// never crash, hang, leak or read out of bounds.
#include "core/error.hpp"
#include "core/serialization.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = (std::filesystem::temp_directory_path() /
                                     ("attograd-fuzz-" + std::to_string(::getpid()) + ".safetensors"))
                                        .string();
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    try {
        attograd::read_safetensors(path);
    } catch (const attograd::Error&) {  // refused with a message: fine
    }
    return 0;
}
