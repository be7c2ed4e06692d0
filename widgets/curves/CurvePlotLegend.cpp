// CurvePlot: the legend under the axis rect and the note about what a chart leaves out.
#include "CurvePlot.h"

#include "CurveMath.h"
#include "CurvePlotParts.h"

#include <QFontMetrics>

#include <algorithm>

namespace widelab {
namespace {

using namespace curveplot;

// Puts `element` into the plot layout just above or below the axis rect, or
// takes it out, so a hidden legend or note leaves no empty band.
void placeBesideAxisRect(QCPLayoutGrid* layout, QCPAxisRect* rect, QCPLayoutElement* element, bool shown,
                         bool above)
{
    const bool placed = element->layout() != nullptr;
    if (shown == placed)
        return;
    if (!shown) {
        layout->take(element);
        layout->simplify();
        return;
    }
    int row = 0;
    while (row < layout->rowCount() && layout->element(row, 0) != rect)
        ++row;
    const int at = above ? row : row + 1;
    layout->insertRow(at);
    layout->addElement(at, 0, element);
    layout->setRowStretchFactor(at, 0.001);  // only as tall as its content
}

}  // namespace

namespace curveplot {

KeyLegendItem::KeyLegendItem(QCPLegend* legend, Kind kind, const QString& id, const QString& text, const QPen& pen,
                             bool marker)
    : QCPAbstractLegendItem(legend), m_kind(kind), m_id(id), m_text(text), m_pen(pen), m_marker(marker)
{
}

void KeyLegendItem::draw(QCPPainter* painter)
{
    const QSize icon = mParentLegend->iconSize();
    painter->setFont(mFont);
    const QRect textRect = painter->fontMetrics().boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, m_text);
    const int height = std::max(textRect.height(), icon.height());
    painter->setPen(QPen(mTextColor));
    painter->drawText(mRect.x() + icon.width() + mParentLegend->iconTextPadding(), mRect.y(), textRect.width(), height,
                      Qt::TextDontClip, m_text);
    const int y = mRect.y() + height / 2;
    painter->setPen(m_pen);
    painter->drawLine(QPointF(mRect.x(), y), QPointF(mRect.x() + icon.width(), y));
    if (m_marker) {
        painter->setBrush(Qt::NoBrush);
        painter->drawEllipse(QPointF(mRect.x() + icon.width() / 2.0, y), 3.0, 3.0);
    }
}

QSize KeyLegendItem::minimumOuterSizeHint() const
{
    const QSize icon = mParentLegend->iconSize();
    const QRect textRect = QFontMetrics(mFont).boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, m_text);
    return {icon.width() + mParentLegend->iconTextPadding() + textRect.width() + mMargins.left() + mMargins.right(),
            std::max(textRect.height(), icon.height()) + mMargins.top() + mMargins.bottom()};
}

}  // namespace curveplot

void CurvePlot::setNote(const QString& note)
{
    m_note = note;
    scheduleRefresh();
}

QString CurvePlot::note() const { return m_note; }

bool CurvePlot::noteCentred() const { return m_noteCentre->visible(); }

