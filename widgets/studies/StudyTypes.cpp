#include "StudyTypes.h"

namespace widelab {

int StudyData::count(const QString& status) const
{
    int n = 0;
    for (const StudyMemberRow& member : members)
        n += member.status == status ? 1 : 0;
    return n;
}

QStringList StudyData::points() const
{
    QStringList list;
    for (const StudyMemberRow& member : members)
        if (!list.contains(member.point))
            list << member.point;
    return list;
}

const StudyMeasureInfo* StudyData::measure(const QString& key) const
{
    for (const StudyMeasureInfo& info : measures)
        if (info.key == key)
            return &info;
    return nullptr;
}

const StudyPointMeasure* StudyData::pointMeasure(const QString& point, const QString& key) const
{
    const auto measures = pointMeasures.constFind(point);
    if (measures == pointMeasures.constEnd())
        return nullptr;
    const auto measure = measures->constFind(key);
    return measure == measures->constEnd() ? nullptr : &*measure;
}

QString studySettingValue(const StudyMemberRow& member, const QString& key)
{
    for (const auto& [name, value] : member.settings)
        if (name == key)
            return value;
    return {};
}

QString studyAxisValueText(const StudyData& study, const StudyMemberRow& member, int axis, bool withKey)
{
    if (axis < 0 || axis >= study.axes.size())
        return {};
    const StudyAxisInfo& info = study.axes.at(axis);
    const int value = axis < member.axisValues.size() ? member.axisValues.at(axis) : -1;
    if (value >= 0 && value < info.names.size())
        return info.names.at(value);
    QStringList parts;
    for (const QString& key : info.keys)
        parts << (withKey ? key.section(QLatin1Char('.'), -1) + QLatin1Char('=') : QString()) + studySettingValue(member, key);
    return parts.join(withKey ? QStringLiteral(",") : QStringLiteral(", "));
}

}  // namespace widelab
