#include "HeadRolesView.h"

#include "ColorScale.h"
#include "HeadLabel.h"
#include "common/Elements.h"
#include "common/Palette.h"
#include "common/ViewExport.h"

#include <QBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

constexpr double kMargin = 6;
constexpr double kPathGap = 8;         // between the heads of two paths
constexpr double kMaxCellHeight = 34;
constexpr int kBesideCellWidth = 22;   // two runs' grids stand side by side while cells keep this width

// Every role the core scores, in its order (vocab/Snapshot.h): their colours are fixed.
const QStringList& knownRoles()
{
    static const QStringList roles = [] {
        QStringList names;
        for (const std::string& name : headRoleNames(/*languageModel=*/true))
            names << QString::fromStdString(name);
        return names;
    }();
    return roles;
}

// The roles of a validation's scores, as the views write them.
QStringList roleNames(const HeadRoleScores& scores)
{
    QStringList names;
    for (const std::string& name : scores.roles)
        names << QString::fromStdString(name);
    return names;
}

// A head's scores, one per role; empty outside the measured heads.
std::vector<double> headScores(const HeadRoleScores& s, int layer, int head)
{
    return valueAt(valueAt(s.scores, layer), head);
}

QFont smallFont(const QFont& base)
{
    QFont font = base;
    font.setPointSizeF(std::max(7.0, base.pointSizeF() * 0.85));
    return font;
}

QFont boldFont(const QFont& base)
{
    QFont font = base;
    font.setBold(true);
    return font;
}

QString score3(double score) { return QString::number(score, 'f', 3); }

// The attention paths of a run at `step`: measured path weights, else the configuration.
int runPaths(const InsightHistory& history, qint64 step)
{
    const TrainingSnapshot* state = history.stateAt(step);
    if (state == nullptr && !history.states().isEmpty())
        state = &history.states().front();
    if (state != nullptr && !state->paths.empty())
        return attentionPaths(state);
    return history.architecture() ? std::max(1, history.architecture()->paths) : 1;
}

// The roles of `states` together: the core's in its order, then others as first met.
QStringList roleUnion(const QVector<const HeadRoleScores*>& states)
{
    QStringList all;
    for (const QString& role : knownRoles())
        for (const HeadRoleScores* s : states)
            if (roleNames(*s).contains(role) && !all.contains(role))
                all << role;
    for (const HeadRoleScores* s : states)
        for (const QString& role : roleNames(*s))
            if (!all.contains(role))
                all << role;
    return all;
}

}  // namespace

QColor headRoleColor(const QString& role, int index, const QColor& text)
{
    const qsizetype known = knownRoles().indexOf(role);
    if (known == knownRoles().size() - 1)
        return text;  // induction: black (white on a dark theme), unlike any hue
    if (known >= 0)
        return palette::seriesColor(static_cast<int>(known));
    return colorscale::categorical(palette::seriesCount() + std::max(0, index));
}

HeadRoleCell headRoleCell(const QColor& role, double score, const QColor& base)
{
    return {palette::blend(base, role, 0.15), role, std::isfinite(score) ? std::clamp(score, 0.0, 1.0) : 0.0};
}

// --- HeadRoleGrid -------------------------------------------------------------

HeadRoleGrid::HeadRoleGrid(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
    QSizePolicy policy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
}

void HeadRoleGrid::setState(const HeadRoleScores& state, int paths, const QString& title)
{
    m_state = state;
    m_paths = std::max(1, paths);
    m_title = title;
    m_emptyText.clear();
    m_hover = {-1, -1};
    if (m_selected.y() >= m_state.layers() || m_selected.x() >= m_state.heads())
        m_selected = {-1, -1};
    updateGeometry();
    update();
}

void HeadRoleGrid::clear(const QString& emptyText)
{
    m_state = HeadRoleScores();
    m_emptyText = emptyText;
    m_hover = m_selected = {-1, -1};
    updateGeometry();
    update();
}

void HeadRoleGrid::setSelected(int layer, int head)
{
    m_selected = layer >= 0 && head >= 0 ? QPoint(head, layer) : QPoint(-1, -1);
    update();
}

