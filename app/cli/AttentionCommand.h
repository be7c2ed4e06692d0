// defines: attentionCommand, `widelab-cli attention`: the registered attention
// mechanisms with their keys and defaults, what their maps show, their costs
#pragma once

#include <ostream>

namespace widelab {

int attentionCommand(bool json, std::ostream& out);

}  // namespace widelab
