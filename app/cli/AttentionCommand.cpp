#include "AttentionCommand.h"

#include "TextTable.h"
#include "model/attention/MechanismSpec.h"

#include <nlohmann/json.hpp>

namespace widelab {

int attentionCommand(bool json, std::ostream& out)
{
    nlohmann::json list = nlohmann::json::array();
    TextTable table({"attention", "map", "language model", "cost", "keys (default)"});
    for (const MechanismSpec* spec : attentionMechanisms()) {
        nlohmann::json keys = nlohmann::json::object();
        std::string keyText;
        for (const KeySpec& key : spec->keys) {
            keys[key.name()] = key.defaultValue;
            keyText += (keyText.empty() ? "" : ", ") + key.name() + " "
                       + (key.defaultValue.is_string() ? key.defaultValue.get<std::string>() : key.defaultValue.dump());
        }
        list.push_back({{"name", spec->name}, {"title", spec->title}, {"map", toString(spec->map)},
                        {"causal", spec->causal}, {"linear_cost", spec->linearCost}, {"keys", keys}});
        table.addRow({spec->name, toString(spec->map), spec->causal ? "yes" : "no",
                      spec->linearCost ? "linear" : "super-linear", keyText.empty() ? "-" : keyText});
    }
    if (json) {
        out << nlohmann::json{{"mechanisms", list}, {"mixed", kMixedAttention}}.dump(2) << "\n";
        return 0;
    }
    out << table.render() << "\n";
    for (const MechanismSpec* spec : attentionMechanisms())
        out << "  " << spec->name << ": " << spec->title << "\n";
    out << "\nmodel.attention \"" << kMixedAttention
        << "\" with model.attention_mix [names...]: the heads of every layer shared equally among them.\n"
           "map: what the attention view shows (exact; sparse pattern: exact, zero outside the pattern;\n"
           "implied: the weights the mechanism's computation is equivalent to, computed for probes only).\n";
    return 0;
}

}  // namespace widelab
