// defines: loadStudyData, builtinStudies, checkStudyDocument: a study directory
// (finished or not), the shipped studies and a study document, read by the core
// (core/study) and converted into the Studies tab's plain types
#pragma once

#include "studies/StudiesView.h"
#include "studies/StudyTypes.h"

#include <QJsonObject>
#include <QString>
#include <QVector>

#include <exception>

namespace widelab {

// A study directory's record, members (status and measures), the papers' figures
// it matches and its deep/wide latency ratios. False with `error` set (naming
// study.json and the reason) when the directory holds no readable study.
bool loadStudyData(const QString& directory, StudyData& data, QString* error);

// The shipped studies with their names and descriptions; a study that does not
// read is listed under its file name with the problem as its description.
QVector<StudiesView::Builtin> builtinStudies();

// Checks a study document as `widelab-cli study` would (parse and expand): empty
// when valid (`members` set), else every problem, one per line.
QString checkStudyDocument(const QJsonObject& study, int* members);

// A study's error in words for the user: each problem of a ConfigError on a line.
QString studyProblemText(const std::exception& error);

// The directory holds a study (a study.json).
bool isStudyDirectory(const QString& directory);

}  // namespace widelab
