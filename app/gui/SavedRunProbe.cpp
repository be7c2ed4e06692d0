#include "SavedRunProbe.h"

#include "run/RunDirectory.h"

#include <QDir>
#include <QObject>

#include <exception>

namespace widelab {

std::optional<ProbeResult> probeSavedRun(const QString& directory, const QString& text, bool keep, QString* error)
{
    // Runs on a worker thread: nothing may escape it, or the app ends.
    QString failure;
    try {
        const std::filesystem::path path = directory.toStdString();
        OpenedRun opened = openRun(path);
        ProbeResult result = probeModel(*opened.model, opened.tokenizer, opened.labels, text.toStdString(),
                                        opened.document.sequenceLength());
        result.step = opened.state.step;
        if (keep)
            keepProbe(path, result);
        return result;
    } catch (const nlohmann::json::exception& shape) {
        // The core's own messages name their file; a JSON value of the wrong type does not.
        failure = QObject::tr("%1: config.json, tokenizer.json or labels.json does not have the form WideLab writes: %2")
                      .arg(QDir::toNativeSeparators(directory), QString::fromStdString(shape.what()));
    } catch (const std::exception& core) {
        failure = QString::fromStdString(core.what());
    } catch (...) {
        failure = QObject::tr("%1: the run cannot be read (an unknown error)").arg(QDir::toNativeSeparators(directory));
    }
    if (error)
        *error = failure;
    return std::nullopt;
}

}  // namespace widelab
