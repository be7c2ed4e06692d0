#include "AverageCommand.h"

#include "RunCommands.h"
#include "run/CheckpointAverage.h"

namespace widelab {

int averageCommand(const AverageArguments& a, std::ostream& out)
{
    if (a.positional.size() != 1)
        throw RunUsageError("usage: widelab-cli average RUN_DIR [--last N]");
    const CheckpointAverage average = averageCheckpoints(a.positional.front(), a.last);
    out << "averaged " << average.averaged.size() << " checkpoint" << (average.averaged.size() == 1 ? "" : "s")
        << " (" << average.averaged.front().filename().string();
    if (average.averaged.size() > 1)
        out << " ... " << average.averaged.back().filename().string();
    out << ") into " << average.file.string() << ", at step " << average.state.step
        << "; eval, inspect, ablate and export take it with --checkpoint " << average.file.filename().string()
        << "\n";
    return 0;
}

}  // namespace widelab
