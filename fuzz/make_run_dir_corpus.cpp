// Writes fuzz_run_dir's seed: a byte 0 (the harness records true checksums), then the files of a
// two-step fuzzing::LinearRun joined by "\n--8<--\n". Run it again after a change to what the
// Trainer saves (old seeds then stop at the first check).
//   make_run_dir_corpus OUTPUT_FILE
#include "linear_run.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_run_dir_corpus OUTPUT_FILE\n");
        return 2;
    }
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "attograd-run-dir-corpus";
    fs::remove_all(dir);
    attograd::fuzzing::LinearRun(dir, 2).fit({});
    std::string seed(1, '\0');
    for (const char* name : attograd::fuzzing::kRunFiles) {
        if (name != attograd::fuzzing::kRunFiles[0]) seed += "\n--8<--\n";
        std::ifstream in(dir / name, std::ios::binary);
        seed.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::ofstream(argv[1], std::ios::binary | std::ios::trunc) << seed;
    fs::remove_all(dir);
    std::printf("wrote %s (%zu bytes)\n", argv[1], seed.size());
    return 0;
}