int HeadRoleGrid::dominant(int layer, int head) const
{
    const std::int64_t d = valueAt(valueAt(m_state.dominant, layer), head, std::int64_t{-1});
    return d >= 0 && d < static_cast<std::int64_t>(m_state.roles.size()) ? static_cast<int>(d) : -1;
}

double HeadRoleGrid::dominantScore(int layer, int head) const
{
    const int d = dominant(layer, head);
    return d < 0 ? 0.0 : valueAt(headScores(m_state, layer, head), d, 0.0);
}

QColor HeadRoleGrid::cellColor(int layer, int head) const
{
    if (layer < 0 || head < 0 || layer >= m_state.layers() || head >= sizeOf(m_state.scores[static_cast<std::size_t>(layer)]))
        return {};
    const QColor base = palette().color(QPalette::Base);
    const QColor text = palette().color(QPalette::Text);
    const int d = dominant(layer, head);
    if (d < 0)
        return palette::blend(base, text, 0.08);
    return headRoleColor(roleNames(m_state)[d], d, text);
}

double HeadRoleGrid::cellFill(int layer, int head) const
{
    const double score = dominantScore(layer, head);
    return dominant(layer, head) < 0 || !std::isfinite(score) ? 0.0 : std::clamp(score, 0.0, 1.0);
}

HeadRoleGrid::Geometry HeadRoleGrid::layoutFor(int width, double height) const
{
    Geometry g;
    const QFontMetricsF small(smallFont(font()));
    double top = kMargin;
    if (!m_title.isEmpty()) {
        g.title = QRectF(kMargin, top, std::max(0.0, width - 2 * kMargin), QFontMetricsF(boldFont(font())).height() + 4);
        top = g.title.bottom() + 2;
    }
    const int layers = m_state.layers(), heads = m_state.heads();
    if (layers == 0 || heads == 0) {
        g.cells = QRectF(kMargin, top, std::max(0.0, width - 2 * kMargin), 3 * small.height());
        return g;
    }
    g.perPath = headsPerPath(heads, m_paths);
    const int groups = heads / std::max(1, g.perPath);
    g.gap = groups > 1 ? kPathGap : 0;
    g.labelWidth = small.horizontalAdvance(tr("layer %1").arg(layers)) + 8;
    const double header = (groups > 1 ? small.height() + 2 : 0) + small.height() + 2;  // paths, then heads
    const double room = width - 2 * kMargin - g.labelWidth - g.gap * (groups - 1);
    g.cellWidth = std::clamp(room / heads, double(kMinCellWidth), double(kMaxCellWidth));
    const double fits = (height - top - header - kMargin) / layers;
    g.cellHeight = std::clamp(std::min(g.cellWidth * 0.7, fits), double(kMinCellHeight), kMaxCellHeight);
    g.cells = QRectF(kMargin + g.labelWidth, top + header, heads * g.cellWidth + g.gap * (groups - 1),
                     layers * g.cellHeight);
    return g;
}

HeadRoleGrid::Geometry HeadRoleGrid::layoutNow() const { return layoutFor(width(), height()); }

double HeadRoleGrid::headLeft(const Geometry& g, int head) const
{
    return g.cells.left() + head * g.cellWidth + (g.perPath > 0 ? head / g.perPath : 0) * g.gap;
}

QRectF HeadRoleGrid::cellRect(int layer, int head) const
{
    if (!hasGrid() || layer < 0 || head < 0 || layer >= m_state.layers() || head >= m_state.heads())
        return {};
    const Geometry g = layoutNow();
    return {headLeft(g, head), g.cells.top() + layer * g.cellHeight, g.cellWidth, g.cellHeight};
}

QPoint HeadRoleGrid::cellAt(const QPointF& position) const
{
    if (!hasGrid())
        return {-1, -1};
    const Geometry g = layoutNow();
    if (!g.cells.contains(position))
        return {-1, -1};
    const int layer = std::clamp(int((position.y() - g.cells.top()) / g.cellHeight), 0, m_state.layers() - 1);
    for (int head = 0; head < m_state.heads(); ++head) {
        const double left = headLeft(g, head);
        if (position.x() >= left && position.x() < left + g.cellWidth)
            return {head, layer};
    }
    return {-1, -1};  // in the gap between two paths
}

