// defines: FieldIssue, DeviceChoice, CostSummary: the plain data the app hands a
// ConfigPanel (problems found in the document, compute devices, the model's cost)
#pragma once

#include <QString>
#include <QtGlobal>

namespace widelab {

// A problem in the document. `key` is dotted ("model.top_k"); empty means the
// whole document.
struct FieldIssue {
    QString key;
    QString reason;
};

// A device the training can run on: `id` is what train.device holds ("auto",
// "cpu", "cuda:0"); `label` is what the user reads ("NVIDIA H100 (80 GB)").
struct DeviceChoice {
    QString id;
    QString label;
};

// What the configured model costs (see docs/accounting.md): parameters stored,
// active for one token and applied on a token's way up, forward FLOPs per token,
// and an estimate of the training memory.
struct CostSummary {
    qint64 stored = 0;
    qint64 active = 0;
    qint64 applied = 0;
    double flopsPerToken = 0;
    qint64 memoryBytes = 0;
};

}  // namespace widelab
