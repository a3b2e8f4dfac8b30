// The `attograd` program: parses the command line and runs a subcommand (see commands.hpp).
#include "commands.hpp"

int main(int argc, char** argv) { return attograd::cli::run_cli(argc, argv); }
