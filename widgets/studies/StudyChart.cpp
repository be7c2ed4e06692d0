#include "StudyChart.h"

#include "common/Palette.h"
#include "curves/SiAxisTicker.h"
#include "common/ViewExport.h"


#include <algorithm>
#include <cmath>

namespace widelab {
namespace {

using palette::blend;

// The member's values on every axis but `axis`: the series it belongs to.
QString otherAxesText(const StudyData& study, const StudyMemberRow& member, int axis)
{
    QStringList parts;
    for (int other = 0; other < study.axes.size(); ++other)
        if (other != axis)
            parts << studyAxisValueText(study, member, other, true);
    return parts.join(QStringLiteral(", "));
}

// Costs and losses: less is better; accuracy and throughput: more is.
bool lowerIsBetter(const QString& measure)
{
    static const QStringList costs{QStringLiteral("latency_ms"), QStringLiteral("wall_s"),
                                   QStringLiteral("peak_memory_bytes"), QStringLiteral("flops_per_token"),
                                   QStringLiteral("stored_parameters"), QStringLiteral("active_parameters"),
                                   QStringLiteral("steps")};
    return measure.contains(QLatin1String("loss")) || costs.contains(measure);
}

}  // namespace

StudyChart::StudyChart(QWidget* parent) : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("studyChart"));
    setMinimumSize(240, 150);
    plotLayout()->insertRow(0);
    m_title = new QCPTextElement(this, QString(), QFont(font().family(), font().pointSize() + 1, QFont::DemiBold));
    plotLayout()->addElement(0, 0, m_title);
    legend->setVisible(true);
    // The legend under the axis rect, never over the data.
    auto* legendRow = new QCPLayoutGrid;
    plotLayout()->addElement(2, 0, legendRow);
    legendRow->addElement(0, 0, legend);
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    legend->setWrap(3);
    plotLayout()->setRowStretchFactor(2, 0.001);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    applyPalette();
}

QString StudyChart::title() const
{
    return m_title->text();
}

void StudyChart::setStudy(const StudyData& study)
{
    m_study = study;
    if (!m_study.measure(m_measure)) {
        // The study's metric as its best validation: what the paper reports is test
        // accuracy, but a study running has validations long before its test.
        const QString metric = QStringLiteral("test_") + (m_study.metric.isEmpty() ? QStringLiteral("accuracy") : m_study.metric);
        m_measure = m_study.measure(metric) ? metric : QString();
        if (m_measure.isEmpty() && !m_study.measures.isEmpty())
            m_measure = m_study.measures.front().key;
    }
    if (m_axis >= m_study.axes.size())
        m_axis = 0;
    rebuild();
}

void StudyChart::setKind(Kind kind)
{
    m_kind = kind;
    rebuild();
}

void StudyChart::setMeasure(const QString& key)
{
    if (!m_study.measure(key))
        return;
    m_measure = key;
    rebuild();
}

void StudyChart::setAxis(int index)
{
    if (index < 0 || index >= m_study.axes.size())
        return;
    m_axis = index;
    rebuild();
}

void StudyChart::rebuild()
{
    m_points.clear();
    m_categories.clear();
    m_series.clear();
    m_front.clear();
    if (m_kind == Kind::AgainstAxis)
        collectAgainstAxis();
    else
        collectAgainstMeasure(m_kind == Kind::AgainstParameters ? QStringLiteral("stored_parameters")
                                                                : QStringLiteral("latency_ms"));
    draw();
}

