#include "LogitLensView.h"

#include "common/Palette.h"
#include "common/ViewExport.h"

#include <QBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

// A probability in few characters: ".62", "1.00".
QString shortProbability(float p)
{
    if (!std::isfinite(p))
        return {};
    QString text = QString::number(p, 'f', 2);
    if (text.startsWith(QLatin1String("0.")))
        text.remove(0, 1);
    return text;
}

QFont labelFont(const QFont& base)  // as MatrixView draws its labels
{
    QFont font = base;
    font.setPointSizeF(std::max(7.0, base.pointSizeF() * 0.85));
    return font;
}

}  // namespace

// --- LensMap ----------------------------------------------------------------------

void LensMap::setMarks(const QVector<int>& topColumns, int trueColumn)
{
    m_top = topColumns;
    m_true = trueColumn;
    update();
}

void LensMap::paintEvent(QPaintEvent* event)
{
    MatrixView::paintEvent(event);
    const Matrix& m = matrix();
    if (cellRect(0, 0).isNull())
        return;
    QPainter painter(this);
    painter.setBrush(Qt::NoBrush);
    // The true class: its whole column framed, dashed, in the text colour with a background halo.
    if (m_true >= 0 && m_true < m.cols) {
        const QRectF column = cellRect(0, m_true).united(cellRect(m.rows - 1, m_true)).adjusted(-1.5, -1.5, 1.5, 1.5);
        painter.setPen(QPen(palette().color(QPalette::Base), 3));
        painter.drawRect(column);
        painter.setPen(QPen(palette().color(QPalette::Text), 1.5, Qt::DashLine));
        painter.drawRect(column);
    }
    // Each stage's top class: outlined in vermillion, which stands out on the whole sequential ramp.
    painter.setPen(QPen(palette::seriesColor(5), 2));
    for (int r = 0; r < m_top.size() && r < m.rows; ++r)
        if (m_top[r] >= 0 && m_top[r] < m.cols)
            painter.drawRect(cellRect(r, m_top[r]).adjusted(1, 1, -1, -1));
}

// --- LogitLensView ----------------------------------------------------------------

LogitLensView::LogitLensView(QWidget* parent) : InsightPage(parent)
{
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_body = new QWidget(this);
    m_body->setAutoFillBackground(true);
    m_note = new QLabel(tr("Each row reads the model's prediction off the residual stream after one sublayer (its "
                           "final LayerNorm and head applied there); the last row is the model's output. Outlined: "
                           "each stage's most likely class. Dashed column: the true class."),
                        m_body);
    m_note->setWordWrap(true);
    m_paneBox = new QBoxLayout(QBoxLayout::LeftToRight);
    for (int i = 0; i < 2; ++i) {
        Pane& pane = m_panes[i];
        pane.box = new QWidget(m_body);
        pane.header = new QLabel(pane.box);
        pane.header->setTextFormat(Qt::PlainText);
        QFont bold = pane.header->font();
        bold.setBold(true);
        pane.header->setFont(bold);
        pane.map = new LensMap;
        pane.map->setAccessibleName(i == 0 ? tr("Logit lens") : tr("Logit lens, comparison run"));
        pane.area = new QScrollArea(pane.box);
        pane.area->setWidget(pane.map);
        pane.area->setWidgetResizable(true);
        pane.area->setFrameShape(QFrame::NoFrame);
        pane.area->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        pane.area->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
        pane.top = new QLabel(pane.box);
        pane.top->setTextFormat(Qt::RichText);
        pane.top->setTextInteractionFlags(Qt::TextSelectableByMouse);
        pane.top->setAlignment(Qt::AlignTop | Qt::AlignLeft);
        pane.top->setAccessibleName(tr("Top prediction of each stage"));
        auto* row = new QHBoxLayout;
        row->setContentsMargins(0, 0, 0, 0);
        row->addWidget(pane.area, 1, Qt::AlignTop);
        row->addWidget(pane.top, 0, Qt::AlignTop);
        row->addStretch(0);  // what the map (at its widest) leaves, right of the words
        auto* column = new QVBoxLayout(pane.box);
        column->setContentsMargins(0, 0, 0, 0);
        column->addWidget(pane.header);
        column->addLayout(row);
        column->addStretch(1);
        m_paneBox->addWidget(pane.box, 1);
    }
    m_panes[1].box->hide();
    auto* bodyLayout = new QVBoxLayout(m_body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(m_note);
    bodyLayout->addLayout(m_paneBox);
    bodyLayout->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_empty);
    layout->addWidget(m_body, 1);
}