QString HeadRoleGrid::cellText(int layer, int head) const
{
    const QRectF cell = cellRect(layer, head);
    if (cell.isNull() || dominant(layer, head) < 0)
        return {};
    const QFontMetricsF small(smallFont(font()));
    if (cell.height() < small.height())
        return {};
    const QString full = QString::number(dominantScore(layer, head), 'f', 2);
    if (small.horizontalAdvance(full) + 4 <= cell.width())
        return full;
    QString shortened = full;
    if (shortened.startsWith(QLatin1String("0.")))
        shortened.remove(0, 1);  // ".92"
    else if (shortened == QLatin1String("1.00"))
        shortened = QStringLiteral("1");
    return small.horizontalAdvance(shortened) + 2 <= cell.width() ? shortened : QString();
}

QString HeadRoleGrid::readout(int layer, int head) const
{
    if (layer < 0 || head < 0 || layer >= m_state.layers() || head >= m_state.heads())
        return {};
    QStringList lines{tr("layer %1, %2").arg(layer + 1).arg(headLabel(head, m_state.heads(), m_paths))};
    const int d = dominant(layer, head);
    const QStringList roles = roleNames(m_state);
    lines << (d < 0 ? tr("no dominant role") : tr("dominant: %1 (%2)").arg(roles[d], score3(dominantScore(layer, head))));
    const std::vector<double> scores = headScores(m_state, layer, head);
    for (int r = 0; r < roles.size(); ++r)
        lines << QStringLiteral("%1%2: %3")
                     .arg(r == d ? QStringLiteral("▸ ") : QStringLiteral("   "), roles[r],
                          r < sizeOf(scores) ? score3(scores[static_cast<std::size_t>(r)]) : tr("not scored"));
    return lines.join(QLatin1Char('\n'));
}

int HeadRoleGrid::heightForWidth(int width) const
{
    const Geometry g = layoutFor(width, std::numeric_limits<double>::infinity());
    return int(std::ceil(g.cells.bottom() + kMargin));
}

QSize HeadRoleGrid::sizeHint() const
{
    const int width = hasGrid() ? int(kMargin * 2 + 60 + m_state.heads() * 40) : 320;
    return {width, heightForWidth(width)};
}

QSize HeadRoleGrid::minimumSizeHint() const
{
    const int heads = std::max(1, m_state.heads());
    const int width = int(kMargin * 2 + 60 + heads * kMinCellWidth + (m_paths - 1) * kPathGap);
    const Geometry g = layoutFor(width, 0);  // every row kMinCellHeight
    return {std::min(width, 200 + heads * kMinCellWidth), int(std::ceil(g.cells.bottom() + kMargin))};
}

