// The `attograd` program: parses the command line and runs a subcommand (see commands.hpp).
#include "commands.hpp"
#include "data_parallel.hpp"

int main(int argc, char** argv) { return attograd::cli::finish_rank(attograd::cli::run_cli(argc, argv)); }
