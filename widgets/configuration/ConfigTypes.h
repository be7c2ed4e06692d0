// defines: FieldSpec, FieldIssue, DeviceChoice, CostSummary: the plain data the app
// hands a ConfigPanel (the keys it edits, problems found in the document, compute
// devices, the model's cost)
#pragma once

#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>
#include <QtGlobal>

namespace widelab {

// One key of the document as the core's schema describes it (core/config/ConfigSchema;
// app/gui/SchemaFields converts): the panel makes an editor of each.
struct FieldSpec {
    enum class Type { Integer, Number, Boolean, Choice, Text, FilePath, TextList, Device, RunFolder };
    QString key;                 // dotted: "model.head_dim"; top-level keys have no dot
    Type type = Type::Integer;
    double min = 0;              // Integer and Number: the range the core accepts
    double max = 0;
    QJsonValue defaultValue;     // what an absent key reads as
    QStringList choices;         // Choice: the values the core accepts
    QString description;         // one line
    QString derivedRule;         // "d_model / heads" for a default computed from other keys; empty if none
};

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
struct CostPart {
    QString part;
    qint64 stored = 0;
    qint64 active = 0;
    qint64 applied = 0;
    double flopsPerToken = 0;
};

struct CostSummary {
    qint64 stored = 0;
    qint64 active = 0;
    qint64 applied = 0;
    double flopsPerToken = 0;
    // In inference: less where a classifier's last block computes its CLS token's row alone.
    double inferenceFlopsPerToken = 0;
    qint64 memoryBytes = 0;
    QList<CostPart> parts;  // embeddings, attention, experts, ... (`widelab-cli params`)
};

}  // namespace widelab
