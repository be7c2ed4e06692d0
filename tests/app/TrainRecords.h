// defines: test::TrainRecords: the snapshots a TrainingController reports, in
// order, taken from its one record signal (the evaluations, probes and insights
// that come the same way are left out)
#pragma once

#include "TrainingController.h"

#include <QObject>
#include <QVector>

namespace widelab::test {

class TrainRecords {
public:
    explicit TrainRecords(TrainingController* controller)
    {
        QObject::connect(controller, &TrainingController::record, &m_receiver, [this](const MetricsRecord& record) {
            if (record.type == MetricsRecord::Type::Train)
                m_snapshots.append(record.train);
        });
    }

    qsizetype count() const { return m_snapshots.size(); }
    qsizetype size() const { return m_snapshots.size(); }
    const TrainingSnapshot& last() const { return m_snapshots.last(); }

private:
    QVector<TrainingSnapshot> m_snapshots;
    QObject m_receiver;  // declared last, gone first: no signal reaches a collector being destroyed
};

}  // namespace widelab::test