void HeadRoleGrid::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    const QColor base = palette().color(QPalette::Base);
    const QColor text = palette().color(QPalette::Text);
    painter.fillRect(rect(), base);
    const Geometry g = layoutNow();
    if (!m_title.isEmpty()) {
        painter.setFont(boldFont(font()));
        painter.setPen(text);
        painter.drawText(g.title, Qt::AlignLeft | Qt::AlignVCenter,
                         painter.fontMetrics().elidedText(m_title, Qt::ElideRight, int(g.title.width())));
    }
    const QFont small = smallFont(font());
    const QFontMetricsF metrics(small);
    painter.setFont(small);
    if (!hasGrid()) {
        painter.setPen(palette::blend(text, base, 0.4));
        painter.drawText(g.cells, Qt::AlignCenter | Qt::TextWordWrap, m_emptyText);
        return;
    }
    const int layers = m_state.layers(), heads = m_state.heads();
    const int groups = heads / std::max(1, g.perPath);
    const QColor faintText = palette::blend(text, base, 0.3);
    painter.setPen(faintText);
    // Path headers over their heads, head numbers within the path over each column.
    const double headRow = g.cells.top() - metrics.height() - 2;
    if (groups > 1)
        for (int p = 0; p < groups; ++p) {
            const double left = headLeft(g, p * g.perPath);
            const double right = headLeft(g, (p + 1) * g.perPath - 1) + g.cellWidth;
            const QRectF where(left, headRow - metrics.height() - 2, right - left, metrics.height());
            painter.drawText(where, Qt::AlignCenter, metrics.elidedText(tr("path %1").arg(p + 1), Qt::ElideRight, where.width()));
            painter.drawLine(QPointF(left + 1, where.bottom() + 1), QPointF(right - 1, where.bottom() + 1));
        }
    const int stride = std::max(1, int(std::ceil((metrics.horizontalAdvance(QString::number(g.perPath)) + 4) / g.cellWidth)));
    for (int h = 0; h < heads; ++h) {
        const int inPath = g.perPath > 0 ? h % g.perPath : h;
        if (inPath % stride == 0)  // every k-th when the numbers would touch
            painter.drawText(QRectF(headLeft(g, h) - 10, headRow, g.cellWidth + 20, metrics.height()), Qt::AlignCenter,
                             QString::number(inPath + 1));
    }
    for (int l = 0; l < layers; ++l)
        painter.drawText(QRectF(kMargin, g.cells.top() + l * g.cellHeight, g.labelWidth - 6, g.cellHeight),
                         Qt::AlignRight | Qt::AlignVCenter, tr("layer %1").arg(l + 1));

    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h) {
            const QRectF cell = cellRect(l, h).adjusted(0.5, 0.5, -0.5, -0.5);
            const HeadRoleCell look = headRoleCell(cellColor(l, h), cellFill(l, h), base);
            painter.fillRect(cell, dominant(l, h) < 0 ? cellColor(l, h) : look.tint);
            const double bar = look.fill > 0 ? std::max(2.0, cell.height() * look.fill) : 0.0;
            painter.fillRect(QRectF(cell.left(), cell.bottom() - bar, cell.width(), bar), look.bar);
            const QString label = cellText(l, h);
            if (!label.isEmpty()) {
                // The score sits mid-cell: on the bar from half up, else on the tint.
                const QColor under = look.fill >= 0.5 ? look.bar : look.tint;
                painter.setPen(under.lightnessF() > 0.55 ? Qt::black : Qt::white);
                painter.drawText(cell, Qt::AlignCenter, label);
            }
        }
    painter.setBrush(Qt::NoBrush);
    if (m_hover.x() >= 0) {
        painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
        painter.drawRect(cellRect(m_hover.y(), m_hover.x()).adjusted(1, 1, -1, -1));
    }
    if (m_selected.x() >= 0) {
        // Selected: a ring in the text colour with one in the background inside, on any fill.
        const QRectF cell = cellRect(m_selected.y(), m_selected.x());
        painter.setPen(QPen(text, 2));
        painter.drawRect(cell.adjusted(1, 1, -1, -1));
        painter.setPen(QPen(base, 1));
        painter.drawRect(cell.adjusted(2.5, 2.5, -2.5, -2.5));
    }
}

void HeadRoleGrid::mouseMoveEvent(QMouseEvent* event)
{
    const QPoint cell = cellAt(event->position());
    if (cell != m_hover) {
        m_hover = cell;
        update();
    }
    if (cell.x() >= 0)
        QToolTip::showText(event->globalPosition().toPoint(), readout(cell.y(), cell.x()), this);
    else
        QToolTip::hideText();
}

void HeadRoleGrid::mousePressEvent(QMouseEvent* event)
{
    const QPoint cell = cellAt(event->position());
    if (event->button() == Qt::LeftButton && cell.x() >= 0)
        Q_EMIT cellClicked(cell.y(), cell.x());
    QWidget::mousePressEvent(event);
}

void HeadRoleGrid::leaveEvent(QEvent* event)
{
    if (m_hover.x() >= 0) {
        m_hover = {-1, -1};
        update();
    }
    QWidget::leaveEvent(event);
}

void HeadRoleGrid::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange)
        updateGeometry();
}

// --- HeadRolesView ------------------------------------------------------------

