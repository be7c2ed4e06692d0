// defines: StudyAxisInfo, StudyMeasureInfo, StudyMemberRow, StudyPaperPoint,
// StudyPaperSeries, StudyLatencyRow, StudyData, studySettingValue: a study as
// the Studies tab draws it, in plain Qt types (app/ converts the core's record)
#pragma once

#include <QHash>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

#include <limits>

namespace widelab {

// An axis of the study: the keys it sets together.
struct StudyAxisInfo {
    QString label;     // "aspect ratio (layers x heads)"; may be empty
    QStringList keys;  // dotted: "model.layers", "model.heads"
    QStringList names; // what each value is called ("6x8"); empty when the study names none
};

// A measure of every member (core/study/StudyResults' columns).
struct StudyMeasureInfo {
    QString key;       // "test_accuracy"
    QString title;     // "test acc % (best.pt)"
    int decimals = 0;
    double scale = 1.0;  // shown = value * scale
};

struct StudyMemberRow {
    QString name;       // "layers=6,heads=8,seed=1"
    QString point;      // the name without the seed
    qint64 seed = 0;
    QString status;     // "pending", "running", "stopped", "completed", "failed"
    QString error;      // failed: why
    QList<QPair<QString, QString>> settings;  // dotted key -> value as text, axis order (solved widths too)
    QVector<int> axisValues;                  // per axis: the index of its value (-1: not found)
    QHash<QString, double> measures;          // by StudyMeasureInfo::key
    QString directory;  // the member's run directory
    qint64 step = 0, totalSteps = 0;          // running or stopped: where it is
};

// A paper's number at one point of the study, in the measure's units.
struct StudyPaperPoint {
    QString point;
    QString label;  // the paper's cell: "Transformer, 6-8"
    double value = 0.0;
    double spread = std::numeric_limits<double>::quiet_NaN();
};

// One paper figure beside the study.
struct StudyPaperSeries {
    QString paper, source, measure, note;
    QVector<StudyPaperPoint> points;
};

// A measure of one axis point over its completed seeds (core/study's pointMeasure),
// in the measure's own units.
struct StudyPointMeasure {
    double mean = std::numeric_limits<double>::quiet_NaN();
    double spread = std::numeric_limits<double>::quiet_NaN();  // sample standard deviation; NaN for one seed
    int seeds = 0;
};

struct StudyLatencyRow {
    QString group, deep, wide;
    double deepMs = 0.0, wideMs = 0.0;
    double paperRatio = std::numeric_limits<double>::quiet_NaN();
    QString paperSource;
};

struct StudyData {
    QString directory;
    QString title, description;
    QString metric = QStringLiteral("accuracy");  // "accuracy", "loss" or "bleu"
    QVector<StudyAxisInfo> axes;
    QVector<StudyMeasureInfo> measures;
    QVector<StudyMemberRow> members;        // in the study's order
    // Per axis point, per measure key: over its completed members (absent: none has it).
    QHash<QString, QHash<QString, StudyPointMeasure>> pointMeasures;
    QVector<StudyPaperSeries> papers;
    QVector<StudyLatencyRow> latency;
    QString paperProblem;                   // a paper figure that did not read

    bool isEmpty() const { return directory.isEmpty(); }
    int count(const QString& status) const;
    QStringList points() const;              // each once, in the members' order
    const StudyMeasureInfo* measure(const QString& key) const;
    // nullptr when no completed member of the point has that measure.
    const StudyPointMeasure* pointMeasure(const QString& point, const QString& key) const;
};

// The value text a member has for `key`; empty when its settings do not name it.
QString studySettingValue(const StudyMemberRow& member, const QString& key);

// What a member's value on axis `axis` is called: the study's name for it, else
// the value ("4"; "6, 8" for several keys); with `withKey`, an unnamed value is
// written with its keys ("experts=4"), as a legend needs.
QString studyAxisValueText(const StudyData& study, const StudyMemberRow& member, int axis, bool withKey);

}  // namespace widelab
