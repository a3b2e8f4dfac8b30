// Safetensors checkpoints: named tensors and string metadata in one file.
#pragma once

#include "core/atomic_file.hpp"
#include "core/tensor.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace attograd {

/// Everything a safetensors file holds.
struct SafetensorsContents {
    std::map<std::string, Tensor> tensors;        ///< by name
    std::map<std::string, std::string> metadata;  ///< the header's "__metadata__" (may be empty)
};

/// Writes `tensors` (and `metadata`, when not empty) in the safetensors format
/// (https://github.com/huggingface/safetensors): an 8-byte little-endian u64 header length N,
/// N bytes of JSON `{"name": {"dtype": "F32"|"F64"|"I64"|"BOOL", "shape": [...],
/// "data_offsets": [begin, end]}, "__metadata__": {...}}` padded with spaces to a multiple of
/// 8, then the raw little-endian data, tensors back to back in name order. Python's
/// `safetensors` and numpy read the result. The file is written to a temporary file in the
/// same directory, fsynced and renamed over `path`, so a failed save leaves no partial file
/// and the previous file intact; a symbolic link at `path` is written through, or refused with
/// Symlinks::refuse (see AtomicFile). Throws ValueError on an undefined tensor or an invalid
/// name (empty, "__metadata__", not UTF-8), IoError naming the file on any write failure.
void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      AtomicFile::Symlinks symlinks = AtomicFile::Symlinks::follow);

/// Reads a safetensors file, validating everything before trusting it: the header length
/// against the file size, the JSON, each tensor's dtype, shape and data_offsets (in range,
/// matching shape x dtype size, neither overlapping nor leaving gaps, covering the data
/// section exactly, as Python's reader requires) and bool bytes (0 or 1). Any problem, and
/// a missing or unreadable file, throws IoError naming the file and, where one is at fault,
/// the tensor. Supports F32, F64, I64 and BOOL; other dtypes are an IoError naming them.
SafetensorsContents read_safetensors(const std::filesystem::path& path);

/// The tensors of read_safetensors(path).
std::map<std::string, Tensor> load_safetensors(const std::filesystem::path& path);

}  // namespace attograd