void StudyChart::collectAgainstAxis()
{
    const StudyMeasureInfo* measure = m_study.measure(m_measure);
    if (!measure || m_study.axes.isEmpty())
        return;
    // Every point once: its category along the axis and its series (the other axes).
    for (const QString& point : m_study.points()) {
        const StudyMemberRow& first = *std::find_if(m_study.members.begin(), m_study.members.end(),
                                                    [&](const StudyMemberRow& m) { return m.point == point; });
        const QString category = studyAxisValueText(m_study, first, m_axis, false);
        const QString series = otherAxesText(m_study, first, m_axis);
        if (!m_categories.contains(category))
            m_categories << category;
        if (!m_series.contains(series))
            m_series << series;
        const StudyPointMeasure* value = m_study.pointMeasure(point, m_measure);
        if (!value)
            continue;
        m_points.push_back({series, series, point, category, double(m_categories.indexOf(category)),
                            value->mean * measure->scale, value->spread * measure->scale, value->seeds, false, QString()});
    }
    // The papers' values, at every point they give (finished or not), after the study's.
    // Not latencies: the paper's milliseconds are its hardware's; the notes compare ratios.
    for (const StudyPaperSeries& paper : m_study.papers) {
        if (paper.measure != m_measure || m_measure == QLatin1String("latency_ms"))
            continue;
        const QString table = paper.source.section(QLatin1Char(','), 0, 0).trimmed();
        for (const StudyPaperPoint& p : paper.points) {
            const auto member = std::find_if(m_study.members.begin(), m_study.members.end(),
                                             [&](const StudyMemberRow& m) { return m.point == p.point; });
            if (member == m_study.members.end())
                continue;
            const QString category = studyAxisValueText(m_study, *member, m_axis, false);
            const QString group = otherAxesText(m_study, *member, m_axis);
            const QString series = tr("paper, %1").arg(table) + (group.isEmpty() ? QString() : QStringLiteral(": ") + group);
            m_points.push_back({series, group, p.point, category, double(m_categories.indexOf(category)),
                                p.value * measure->scale, p.spread * measure->scale, 0, true,
                                paper.paper + QStringLiteral(", ") + paper.source + QStringLiteral(": ") + p.label});
        }
    }
}

void StudyChart::collectAgainstMeasure(const QString& xKey)
{
    const StudyMeasureInfo* measure = m_study.measure(m_measure);
    const StudyMeasureInfo* xMeasure = m_study.measure(xKey);
    if (!measure || !xMeasure)
        return;
    for (const QString& point : m_study.points()) {
        const StudyPointMeasure* x = m_study.pointMeasure(point, xKey);
        const StudyPointMeasure* y = m_study.pointMeasure(point, m_measure);
        if (!x || !y)
            continue;
        // The point as its axes' values call it: "1x48", "full, 6x8".
        const StudyMemberRow& first = *std::find_if(m_study.members.begin(), m_study.members.end(),
                                                    [&](const StudyMemberRow& m) { return m.point == point; });
        QStringList names;
        for (int axis = 0; axis < m_study.axes.size(); ++axis)
            names << studyAxisValueText(m_study, first, axis, false);
        m_points.push_back({QString(), QString(), point, names.join(QStringLiteral(", ")), x->mean * xMeasure->scale,
                            y->mean * measure->scale, y->spread * measure->scale, y->seeds, false, QString()});
    }
    // The front: no other point is at once smaller in x and better in y.
    const bool lower = lowerIsBetter(m_measure);
    for (const Point& p : m_points) {
        const bool dominated = std::any_of(m_points.begin(), m_points.end(), [&](const Point& q) {
            const bool better = lower ? q.y < p.y : q.y > p.y;
            const bool notWorse = lower ? q.y <= p.y : q.y >= p.y;
            return (q.x < p.x && notWorse) || (q.x <= p.x && better);
        });
        if (!dominated)
            m_front << p.point;
    }
}

