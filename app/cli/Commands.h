// defines: runCli, the widelab-cli entry point (argument parsing and every
// subcommand), writing to the given streams so that tests can drive it
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace widelab {

// Exit status: 0 success, 1 the command failed (message on `err`), 2 bad usage.
int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace widelab
