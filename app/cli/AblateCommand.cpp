#include "AblateCommand.h"

#include "RunCommands.h"
#include "StopOnSignals.h"
#include "TextTable.h"
#include "measure/AblationScan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace widelab {
namespace {

std::string signedFixed(double value, int digits)
{
    char text[48];
    std::snprintf(text, sizeof text, "%+.*f", digits, value);
    return text;
}

std::string plain(double value, int digits)
{
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}


}  // namespace

int ablateCommand(const AblateArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.positional.size() != 1)
        throw RunUsageError("usage: widelab-cli ablate RUN_DIR [--heads|--experts|--paths|--sublayers] "
                            "[--mode zero|mean] [--json]");
    AblationScanOptions options;
    const auto part = ablationPartFromName(a.part);
    const auto mode = ablationModeFromName(a.mode);
    if (!mode)
        throw RunUsageError("--mode: \"" + a.mode + "\" is not zero or mean");
    if (!a.text.empty() && !a.image.empty())
        throw RunUsageError("give the probe as --text or --image, not both");
    options.part = *part;
    options.mode = *mode;
    options.checkpoint = a.checkpoint;
    options.batches = a.batches;
    options.probe = !a.text.empty() ? a.text : a.image;
    if (!a.device.empty())
        options.device = a.device;
    if (a.threads >= 0)
        options.threads = a.threads;

    // Ctrl-C cancels between measurements.
    const StopOnSignals signals;
    Warnings warnings(err);
    AblationScanResult result;
    try {
        result = scanAblations(a.positional.front(), options,
                               [&](std::int64_t done, std::int64_t total, const std::string& current) {
                                   if (!current.empty())
                                       err << "\r" << done << "/" << total - 1 << " " << current << "\033[K" << std::flush;
                                   return !StopOnSignals::flag().load();
                               },
                               {&warnings});
        err << "\r\033[K" << std::flush;
    } catch (const AblationUnavailable& error) {
        throw RunUsageError(std::string("--") + a.part + ": " + error.what());
    } catch (const AblationCancelled& error) {
        err << "\n" << error.what() << "\n";
        return 130;
    }

    const std::string indexKey = options.part == AblationPart::Head       ? "head"
                                 : options.part == AblationPart::Expert   ? "expert"
                                 : options.part == AblationPart::Path     ? "path"
                                                                          : "sublayer";
    if (a.json) {
        nlohmann::json parts = nlohmann::json::array();
        for (const AblatedPart& row : result.rows) {
            nlohmann::json part = {{"layer", row.ablation.block},
                                   {indexKey, row.ablation.index},
                                   {"label", row.label},
                                   {"loss", row.loss},
                                   {"loss_delta", row.lossDelta},
                                   {"accuracy", row.accuracy},
                                   {"accuracy_delta", row.accuracyDelta}};
            if (options.part == AblationPart::Sublayer)
                part[indexKey] = row.ablation.index == 0 ? "attention" : "ffn";
            if (!row.probePrediction.empty())
                part["probe_prediction"] = row.probePrediction;
            parts.push_back(std::move(part));
        }
        nlohmann::json document = {{"step", result.step},
                                   {"checkpoint", result.checkpoint},
                                   {"kind", a.part},
                                   {"mode", toString(result.mode)},
                                   {"baseline", {{"loss", result.baseline.loss},
                                                 {"accuracy", result.baseline.accuracy},
                                                 {"examples", result.baseline.examples}}},
                                   {"parts", parts}};
        if (!result.probeText.empty())
            document["probe"] = {{"text", result.probeText},
                                 {"labels", result.predictionLabels},
                                 {"prediction", result.baselinePrediction}};
        out << document.dump(2) << "\n";
        return 0;
    }
    out << result.checkpoint << " (step " << result.step << "), " << result.baseline.examples
        << " validation examples: loss " << plain(result.baseline.loss, 4) << ", accuracy "
        << plain(100.0 * result.baseline.accuracy, 2) << "%\n"
        << toString(result.mode) << " ablation of every " << indexKey
        << ", the parts that matter most first (loss up when the part is switched off):\n";
    std::vector<std::size_t> order(result.rows.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return result.rows[x].lossDelta > result.rows[y].lossDelta; });
    TextTable table({"part", "loss", "loss change", "accuracy change"});
    for (const std::size_t i : order) {
        const AblatedPart& row = result.rows[i];
        table.addRow({row.label, plain(row.loss, 4), signedFixed(row.lossDelta, 4), signedFixed(100.0 * row.accuracyDelta, 2) + " pts"});
    }
    out << table.render() << "\n";
    return 0;
}

}  // namespace widelab