void StudyChart::draw()
{
    clearPlottables();
    clearItems();
    const StudyMeasureInfo* measure = m_study.measure(m_measure);
    const QString measureTitle = measure ? measure->title : QString();
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::Text);
    const QColor background = pal.color(QPalette::Base);

    if (m_kind == Kind::AgainstAxis) {
        const QString axisLabel = m_study.axes.isEmpty() ? QString()
                                  : m_study.axes.at(m_axis).label.isEmpty()
                                      ? m_study.axes.at(m_axis).keys.join(QStringLiteral(", "))
                                      : m_study.axes.at(m_axis).label;
        m_title->setText(measureTitle.isEmpty() ? tr("No results yet")
                                                : tr("%1 against %2").arg(measureTitle, axisLabel));
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (int i = 0; i < m_categories.size(); ++i)
            ticker->addTick(i, m_categories.at(i));
        xAxis->setTicker(ticker);
        xAxis->setLabel(axisLabel);
        xAxis->setRange(-0.5, std::max<double>(m_categories.size(), 1) - 0.5);
    } else {
        const bool parameters = m_kind == Kind::AgainstParameters;
        m_title->setText(measureTitle.isEmpty() ? tr("No results yet")
                         : parameters           ? tr("%1 against stored parameters").arg(measureTitle)
                                                : tr("%1 against inference latency").arg(measureTitle));
        if (parameters)
            xAxis->setTicker(QSharedPointer<SiAxisTicker>::create());
        else
            xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        xAxis->setLabel(parameters ? tr("stored parameters") : tr("latency, ms (batch 1)"));
    }
    yAxis->setLabel(measureTitle);

    // Series: the study's in palette order; a paper series in its study series' colour, hollow and dashed.
    QVector<const Point*> firsts;  // the first point of each drawn series
    for (const Point& p : m_points)
        if (std::none_of(firsts.begin(), firsts.end(), [&](const Point* q) { return q->series == p.series; }))
            firsts << &p;
    const int count = static_cast<int>(m_series.size());
    for (const Point* first : firsts) {
        const QString series = first->series;
        const bool paper = first->paper;
        const int index = std::max(0, static_cast<int>(m_series.indexOf(first->group)));
        const QColor color = palette::seriesColor(index);
        // In x order: the graph keeps its data sorted by x, the error bars in the order given.
        struct Drawn {
            double x, y, error;
        };
        QVector<Drawn> drawn;
        for (const Point& p : m_points) {
            if (p.series != series)
                continue;
            // Side by side within a category: the series spread over a fifth of it, the paper's just right of its own.
            const double offset = m_kind == Kind::AgainstAxis && count > 1 ? 0.2 * (index / double(count - 1) - 0.5) : 0.0;
            drawn.push_back({p.x + offset + (paper ? 0.06 : 0.0), p.y, std::isfinite(p.spread) ? p.spread : 0.0});
        }
        std::stable_sort(drawn.begin(), drawn.end(), [](const Drawn& a, const Drawn& b) { return a.x < b.x; });
        QVector<double> xs, ys, errors;
        for (const Drawn& d : drawn)
            xs << d.x, ys << d.y, errors << d.error;
        QCPGraph* graph = addGraph();
        graph->setName(!series.isEmpty() ? series : m_kind == Kind::AgainstAxis ? tr("this study") : tr("axis points"));
        graph->setData(xs, ys);
        QPen pen(color, paper ? 1.2 : 2.0, paper ? Qt::DashLine : Qt::SolidLine);
        graph->setPen(m_kind == Kind::AgainstAxis ? pen : QPen(Qt::NoPen));
        graph->setLineStyle(m_kind == Kind::AgainstAxis ? QCPGraph::lsLine : QCPGraph::lsNone);
        graph->setScatterStyle(paper ? QCPScatterStyle(QCPScatterStyle::ssDiamond, QPen(color, 1.5), background, 9)
                                     : QCPScatterStyle(QCPScatterStyle::ssDisc, color, 7));
        auto* bars = new QCPErrorBars(xAxis, yAxis);
        bars->setDataPlottable(graph);
        bars->setData(errors);
        bars->setPen(QPen(color, 1.2));
        bars->removeFromLegend();
    }
    if (m_kind != Kind::AgainstAxis) {
        // Each marker names its point; the front is drawn dashed through its points, in x order.
        QVector<QPair<double, double>> front;
        for (const Point& p : m_points) {
            auto* label = new QCPItemText(this);
            label->position->setCoords(p.x, p.y);
            label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
            label->setPadding(QMargins(6, 0, 0, 4));
            label->setText(p.xText);
            label->setColor(blend(text, background, 0.25));
            if (m_front.contains(p.point))
                front.push_back({p.x, p.y});
        }
        std::sort(front.begin(), front.end());
        if (front.size() > 1) {
            QCPGraph* line = addGraph();
            line->setName(tr("Pareto front"));
            QVector<double> xs, ys;
            for (const auto& [x, y] : front)
                xs << x, ys << y;
            line->setData(xs, ys, true);
            line->setPen(QPen(blend(text, background, 0.45), 1.2, Qt::DashLine));
        }
        rescaleAxes();
        const QCPRange x = xAxis->range();
        xAxis->setRange(x.lower - 0.1 * std::max(x.size(), std::abs(x.center()) * 0.1),
                        x.upper + 0.25 * std::max(x.size(), std::abs(x.center()) * 0.1));
    } else {
        yAxis->rescale();
    }
    const QCPRange y = yAxis->range();
    double lowest = y.lower, highest = y.upper;
    for (const Point& p : m_points) {
        const double e = std::isfinite(p.spread) ? p.spread : 0.0;
        lowest = std::min(lowest, p.y - e);
        highest = std::max(highest, p.y + e);
    }
    const double pad = std::max((highest - lowest) * 0.08, 1e-9 + std::abs(highest) * 0.02);
    if (!m_points.isEmpty())
        yAxis->setRange(lowest - pad, highest + pad);
    legend->setVisible(plottableCount() > 0);
    replot();
}

