// defines: desktoptest::layoutProblems, plotAreaProblems: what a user would see as
// broken on a page at a given window size, in words: a widget drawn outside its
// parent (cut off), two widgets drawn over each other, a chart whose plot area is
// squeezed to a strip
#pragma once

#include "curves/CurvePlot.h"

#include <QAbstractScrollArea>
#include <QLayout>
#include <QStringList>
#include <QWidget>

namespace widelab::desktoptest {

// "QLabel 'valuesTitle' in QWidget 'valuesPanel'": enough to find it.
inline QString describe(const QWidget* widget)
{
    const QString name = widget->objectName().isEmpty() ? widget->accessibleName() : widget->objectName();
    const QString self = QStringLiteral("%1 '%2'").arg(QString::fromLatin1(widget->metaObject()->className()), name);
    const QWidget* parent = widget->parentWidget();
    return parent ? self + QStringLiteral(" in %1 '%2'").arg(QString::fromLatin1(parent->metaObject()->className()),
                                                            parent->objectName())
                  : self;
}

// Inside a scroll area's viewport a widget may be larger than what shows: that
// is what the scroll bars are for.
inline bool scrolls(const QWidget* widget)
{
    const QWidget* parent = widget->parentWidget();
    const QWidget* grand = parent ? parent->parentWidget() : nullptr;
    const auto* area = grand ? qobject_cast<const QAbstractScrollArea*>(grand) : nullptr;
    return area && area->viewport() == parent;
}

// Every visible widget under `root` (windows of their own aside) lies within its
// parent, give or take a pixel, unless it scrolls there; no two visible siblings
// overlap by more than a pixel each way. Qt's own parts (named qt_...) are
// checked against their parent, not against each other.
inline QStringList layoutProblems(const QWidget* root)
{
    QStringList problems;
    const QList<QWidget*> children = root->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly);
    QList<const QWidget*> shown;
    for (const QWidget* child : children) {
        if (child->isWindow() || !child->isVisible())
            continue;
        shown << child;
        const QRect inParent = child->geometry();
        if (!scrolls(child) && !root->rect().adjusted(-1, -1, 1, 1).contains(inParent))
            problems << QStringLiteral("%1 is cut off: %2,%3 %4x%5 in %6x%7")
                            .arg(describe(child))
                            .arg(inParent.x())
                            .arg(inParent.y())
                            .arg(inParent.width())
                            .arg(inParent.height())
                            .arg(root->width())
                            .arg(root->height());
        problems << layoutProblems(child);
    }
    for (int i = 0; i < shown.size(); ++i)
        for (int j = i + 1; j < shown.size(); ++j) {
            if (shown[i]->objectName().startsWith(QLatin1String("qt_")) || shown[j]->objectName().startsWith(QLatin1String("qt_")))
                continue;
            const QRect both = shown[i]->geometry().intersected(shown[j]->geometry());
            if (both.width() > 1 && both.height() > 1)
                problems << QStringLiteral("%1 and %2 overlap by %3x%4")
                                .arg(describe(shown[i]), QString::fromLatin1(shown[j]->metaObject()->className())
                                                             + QStringLiteral(" '") + shown[j]->objectName()
                                                             + QLatin1Char('\''))
                                .arg(both.width())
                                .arg(both.height());
        }
    return problems;
}

// Every visible chart under `root` keeps a plot area at least `minHeight` tall.
inline QStringList plotAreaProblems(const QWidget* root, int minHeight)
{
    QStringList problems;
    for (const CurvePlot* plot : root->findChildren<CurvePlot*>()) {
        if (!plot->isVisible())
            continue;
        const int height = plot->axisRect()->rect().height();
        if (height < minHeight)
            problems << QStringLiteral("%1: plot area %2 px tall in a chart of %3").arg(plot->title()).arg(height).arg(plot->height());
    }
    return problems;
}

}  // namespace widelab::desktoptest
