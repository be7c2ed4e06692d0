// defines: TrainingWorker: the QObject that lives on the training thread, builds a
// Trainer for a run and drives it, turning the core's observer calls into signals
#pragma once

#include "RunEvents.h"

#include <memory>

namespace widelab {

class TrainingControl;

class TrainingWorker : public RunEvents {
    Q_OBJECT
public:
    explicit TrainingWorker(std::shared_ptr<TrainingControl> control, QObject* parent = nullptr);
    ~TrainingWorker() override;

public Q_SLOTS:
    // Blocks this thread until the run ends; stop, pause, checkpoint and probe
    // requests reach it through the shared TrainingControl meanwhile.
    void train(const widelab::TrainingRequest& request);

private:
    std::shared_ptr<TrainingControl> m_control;
};

}  // namespace widelab
