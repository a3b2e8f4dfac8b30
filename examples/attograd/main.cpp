// The `attograd` program: parses the command line and runs a subcommand (see commands.hpp).
#include "commands.hpp"
#include "console.hpp"
#include "data_parallel.hpp"

int main(int argc, char** argv) {
    attograd::cli::prepare_process();  // before any file is opened: see console.hpp
    return attograd::cli::finish_rank(attograd::cli::run_cli(argc, argv));
}