void StudyChart::applyPalette()
{
    const QPalette pal = palette();
    const QColor background = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    setBackground(background);
    m_title->setTextColor(blend(text, background, 0.2));
    for (QCPAxis* axis : {xAxis, yAxis}) {
        axis->setBasePen(QPen(blend(text, background, 0.55)));
        axis->setTickPen(QPen(blend(text, background, 0.55)));
        axis->setSubTickPen(QPen(blend(text, background, 0.55)));
        axis->setTickLabelColor(blend(text, background, 0.2));
        axis->setLabelColor(blend(text, background, 0.2));
        axis->grid()->setPen(QPen(blend(text, background, 0.9), 0));
    }
    legend->setTextColor(blend(text, background, 0.2));
    legend->setBrush(Qt::NoBrush);
    legend->setBorderPen(Qt::NoPen);
}

void StudyChart::changeEvent(QEvent* event)
{
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        applyPalette();
        draw();
    }
}

bool StudyChart::exportImage(const QString& path, QString* error)
{
    replot(QCustomPlot::rpImmediateRefresh);
    return viewexport::exportWidgetImage(this, path, title(), error);
}

bool StudyChart::exportCsv(const QString& path, QString* error) const
{
    using viewexport::csvField;
    using viewexport::csvNumber;
    const QString xName = m_kind == Kind::AgainstAxis        ? QStringLiteral("category_index")
                          : m_kind == Kind::AgainstParameters ? QStringLiteral("stored_parameters")
                                                              : QStringLiteral("latency_ms");
    QByteArray csv = "series,point,x_label," + xName.toUtf8() + "," + m_measure.toUtf8() + ",spread,seeds,source\n";
    for (const Point& p : m_points) {
        csv += csvField(p.series) + ',' + csvField(p.point) + ',' + csvField(p.xText) + ',' + csvNumber(p.x) + ','
               + csvNumber(p.y) + ',' + (std::isfinite(p.spread) ? csvNumber(p.spread) : QByteArray()) + ','
               + QByteArray::number(p.seeds) + ',' + csvField(p.source) + '\n';
    }
    return viewexport::writeFile(path, csv, error);
}

void StudyChart::exportWithDialog()
{
    QStringList filters = viewexport::imageFilters();
    filters << viewexport::csvFilter();
    viewexport::exportWithDialog(this, title().isEmpty() ? tr("study chart") : title(), filters, m_exportDirectory,
                                 [this](const QString& path, QString* error) {
                                     return viewexport::isCsvPath(path) ? exportCsv(path, error)
                                                                        : exportImage(path, error);
                                 });
}

}  // namespace widelab
