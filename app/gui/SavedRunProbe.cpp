#include "SavedRunProbe.h"

#include "train/RunDirectory.h"

#include <exception>

namespace widelab {

std::optional<ProbeResult> probeSavedRun(const QString& directory, const QString& text, bool keep, QString* error)
{
    try {
        const std::filesystem::path path = directory.toStdString();
        OpenedRun opened = openRun(path);
        ProbeResult result = probeModel(*opened.model, opened.tokenizer, opened.labels, text.toStdString(),
                                        opened.document.sequenceLength());
        result.step = opened.state.step;
        if (keep)
            keepProbe(path, result);
        return result;
    } catch (const std::exception& failure) {
        if (error)
            *error = QString::fromStdString(failure.what());
        return std::nullopt;
    }
}

}  // namespace widelab
