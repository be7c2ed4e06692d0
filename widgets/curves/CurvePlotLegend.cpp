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
        m_noteLine = new QCPTextElement(this, QString(), smallFont(font(), 8));
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
