// defines: RunStarted, TrainingRequest, the metatype declarations of what crosses
// from the training thread to the window: the core's plain-data records (no
// tensors), by value
#pragma once

#include "vocab/MetricsCodec.h"

#include <QMetaType>
#include <QString>
#include <QStringList>

namespace widelab {

// What the window learns once a run has been set up on the training thread.
struct RunStarted {
    QString directory;
    QString name;
    QString device;
    qint64 step = 0;        // the step the run starts from (above 0 when resumed)
    qint64 totalSteps = 0;
    QStringList log;        // the run's log so far (log.txt), earlier sessions' lines included
};

// What to train: a run document (JSON text) into a directory, new or resumed.
struct TrainingRequest {
    QString documentJson;
    QString directory;
    bool resume = false;
    bool force = false;  // past the memory estimate (TrainerOptions::force)
};

// Registers the types below for queued connections; call once before connecting.
void registerEngineTypes();

}  // namespace widelab

Q_DECLARE_METATYPE(widelab::RunStarted)
Q_DECLARE_METATYPE(widelab::TrainingRequest)
Q_DECLARE_METATYPE(widelab::MetricsRecord)
