#include "StudyData.h"

#include "vocab/ConfigError.h"
#include "study/BuiltinStudies.h"
#include "study/StudyComparisons.h"
#include "study/StudyDocument.h"
#include "study/StudyLayout.h"
#include "study/StudyRunner.h"

#include <QDir>

#include <algorithm>
#include <QFileInfo>
#include <QJsonDocument>

namespace widelab {
namespace {

QString text(const std::string& s)
{
    return QString::fromStdString(s);
}

QString valueText(const nlohmann::json& value)
{
    return value.is_string() ? text(value.get<std::string>()) : text(value.dump());
}

}  // namespace

QString studyProblemText(const std::exception& error)
{
    if (const auto* config = dynamic_cast<const ConfigError*>(&error)) {
        QStringList lines;
        for (const ConfigIssue& issue : config->issues())
            lines << text(issue.text());
        return lines.join(QLatin1Char('\n'));
    }
    return text(error.what());
}

bool isStudyDirectory(const QString& directory)
{
    return QFileInfo(QDir(directory).filePath(text(std::string(studylayout::kStudy)))).isFile();
}

bool loadStudyData(const QString& directory, StudyData& data, QString* error)
{
    try {
        const std::filesystem::path dir = directory.toStdString();
        StudyRecord record = readStudyRecord(dir);
        const std::vector<MemberResult> members = readStudyResults(dir, record);
        data = StudyData();
        data.directory = directory;
        data.title = text(record.title());
        data.metric = text(record.metric());
        if (record.document.contains("description") && record.document.at("description").is_string())
            data.description = text(record.document.at("description").get<std::string>());
        const std::vector<StudyAxis> axes = recordedStudy(dir).axes;
        for (const StudyAxis& axis : axes) {
            StudyAxisInfo info;
            info.label = text(axis.label);
            for (const std::string& key : axis.keys)
                info.keys << text(key);
            for (const std::string& name : axis.names)
                info.names << text(name);
            data.axes.push_back(info);
        }
        for (const MeasureSpec& measure : studyMeasures())
            data.measures.push_back({text(measure.column), text(measure.title), measure.decimals, measure.scale});
        for (const MemberResult& member : members) {
            StudyMemberRow row;
            row.name = text(member.name);
            row.point = text(member.point);
            row.seed = member.seed;
            row.status = text(toString(member.status));
            row.error = text(member.error);
            for (const auto& [key, value] : member.settings)
                row.settings.push_back({text(key), valueText(value)});
            for (const StudyAxis& axis : axes)
                row.axisValues.push_back(axisValueIndex(axis, member.settings));
            for (const auto& [column, value] : member.measures)
                row.measures.insert(text(column), value);
            row.directory = text(studylayout::runDirectory(dir, member.name).string());
            data.members.push_back(row);
        }
        for (const std::string& point : studyPoints(members))
            for (const MeasureSpec& measure : studyMeasures()) {
                int seeds = 0;
                const auto [mean, spread] = pointMeasure(members, point, measure.column, &seeds);
                if (seeds > 0)
                    data.pointMeasures[text(point)][text(measure.column)] = {mean, spread, seeds};
            }
        record.members = members;
        std::vector<PaperComparison> papers;
        try {
            papers = paperComparisons(record, loadPaperFigures());
        } catch (const ConfigError& problem) {
            data.paperProblem = studyProblemText(problem);
        }
        for (const PaperComparison& paper : papers) {
            StudyPaperSeries series{text(paper.paper), text(paper.source), text(paper.measure), text(paper.note), {}};
            for (const PaperPoint& point : paper.points)
                series.points.push_back({text(point.point), text(point.label), point.value, point.spread});
            data.papers.push_back(series);
        }
        for (const LatencyRatio& ratio : latencyRatios(record, members, papers))
            data.latency.push_back({text(ratio.group), text(ratio.deep), text(ratio.wide), ratio.deepMs, ratio.wideMs,
                                    ratio.paperRatio, text(ratio.paperSource)});
        return true;
    } catch (const std::exception& problem) {
        if (error)
            *error = studyProblemText(problem);
        return false;
    }
}

QVector<StudiesView::Builtin> builtinStudies()
{
    QVector<StudiesView::Builtin> list;
    for (const std::string& name : listStudies()) {
        try {
            const StudyDocument study = loadStudyDocument(resolveStudyPath(name));
            list.push_back({text(name), text(study.name), text(study.description)});
        } catch (const std::exception& problem) {
            list.push_back({text(name), text(name), studyProblemText(problem)});
        }
    }
    return list;
}

QString checkStudyDocument(const QJsonObject& study, int* members)
{
    try {
        const StudyDocument document =
            parseStudyDocument(QJsonDocument(study).toJson(QJsonDocument::Compact).toStdString(), "the study");
        const std::size_t count = expandStudy(document).size();
        if (members)
            *members = static_cast<int>(count);
        return {};
    } catch (const std::exception& problem) {
        return studyProblemText(problem);
    }
}

}  // namespace widelab
