// defines: keysCommand, `widelab-cli keys`: every key of a run document from the
// schema (core/config/ConfigSchema.h), with its type, default, accepted values and
// meaning; --json for other programs (the Python package's test reads it)
#pragma once

#include <ostream>

namespace widelab {

int keysCommand(bool json, std::ostream& out);

}  // namespace widelab