HeadRolesView::HeadRolesView(QWidget* parent) : InsightPage(parent)
{
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_body = new QWidget(this);
    m_body->setAutoFillBackground(true);
    m_legend = new QLabel(m_body);
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setWordWrap(true);
    m_legend->setAccessibleName(tr("Colours of the head roles"));
    m_gridBox = new QBoxLayout(QBoxLayout::LeftToRight);
    for (int i = 0; i < 2; ++i) {
        m_grids[i] = new HeadRoleGrid(m_body);
        m_grids[i]->setAccessibleName(i == 0 ? tr("Role of every head") : tr("Role of every head, comparison run"));
        m_gridBox->addWidget(m_grids[i], 1);
        connect(m_grids[i], &HeadRoleGrid::cellClicked, this, [this, i](int layer, int head) { selectHead(i, layer, head); });
    }
    m_grids[1]->hide();
    m_plotHint = new QLabel(m_body);
    m_plotHint->setWordWrap(true);
    m_plot = new QCustomPlot(m_body);
    m_plot->setAccessibleName(tr("Role scores of the selected head over training"));
    m_plot->setMinimumHeight(170);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("score"));
    m_plot->yAxis->setRange(-0.03, 1.03);
    m_plot->setMouseTracking(true);
    m_cursor = new QCPItemStraightLine(m_plot);
    m_cursor->setVisible(false);
    connect(m_plot, &QCustomPlot::mouseMove, this, &HeadRolesView::plotHovered);

    auto* bodyLayout = new QVBoxLayout(m_body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(m_legend);
    bodyLayout->addLayout(m_gridBox);
    bodyLayout->addWidget(m_plotHint);
    bodyLayout->addWidget(m_plot, 1);
    bodyLayout->addStretch(0);  // the room below the grid until a head's plot is shown
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_empty);
    layout->addWidget(m_body, 1);
    m_plot->hide();
}

void HeadRolesView::refresh()
{
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    QString why;
    for (int i = 0; i < 2; ++i) {
        const InsightSource& source = *sources[i];
        HeadRoleGrid* grid = m_grids[i];
        m_shown[i].reset();
        grid->setVisible(i == 0 || source.valid());
        if (!source.valid()) {
            grid->clear(tr("No run to show."));
            if (i == 0)
                why = grid->emptyText();
            continue;
        }
        const ValidationInsights* insight = source.history->validationInsightAt(m_step);
        QString empty;
        if (insight == nullptr && source.history->validationInsights().isEmpty())
            empty = tr("No validation yet: head roles are scored at each validation, on the validation sample.");
        else if (insight == nullptr)
            empty = tr("No validation at or before step %1: head roles are scored at each validation.").arg(m_step);
        else if (insight->heads.layers() == 0 || insight->heads.heads() == 0)
            empty = tr("The validation at step %1 scored no heads (the run was recorded before head roles were "
                       "measured).")
                        .arg(insight->step);
        if (!empty.isEmpty()) {
            grid->clear(tr("%1: %2").arg(source.label, empty));
            if (i == 0)
                why = empty;
            continue;
        }
        m_shown[i] = Shown{source.label, insight->step, insight->heads};
        grid->setState(insight->heads, runPaths(*source.history, insight->step),
                       tr("%1 · validation at step %2").arg(source.label).arg(insight->step));
    }
    const bool any = m_shown[0] || m_shown[1];
    m_empty->setVisible(!any);
    m_body->setVisible(any);
    m_empty->setText(why);
    // The selected head stays while its run shows it.
    if (m_selectedRun >= 0
        && (!m_shown[m_selectedRun] || m_selectedLayer >= m_shown[m_selectedRun]->heads.layers()
            || m_selectedHead >= m_shown[m_selectedRun]->heads.heads()))
        m_selectedRun = m_selectedLayer = m_selectedHead = -1;
    for (int i = 0; i < 2; ++i)
        m_grids[i]->setSelected(i == m_selectedRun ? m_selectedLayer : -1, i == m_selectedRun ? m_selectedHead : -1);
    showLegend();
    showPlot();
    arrange();
}

void HeadRolesView::selectHead(int run, int layer, int head)
{
    const bool valid = run >= 0 && run < 2 && m_shown[run] && layer >= 0 && head >= 0
                       && layer < m_shown[run]->heads.layers() && head < m_shown[run]->heads.heads();
    m_selectedRun = valid ? run : -1;
    m_selectedLayer = valid ? layer : -1;
    m_selectedHead = valid ? head : -1;
    for (int i = 0; i < 2; ++i)
        m_grids[i]->setSelected(i == m_selectedRun ? m_selectedLayer : -1, i == m_selectedRun ? m_selectedHead : -1);
    showPlot();
}