LogitLensView::Shown LogitLensView::shownOf(const ProbeResult& capture, const QString& label)
{
    Shown s;
    s.label = label;
    s.text = probeTextOf(capture);
    s.step = capture.step;
    const std::vector<std::int64_t>& lensColumns = capture.lensColumns;
    const QStringList labels = probeLabels(capture);
    qsizetype cols = static_cast<qsizetype>(lensColumns.size());
    for (const LensStage& stage : capture.logitLens)
        cols = std::max(cols, static_cast<qsizetype>(stage.distribution.size()));
    for (int c = 0; c < cols; ++c) {
        std::int64_t index = c;  // no lensColumns: every label, in order
        if (!lensColumns.empty())
            index = static_cast<std::size_t>(c) < lensColumns.size() ? lensColumns[static_cast<std::size_t>(c)] : -1;
        s.columns << (index >= 0 ? labels.value(index, QString::number(index)) : QString::number(c));
    }
    const std::int64_t trueLabel = capture.label;
    if (trueLabel >= 0) {
        if (lensColumns.empty())
            s.trueColumn = trueLabel < cols ? static_cast<int>(trueLabel) : -1;
        else if (auto at = std::find(lensColumns.begin(), lensColumns.end(), trueLabel); at != lensColumns.end())
            s.trueColumn = static_cast<int>(at - lensColumns.begin());
    }
    for (const LensStage& stage : capture.logitLens) {
        s.stages << lensStageName(stage);
        QVector<float> row(stage.distribution.begin(), stage.distribution.end());
        row.resize(cols, std::numeric_limits<float>::quiet_NaN());
        int best = -1;
        for (int c = 0; c < cols; ++c)
            if (std::isfinite(row[c]) && (best < 0 || row[c] > row[best]))
                best = c;
        s.lens << row;
        s.top << best;
        s.lines << (best < 0 ? tr("%1: no prediction").arg(s.stages.back())
                             : tr("%1: predicts %2 (%3)%4")
                                   .arg(s.stages.back(), visibleToken(s.columns[best]),
                                        QString::number(row[best], 'f', 2),
                                        best == s.trueColumn ? QStringLiteral(" ✓") : QString()));
    }
    return s;
}

void LogitLensView::refresh()
{
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    const QString text = probeText();
    QString why;
    for (int i = 0; i < 2; ++i) {
        const InsightSource& source = *sources[i];
        m_shown[i].reset();
        m_panes[i].box->setVisible(i == 0 || source.valid());
        if (!source.valid()) {
            showPane(i, nullptr, tr("No run to show."));
            if (i == 0)
                why = tr("No run to show.");
            continue;
        }
        const ProbeResult* capture = source.history->captureAt(text, m_step);
        QString empty;
        if (capture == nullptr && !source.history->captures(text).isEmpty())
            empty = tr("The first capture of this text is after step %1.").arg(m_step);
        else if (capture == nullptr)
            empty = tr("No probe captured yet: the logit lens is read with every validation's probe capture; add a "
                       "text with Add probe….");
        else if (capture->logitLens.empty())
            empty = tr("The capture at step %1 has no logit lens (the run was recorded before the lens was measured).")
                        .arg(capture->step);
        if (!empty.isEmpty()) {
            showPane(i, nullptr, tr("%1: %2").arg(source.label, empty));
            if (i == 0)
                why = empty;
            continue;
        }
        m_shown[i] = shownOf(*capture, source.label);
        showPane(i, &*m_shown[i], QString());
    }
    const bool any = m_shown[0] || m_shown[1];
    m_empty->setVisible(!any);
    m_body->setVisible(any);
    m_empty->setText(why);
    arrange();
}

