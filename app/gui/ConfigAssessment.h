// defines: ConfigAssessment, assessDocument, deviceChoices: what the window shows
// about a configuration as the user edits it (problems by key, cost, diagram)
#pragma once

#include "configuration/ArchitectureSketch.h"
#include "configuration/ConfigTypes.h"

#include <QJsonObject>
#include <QList>
#include <QString>

namespace widelab {

struct ConfigAssessment {
    bool valid = false;
    QList<FieldIssue> issues;      // every problem, by dotted key
    CostSummary cost;              // meaningful when valid
    ArchitectureSketch sketch;     // meaningful when valid
    QJsonObject complete;          // when valid: the document with every default written out
    QString name;                  // the document's name, when valid
};

// Validates `document` as the core does before training (data files must exist)
// and, when it is valid, computes its cost and sketch. Never throws.
ConfigAssessment assessDocument(const QJsonObject& document);

// "auto", then the CPU and each GPU the linked LibTorch can use.
QList<DeviceChoice> deviceChoices();

}  // namespace widelab