void HeadRolesView::showLegend()
{
    QVector<const HeadRoleScores*> states;
    for (const auto& shown : m_shown)
        if (shown)
            states << &shown->heads;
    const QColor text = palette().color(QPalette::Text);
    QStringList keys;
    const QStringList roles = roleUnion(states);
    for (const QString& role : roles) {
        int index = 0;
        for (const HeadRoleScores* s : states)
            if (const QStringList names = roleNames(*s); names.contains(role)) {
                index = static_cast<int>(names.indexOf(role));
                break;
            }
        keys << QStringLiteral("<span style=\"color:%1\">■</span>&nbsp;%2")
                    .arg(headRoleColor(role, index, text).name(), role.toHtmlEscaped());
    }
    m_legend->setText(tr("Each head coloured by its dominant role, stronger as its score nears 1 (hover for every "
                         "score, click to follow it over training):<br>%1")
                          .arg(keys.join(QStringLiteral(" &nbsp; "))));
}

bool HeadRolesView::gridsSideBySide() const { return m_gridBox->direction() == QBoxLayout::LeftToRight; }

void HeadRolesView::arrange()
{
    // Beside each other while both grids keep usable cells, else one under the other.
    int heads = 1;
    for (const auto& shown : m_shown)
        if (shown)
            heads = std::max(heads, shown->heads.heads());
    const bool both = m_grids[1]->isVisibleTo(this);
    const int half = (std::max(width(), 200) - 24) / 2 - 80;  // less the layer labels
    const bool beside = !both || half / heads >= kBesideCellWidth;
    const auto direction = beside ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
    if (m_gridBox->direction() != direction)
        m_gridBox->setDirection(direction);
}

void HeadRolesView::resizeEvent(QResizeEvent* event)
{
    InsightPage::resizeEvent(event);
    arrange();
}

double HeadRolesView::plotCursorStep() const
{
    return m_cursor->visible() ? m_cursor->point1->coords().x() : std::numeric_limits<double>::quiet_NaN();
}

void HeadRolesView::showPlot()
{
    m_plot->clearGraphs();
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    if (m_selectedRun < 0 || !sources[m_selectedRun]->valid()) {
        m_plotHint->setText(tr("Click a head to follow its role scores over training."));
        m_plot->hide();
        m_cursor->setVisible(false);
        return;
    }
    const InsightSource& source = *sources[m_selectedRun];
    const Shown& shown = *m_shown[m_selectedRun];
    const int layer = m_selectedLayer, head = m_selectedHead;
    const QColor base = palette().color(QPalette::Base), text = palette().color(QPalette::Text);
    const QColor faint = palette::blend(text, base, 0.55);
    m_plot->setBackground(base);
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setLabelColor(text);
        axis->setTickLabelColor(text);
        axis->setBasePen(QPen(faint));
        axis->setTickPen(QPen(faint));
        axis->setSubTickPen(QPen(faint));
        axis->grid()->setPen(QPen(palette::blend(text, base, 0.88), 0));
    }
    // One graph per role, a point at every validation that scored the head.
    std::map<QString, QCPGraph*> graphs;
    QVector<const HeadRoleScores*> states;
    for (const ValidationInsights& v : source.history->validationInsights())
        states << &v.heads;
    for (const QString& role : roleUnion(states)) {
        QCPGraph* graph = m_plot->addGraph();
        graph->setName(role);
        const int index = static_cast<int>(roleNames(shown.heads).indexOf(role));
        const QColor color = headRoleColor(role, index, text);
        graph->setPen(QPen(color, 1.6));
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, 5));
        graphs[role] = graph;
    }
    double first = std::numeric_limits<double>::infinity(), last = -first;
    for (const ValidationInsights& v : source.history->validationInsights()) {
        const std::vector<double> scores = headScores(v.heads, layer, head);
        if (scores.empty())
            continue;
        const QStringList roles = roleNames(v.heads);
        for (int r = 0; r < roles.size() && r < sizeOf(scores); ++r)
            if (std::isfinite(scores[static_cast<std::size_t>(r)]))
                graphs[roles[r]]->addData(double(v.step), scores[static_cast<std::size_t>(r)]);
        first = std::min(first, double(v.step));
        last = std::max(last, double(v.step));
    }
    if (first <= last)
        m_plot->xAxis->setRange(first == last ? first - 1 : first - 0.02 * (last - first),
                                first == last ? last + 1 : last + 0.02 * (last - first));
    m_cursor->setPen(QPen(palette().color(QPalette::Highlight), 1.5, Qt::DashLine));
    m_cursor->point1->setCoords(double(shown.step), 0);
    m_cursor->point2->setCoords(double(shown.step), 1);
    m_cursor->setVisible(true);
    const HeadRoleGrid* grid = m_grids[m_selectedRun];
    const int d = grid->dominant(layer, head);
    m_plotHint->setText(tr("<b>%1 · layer %2, %3</b>: role scores at each validation; the dashed line is the step "
                           "shown (step %4, dominant: %5)")
                            .arg(source.label.toHtmlEscaped())
                            .arg(layer + 1)
                            .arg(headLabel(head, shown.heads.heads(), grid->paths()))
                            .arg(shown.step)
                            .arg(d < 0 ? tr("none") : roleNames(shown.heads)[d].toHtmlEscaped()));
    m_plot->show();
    m_plot->replot();
}

