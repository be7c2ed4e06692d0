#include "TensorBoardCommand.h"

#include "RunCommands.h"
#include "export/TensorBoardExport.h"

namespace widelab {

int exportTensorBoardCommand(const TensorBoardArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.positional.size() != 1 || a.out.empty())
        throw RunUsageError("usage: widelab-cli export-tb RUN_DIR --out LOGDIR [--replace]");
    const TensorBoardExport result = exportTensorBoard(a.positional.front(), a.out, a.replace,
                                                       [&](const std::string& warning) { err << "warning: " << warning << "\n"; });
    if (result.imagesLeftOut)
        err << "warning: the probes' attention maps were left out: this build has no PNG support (libpng)\n";
    out << "wrote " << result.file.string() << ": " << result.lines << " lines of metrics.jsonl";
    if (result.skipped > 0)
        out << " (" << result.skipped << " skipped)";
    out << " as " << result.scalars << " scalars, " << result.histograms << " histograms and " << result.images
        << " images; view with: tensorboard --logdir " << a.out << "\n";
    return 0;
}

}  // namespace widelab