void CurvePlot::rebuildLegend()
{
    m_legendDirty = false;
    legend->clearItems();
    // Which runs and series have points: several of each collapse the legend
    // to one entry a run plus one style key a series.
    QList<const Run*> runs;
    QStringList series;
    for (const auto& run : m_runs)
        for (const QString& name : std::as_const(m_declaredSeries))
            if (const Series* s = findSeries(run->id, name); s && !s->points.isEmpty()) {
                if (!runs.contains(run.get()))
                    runs.append(run.get());
                if (!series.contains(name))
                    series.append(name);
            }
    if (runs.size() > 1 && series.size() > 1) {
        const auto shown = [this](const QString& runId, const QString& name) {
            const Series* s = findSeries(runId, name);
            return s && !s->points.isEmpty() && s->visible;
        };
        for (const Run* run : std::as_const(runs)) {
            bool any = false;
            for (const QString& name : std::as_const(series))
                any = any || shown(run->id, name);
            auto* item = new KeyLegendItem(legend, KeyLegendItem::Kind::Run, run->id, curvemath::elideMiddle(run->label),
                                           QPen(run->color, kLineWidth), false);
            item->setTextColor(any ? m_colors.text : m_colors.hiddenText);
            legend->addItem(item);
        }
        for (const QString& name : std::as_const(series)) {
            bool any = false;
            for (const Run* run : std::as_const(runs))
                any = any || shown(run->id, name);
            const int index = seriesIndex(name);
            const bool markers = seriesStyle(name) == SeriesStyle::Markers;
            const QString display = m_displayNames.value(index);
            auto* item = new KeyLegendItem(legend, KeyLegendItem::Kind::Series, name, display.isEmpty() ? name : display,
                                           QPen(m_colors.axis, kLineWidth,
                                                kLineStyles[static_cast<std::size_t>(index) % kLineStyles.size()]),
                                           markers);
            item->setTextColor(any ? m_colors.text : m_colors.hiddenText);
            legend->addItem(item);
        }
        legend->setVisible(true);
        return;
    }
    for (const auto& run : m_runs) {
        for (const QString& name : std::as_const(m_declaredSeries)) {
            const Series* s = findSeries(run->id, name);
            if (!s || s->points.isEmpty())
                continue;
            s->line->addToLegend();
            if (auto* item = legend->itemWithPlottable(s->line))
                item->setTextColor(s->visible ? m_colors.text : m_colors.hiddenText);
        }
    }
    legend->setVisible(!legendEntries().isEmpty());
}

void CurvePlot::layoutLegend()
{
    const QList<QCPAbstractLegendItem*> entries = legendEntries();
    placeBesideAxisRect(plotLayout(), axisRect(), legend, !entries.isEmpty(), false);
    if (entries.isEmpty())
        return;
    QVector<int> widths;
    for (const QCPAbstractLegendItem* entry : entries)
        widths.append(entry->minimumOuterSizeHint().width());
    const QMargins margins = legend->margins();
    const int available = width() - margins.left() - margins.right() - 8;
    const int columns = curvemath::legendColumns(widths, available, legend->columnSpacing());
    if (columns != legend->wrap()) {
        legend->setWrap(columns);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    }
}

int CurvePlot::legendColumns() const { return legendEntries().isEmpty() ? 0 : legend->columnCount(); }

QList<QCPAbstractLegendItem*> CurvePlot::legendEntries() const
{
    QList<QCPAbstractLegendItem*> entries;
    for (int i = 0; i < legend->itemCount(); ++i)  // counts the grid's cells, empty ones too
        if (QCPAbstractLegendItem* item = legend->item(i))
            entries.append(item);
    return entries;
}

QStringList CurvePlot::legendTexts() const
{
    QStringList texts;
    for (QCPAbstractLegendItem* item : legendEntries()) {
        if (const auto* key = dynamic_cast<const KeyLegendItem*>(item))
            texts << key->text();
        else if (auto* entry = qobject_cast<QCPPlottableLegendItem*>(item))
            texts << entry->plottable()->name();
    }
    return texts;
}

void CurvePlot::updateNote()
{
    bool hasData = false;
    for (const auto& s : m_series)
        hasData = hasData || isShown(*s);
    const bool centred = !m_note.isEmpty() && !hasData;
    const bool line = !m_note.isEmpty() && hasData;
    m_noteCentre->setVisible(centred);
    // An empty chart that says why shows no axes: a bare 0..5 grid would look like data.
    xAxis->setVisible(!centred);
    yAxis->setVisible(!centred);
    m_noteCentre->setText(m_note);
    if (line && !m_noteLine) {
        m_noteLine = new QCPTextElement(this, QString(), chartFont(8));
        m_noteLine->setMargins(QMargins(4, 0, 4, 2));
        m_noteLine->setTextColor(m_colors.hiddenText);
    }
    if (m_noteLine) {
        // Elided to the chart's width, so a long list of runs cannot widen the chart.
        m_noteLine->setText(QFontMetrics(m_noteLine->font()).elidedText(m_note, Qt::ElideRight, std::max(40, width() - 16)));
        placeBesideAxisRect(plotLayout(), axisRect(), m_noteLine, line, true);
    }
}

}  // namespace widelab