void HeadRolesView::plotHovered(QMouseEvent* event)
{
    // The validation nearest the pointer in x, with every role's score there.
    if (m_plot->graphCount() == 0 || !m_plot->axisRect()->rect().contains(event->position().toPoint())) {
        QToolTip::hideText();
        return;
    }
    const double x = m_plot->xAxis->pixelToCoord(event->position().x());
    double best = std::numeric_limits<double>::quiet_NaN();
    for (int g = 0; g < m_plot->graphCount(); ++g)
        for (const QCPGraphData& point : *m_plot->graph(g)->data())
            if (!std::isfinite(best) || std::abs(point.key - x) < std::abs(best - x))
                best = point.key;
    if (!std::isfinite(best)) {
        QToolTip::hideText();
        return;
    }
    QStringList lines{tr("step %1").arg(qint64(best))};
    for (int g = 0; g < m_plot->graphCount(); ++g) {
        const QCPGraph* graph = m_plot->graph(g);
        const auto it = graph->data()->findBegin(best, false);
        if (it != graph->data()->constEnd() && it->key == best)
            lines << QStringLiteral("%1: %2").arg(graph->name(), score3(it->value));
    }
    QToolTip::showText(event->globalPosition().toPoint(), lines.join(QLatin1Char('\n')), m_plot);
}

QString HeadRolesView::exportTitle() const
{
    return m_shown[0] ? tr("head roles %1 step %2").arg(m_primary.label).arg(m_shown[0]->step)
                      : tr("head roles %1").arg(m_primary.label);
}

QByteArray HeadRolesView::csv() const
{
    QVector<const HeadRoleScores*> states;
    for (const auto& shown : m_shown)
        if (shown)
            states << &shown->heads;
    const QStringList roles = roleUnion(states);
    QByteArray out = "step,run,layer,head";
    for (const QString& role : roles)
        out += ',' + csvField(role);
    out += ",dominant\n";
    for (const auto& shown : m_shown) {
        if (!shown)
            continue;
        const HeadRoleScores& s = shown->heads;
        const QStringList names = roleNames(s);
        for (int l = 0; l < s.layers(); ++l)
            for (int h = 0; h < sizeOf(s.scores[static_cast<std::size_t>(l)]); ++h) {
                out += QByteArray::number(shown->step) + ',' + csvField(shown->label) + ','
                       + QByteArray::number(l + 1) + ',' + QByteArray::number(h + 1);
                const std::vector<double> scores = headScores(s, l, h);
                for (const QString& role : roles) {
                    const qsizetype r = names.indexOf(role);
                    out += ',';
                    if (r >= 0 && r < sizeOf(scores))
                        out += csvNumber(scores[static_cast<std::size_t>(r)]);
                }
                const std::int64_t d = valueAt(valueAt(s.dominant, l), h, std::int64_t{-1});
                out += ',' + (d >= 0 && d < names.size() ? csvField(names[d]) : QByteArray()) + '\n';
            }
    }
    return out;
}

}  // namespace widelab