void LogitLensView::showPane(int run, const Shown* shown, const QString& why)
{
    Pane& pane = m_panes[run];
    if (shown == nullptr) {
        pane.header->setText(why);
        pane.header->setWordWrap(true);
        pane.map->setMarks({}, -1);
        pane.map->clear();
        pane.area->hide();
        pane.top->clear();
        pane.top->hide();
        return;
    }
    pane.header->setWordWrap(false);
    pane.header->setText(tr("%1 · step %2 · \"%3\"").arg(shown->label).arg(shown->step).arg(shown->text));
    pane.area->show();
    pane.top->show();
    const InsightSource& source = run == 0 ? m_primary : m_comparison;
    const QString head = source.history->architecture() ? source.history->architecture()->headKind : QString();
    const bool tokens = head == QLatin1String("language_model") || head == QLatin1String("masked_lm");
    MatrixView::Matrix m;
    m.rows = static_cast<int>(shown->stages.size());
    m.cols = static_cast<int>(shown->columns.size());
    m.rowTitle = tr("stage");
    m.columnTitle = head == QLatin1String("masked_lm") ? tr("hidden token") : tokens ? tr("next token") : tr("class");
    m.rowLabels = shown->stages;
    for (int c = 0; c < m.cols; ++c)
        m.columnLabels << (c == shown->trueColumn ? QStringLiteral("✓") : QString()) + visibleToken(shown->columns[c]);
    for (const QVector<float>& row : shown->lens) {
        m.values += row;
        for (float p : row)
            m.cellTexts << shortProbability(p);
    }
    m.low = 0;
    m.high = 1;
    m.valueName = tr("probability");
    m.decimals = 2;
    const Shown copy = *shown;
    pane.map->setReadout([copy](int row, int col) {
        QString text = tr("%1, %2: probability %3")
                           .arg(copy.stages.value(row), visibleToken(copy.columns.value(col)),
                                QString::number(copy.lens.value(row).value(col), 'f', 4));
        if (copy.top.value(row) == col)
            text += tr(" (this stage's top class)");
        if (col == copy.trueColumn)
            text += tr(" (the true class)");
        return text;
    });
    pane.map->setMatrix(std::move(m));
    pane.map->setMarks(shown->top, shown->trueColumn);

    // Every column at least kMinCellWidth wide (the area scrolls sideways past
    // that), at most kMaxCellWidth; every stage a row of kRowHeight.
    const QFontMetricsF labels(labelFont(pane.map->font()));
    double rowLabels = 0, columnLabels = 0;
    for (const QString& label : pane.map->matrix().rowLabels)
        rowLabels = std::max(rowLabels, labels.horizontalAdvance(label));
    for (const QString& label : pane.map->matrix().columnLabels)
        columnLabels = std::max(columnLabels, labels.horizontalAdvance(label));
    const double fixed = 12 + labels.height() + 2 + rowLabels + 4 + 12 + 6 + labels.horizontalAdvance(QStringLiteral("0.00")) + 8;
    const int cols = std::max(1, pane.map->matrix().cols);
    // MatrixView gives column labels up to 30 % of its height: tall enough that
    // upright token labels (at most 90 pixels) are not cut, and rows of kRowHeight.
    const double titles = labels.height() + 2;
    const double columnHeight =
        columnLabels + 4 > kMinCellWidth ? std::min(columnLabels + 4, 90.0) : labels.height() + 2;
    const int height = int(std::ceil(
        12 + std::max(titles + columnHeight + kRowHeight * pane.map->matrix().rows, columnHeight / 0.3)));
    pane.map->setMinimumSize(int(std::ceil(fixed + cols * kMinCellWidth)), height);
    pane.map->setMaximumWidth(int(std::ceil(fixed + cols * kMaxCellWidth)));
    pane.area->setFixedHeight(height + pane.area->horizontalScrollBar()->sizeHint().height());
    pane.area->setMaximumWidth(pane.map->maximumWidth());  // the words stay beside the map

    QStringList lines;
    for (qsizetype i = 0; i < shown->lines.size(); ++i) {
        const QString line = shown->lines[i].toHtmlEscaped();
        lines << (i == shown->lines.size() - 1 ? QStringLiteral("<b>%1</b>").arg(line) : line);
    }
    pane.top->setText(tr("<b>Top prediction per stage</b><br>%1").arg(lines.join(QStringLiteral("<br>"))));
}

QStringList LogitLensView::topLines(int run) const { return m_shown[run] ? m_shown[run]->lines : QStringList(); }

int LogitLensView::paneWidth(int run) const
{
    const Pane& pane = m_panes[run];
    if (!m_shown[run])
        return 200;
    return pane.map->minimumWidth() + pane.top->sizeHint().width() + 12;
}

bool LogitLensView::panesSideBySide() const { return m_paneBox->direction() == QBoxLayout::LeftToRight; }

void LogitLensView::arrange()
{
    // Side by side while both show every column at the smallest width, else one under the other.
    const bool both = m_panes[1].box->isVisibleTo(this);
    const bool beside = !both || paneWidth(0) + paneWidth(1) + 12 <= width();
    const auto direction = beside ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
    if (m_paneBox->direction() != direction)
        m_paneBox->setDirection(direction);
}

void LogitLensView::resizeEvent(QResizeEvent* event)
{
    InsightPage::resizeEvent(event);
    arrange();
}

QString LogitLensView::exportTitle() const
{
    return m_shown[0] ? tr("logit lens %1 step %2").arg(m_primary.label).arg(m_shown[0]->step)
                      : tr("logit lens %1").arg(m_primary.label);
}

QByteArray LogitLensView::csv() const
{
    QByteArray out = "run,step,probe,stage,label,probability\n";
    for (const auto& shown : m_shown) {
        if (!shown)
            continue;
        const QByteArray prefix =
            csvField(shown->label) + ',' + QByteArray::number(shown->step) + ',' + csvField(shown->text) + ',';
        for (int r = 0; r < shown->stages.size(); ++r)
            for (int c = 0; c < shown->columns.size(); ++c)
                out += prefix + csvField(shown->stages[r]) + ',' + csvField(shown->columns[c]) + ','
                       + csvNumber(shown->lens[r][c]) + '\n';
    }
    return out;
}

}  // namespace widelab
