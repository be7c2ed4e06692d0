#include "MatrixView.h"

#include "CellPainter.h"
#include "ColorScale.h"
#include "common/Palette.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace widelab {

namespace {

constexpr double kMargin = 6;
constexpr double kBarWidth = 12;
constexpr double kMaxLabelShare = 0.3;  // labels take at most this part of the width or height

QFont labelFont(const QFont& base)
{
    QFont font = base;
    font.setPointSizeF(std::max(7.0, base.pointSizeF() * 0.85));
    return font;
}

// Every k-th label fits when each needs `needed` pixels and a cell has `cell`.
int labelStride(double cell, double needed)
{
    return cell <= 0 ? 1 : std::max(1, static_cast<int>(std::ceil(needed / cell)));
}

}  // namespace

MatrixView::MatrixView(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void MatrixView::setTitle(const QString& title)
{
    m_title = title;
    relayout();
    update();
}

void MatrixView::setMatrix(Matrix matrix)
{
    m_matrix = std::move(matrix);
    m_emptyText.clear();
    m_hover = {-1, -1};
    rebuild();
    relayout();
    update();
}

void MatrixView::clear(const QString& emptyText)
{
    m_matrix = Matrix();
    m_emptyText = emptyText;
    m_image = QImage();
    m_hover = {-1, -1};
    relayout();
    update();
}

void MatrixView::setSquareCells(bool square)
{
    m_square = square;
    relayout();
    update();
}

void MatrixView::setReadout(std::function<QString(int, int)> readout) { m_readout = std::move(readout); }

void MatrixView::rebuild()
{
    const Matrix& m = m_matrix;
    m_image = QImage();
    m_low = 0;
    m_high = 1;
    const qsizetype cells = static_cast<qsizetype>(m.rows) * m.cols;
    // A matrix whose numbers do not fill it draws nothing, and says so.
    if (m.rows <= 0 || m.cols <= 0) {
        if (m_emptyText.isEmpty())
            m_emptyText = tr("Nothing to draw: the matrix has no rows or no columns.");
        return;
    }
    if ((m.scale == Scale::Categorical ? m.categories.size() : m.values.size()) < cells) {
        if (m_emptyText.isEmpty())
            m_emptyText = tr("Nothing to draw: %1 x %2 cells but %3 values.")
                              .arg(m.rows)
                              .arg(m.cols)
                              .arg(m.scale == Scale::Categorical ? m.categories.size() : m.values.size());
        return;
    }
    // Ranges come from finite values only: NaN and infinities are drawn at the low end, never stretch the scale.
    switch (m.scale) {
    case Scale::Sequential: {
        m_low = m.low;
        m_high = m.high;
        if (!std::isfinite(m_low) || !std::isfinite(m_high) || m_high <= m_low) {
            double min = 0, max = 1;
            colorscale::finiteRange(m.values.constData(), cells, &min, &max);
            m_low = min;
            m_high = max > min ? max : min + 1;
        }
        m_image = colorscale::sequentialImage(m.values.constData(), m.rows, m.cols, m_low, m_high);
        break;
    }
    case Scale::Diverging: {
        const double center = std::isfinite(m.center) ? m.center : 0.0;
        double half = std::isfinite(m.halfRange) ? m.halfRange : 0.0;
        if (half <= 0) {
            for (qsizetype i = 0; i < cells; ++i)
                if (const double v = m.values[i]; std::isfinite(v))
                    half = std::max(half, std::abs(v - center));
            if (!(half > 0) || !std::isfinite(half))
                half = 1;
        }
        m_low = center - half;
        m_high = center + half;
        m_image = colorscale::divergingImage(m.values.constData(), m.rows, m.cols, center, half);
        break;
    }
    case Scale::Categorical: {
        m_image = QImage(m.cols, m.rows, QImage::Format_RGB32);
        const QRgb none = palette::blend(palette().color(QPalette::Base), palette().color(QPalette::Text), 0.08).rgb();
        for (int r = 0; r < m.rows; ++r)
            for (int c = 0; c < m.cols; ++c) {
                const int category = m.categories.value(r * m.cols + c, -1);
                m_image.setPixel(c, r, category < 0 ? none : colorscale::categorical(category).rgb());
            }
        break;
    }
    }
}

void MatrixView::relayout()
{
    const QRectF area = QRectF(rect()).adjusted(kMargin, kMargin, -kMargin, -kMargin);
    const QFontMetricsF titleMetrics(font());
    const QFontMetricsF labels(labelFont(font()));
    double top = area.top();
    m_titleRect = QRectF();
    if (!m_title.isEmpty()) {
        m_titleRect = QRectF(area.left(), top, area.width(), titleMetrics.height() + 4);
        top = m_titleRect.bottom() + 2;
    }
    const Matrix& m = m_matrix;
    if (m_image.isNull()) {
        m_cells = QRectF(area.left(), top, area.width(), area.bottom() - top);
        m_bar = QRectF();
        return;
    }
    double rowLabelWidth = 0;
    for (const QString& label : m.rowLabels)
        rowLabelWidth = std::max(rowLabelWidth, labels.horizontalAdvance(label));
    double columnLabelWidth = 0;
    for (const QString& label : m.columnLabels)
        columnLabelWidth = std::max(columnLabelWidth, labels.horizontalAdvance(label));
    const double axisTitle = labels.height() + 2;
    const double rowTitleWidth = m.rowTitle.isEmpty() ? 0 : axisTitle;
    rowLabelWidth = std::min(rowLabelWidth + 4, area.width() * kMaxLabelShare);
    const bool categorical = m.scale == Scale::Categorical;
    const double barSpace = categorical ? 0
                                        : kBarWidth + 6
                                              + std::max(labels.horizontalAdvance(scaleLowText()),
                                                         labels.horizontalAdvance(scaleHighText()))
                                              + 4;
    const double left = area.left() + rowTitleWidth + rowLabelWidth;
    const double width = std::max(10.0, area.right() - barSpace - left);
    // Columns stand upright when their labels are wider than a cell.
    m_columnsUpright = columnLabelWidth + 4 > width / m.cols;
    const double columnLabelHeight =
        m.columnLabels.isEmpty()
            ? 0
            : std::min(m_columnsUpright ? columnLabelWidth + 4 : labels.height() + 2, area.height() * kMaxLabelShare);
    const double columnTitleHeight = m.columnTitle.isEmpty() ? 0 : axisTitle;
    const double cellsTop = top + columnTitleHeight + columnLabelHeight;
    const double height = std::max(10.0, area.bottom() - cellsTop);
    double cellWidth = width / m.cols;
    double cellHeight = height / m.rows;
    if (m_square)
        cellWidth = cellHeight = std::min(cellWidth, cellHeight);
    m_cells = QRectF(left, cellsTop, cellWidth * m.cols, cellHeight * m.rows);
    m_rowLabelRect = QRectF(area.left() + rowTitleWidth, m_cells.top(), rowLabelWidth, m_cells.height());
    m_columnLabelRect = QRectF(m_cells.left(), cellsTop - columnLabelHeight, m_cells.width(), columnLabelHeight);
    m_bar = categorical ? QRectF() : QRectF(m_cells.right() + 6, m_cells.top(), kBarWidth, m_cells.height());
}

QPoint MatrixView::cellAt(const QPointF& position) const
{
    if (m_image.isNull() || !m_cells.contains(position))
        return {-1, -1};
    const int col = std::clamp(static_cast<int>((position.x() - m_cells.left()) / (m_cells.width() / m_matrix.cols)), 0,
                               m_matrix.cols - 1);
    const int row = std::clamp(static_cast<int>((position.y() - m_cells.top()) / (m_cells.height() / m_matrix.rows)),
                               0, m_matrix.rows - 1);
    return {col, row};
}

QRectF MatrixView::cellRect(int row, int col) const
{
    if (m_image.isNull())
        return {};
    const double w = m_cells.width() / m_matrix.cols;
    const double h = m_cells.height() / m_matrix.rows;
    return {m_cells.left() + col * w, m_cells.top() + row * h, w, h};
}

QColor MatrixView::cellColor(int row, int col) const
{
    if (m_image.isNull() || row < 0 || col < 0 || row >= m_image.height() || col >= m_image.width())
        return {};
    return QColor(m_image.pixel(col, row));
}

QString MatrixView::formatValue(double value) const
{
    return QString::number(value * m_matrix.valueScale, 'f', m_matrix.decimals) + m_matrix.valueSuffix;
}

QString MatrixView::scaleLowText() const { return formatValue(m_low); }
QString MatrixView::scaleHighText() const { return formatValue(m_high); }

QString MatrixView::readout(int row, int col) const
{
    const Matrix& m = m_matrix;
    if (row < 0 || col < 0 || row >= m.rows || col >= m.cols)
        return {};
    if (m_readout)
        return m_readout(row, col);
    auto name = [](const QString& title, const QStringList& labels, int index) {
        const QString label = labels.value(index, QString::number(index));
        return title.isEmpty() ? label : title + QLatin1Char(' ') + label;
    };
    QString text = name(m.rowTitle, m.rowLabels, row) + QStringLiteral(", ") + name(m.columnTitle, m.columnLabels, col);
    if (m.scale != Scale::Categorical || !m.values.isEmpty())
        text += QStringLiteral(": ") + m.valueName + QLatin1Char(' ') + formatValue(m.values.value(row * m.cols + col));
    if (!m.cellTexts.isEmpty() && m.scale == Scale::Categorical)
        text += QStringLiteral(": ") + m.cellTexts.value(row * m.cols + col);
    return text;
}

void MatrixView::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    const QColor text = palette().color(QPalette::Text);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    if (!m_title.isEmpty()) {
        QFont bold = font();
        bold.setBold(true);
        painter.setFont(bold);
        painter.setPen(text);
        painter.drawText(m_titleRect, Qt::AlignLeft | Qt::AlignVCenter,
                         QFontMetrics(bold).elidedText(m_title, Qt::ElideRight, int(m_titleRect.width())));
    }
    if (m_image.isNull()) {
        painter.setPen(palette::blend(text, palette().color(QPalette::Base), 0.4));
        painter.drawText(m_cells, Qt::AlignCenter | Qt::TextWordWrap, m_emptyText);
        return;
    }
    const Matrix& m = m_matrix;
    paintCells(painter, m_cells, m_image);  // exact cells on screen, in PNG, SVG and PDF

    const QFont small = labelFont(font());
    const QFontMetricsF metrics(small);
    painter.setFont(small);
    painter.setPen(text);
    const double cellWidth = m_cells.width() / m.cols;
    const double cellHeight = m_cells.height() / m.rows;

    // Cell texts, in black or white, whichever stands out from the cell.
    if (!m.cellTexts.isEmpty() && cellHeight >= metrics.height() && cellWidth >= metrics.averageCharWidth() * 2) {
        for (int r = 0; r < m.rows; ++r)
            for (int c = 0; c < m.cols; ++c) {
                const QString cellText = m.cellTexts.value(r * m.cols + c);
                if (cellText.isEmpty())
                    continue;
                const QColor fill = cellColor(r, c);
                painter.setPen(fill.lightnessF() > 0.55 ? Qt::black : Qt::white);
                painter.drawText(cellRect(r, c), Qt::AlignCenter,
                                 metrics.elidedText(cellText, Qt::ElideRight, cellWidth - 2));
            }
        painter.setPen(text);
    }

    // Row labels, every k-th when they would overlap.
    const int rowStride = labelStride(cellHeight, metrics.height());
    for (int r = 0; r < m.rows && !m.rowLabels.isEmpty(); r += rowStride) {
        const QRectF where(m_rowLabelRect.left(), m_cells.top() + r * cellHeight + (cellHeight - metrics.height()) / 2,
                           m_rowLabelRect.width() - 4, metrics.height());
        painter.drawText(where, Qt::AlignRight | Qt::AlignVCenter,
                         metrics.elidedText(m.rowLabels.value(r), Qt::ElideRight, where.width()));
    }
    if (!m.rowTitle.isEmpty()) {
        painter.save();
        painter.translate(m_rowLabelRect.left() - 2, m_cells.center().y());
        painter.rotate(-90);
        painter.drawText(QRectF(-m_cells.height() / 2, -metrics.height(), m_cells.height(), metrics.height()),
                         Qt::AlignCenter, m.rowTitle);
        painter.restore();
    }
    // Column labels: upright when wider than a cell.
    const int columnStride = labelStride(cellWidth, m_columnsUpright ? metrics.height() : 0);
    for (int c = 0; c < m.cols && !m.columnLabels.isEmpty(); c += columnStride) {
        const QString label = m.columnLabels.value(c);
        if (m_columnsUpright) {
            painter.save();
            painter.translate(m_cells.left() + (c + 0.5) * cellWidth, m_columnLabelRect.bottom() - 2);
            painter.rotate(-90);
            painter.drawText(QRectF(0, -metrics.height() / 2, m_columnLabelRect.height() - 2, metrics.height()),
                             Qt::AlignLeft | Qt::AlignVCenter,
                             metrics.elidedText(label, Qt::ElideRight, m_columnLabelRect.height() - 2));
            painter.restore();
        } else {
            painter.drawText(QRectF(m_cells.left() + c * cellWidth, m_columnLabelRect.top(), cellWidth,
                                    m_columnLabelRect.height()),
                             Qt::AlignCenter, metrics.elidedText(label, Qt::ElideRight, cellWidth));
        }
    }
    if (!m.columnTitle.isEmpty())
        painter.drawText(QRectF(m_cells.left(), m_columnLabelRect.top() - metrics.height() - 2, m_cells.width(),
                                metrics.height()),
                         Qt::AlignCenter, m.columnTitle);

    // The colour bar, low at the bottom.
    if (!m_bar.isNull()) {
        for (int y = 0; y < int(m_bar.height()); ++y) {
            const double t = 1.0 - y / std::max(1.0, m_bar.height() - 1);
            const QRgb color = m.scale == Scale::Diverging ? colorscale::diverging(2 * t - 1) : colorscale::sequential(t);
            painter.fillRect(QRectF(m_bar.left(), m_bar.top() + y, m_bar.width(), 1.0), QColor(color));
        }
        painter.setPen(palette::blend(text, palette().color(QPalette::Base), 0.5));
        painter.drawRect(m_bar);
        painter.setPen(text);
        painter.drawText(QPointF(m_bar.right() + 4, m_bar.top() + metrics.ascent()), scaleHighText());
        painter.drawText(QPointF(m_bar.right() + 4, m_bar.bottom()), scaleLowText());
    }
    // Marked cells: a dark frame around a light one, visible on any cell colour.
    painter.setBrush(Qt::NoBrush);
    for (const QPoint& cell : m.marked)
        if (cell.x() >= 0 && cell.x() < m.cols && cell.y() >= 0 && cell.y() < m.rows) {
            const QRectF r = cellRect(cell.y(), cell.x());
            painter.setPen(QPen(Qt::black, 3));
            painter.drawRect(r.adjusted(1.5, 1.5, -1.5, -1.5));
            painter.setPen(QPen(Qt::white, 1));
            painter.drawRect(r.adjusted(3, 3, -3, -3));
        }
    if (m_hover.x() >= 0) {
        painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(cellRect(m_hover.y(), m_hover.x()));
    }
}

void MatrixView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    relayout();
}

void MatrixView::setHover(QPoint cell)
{
    if (cell == m_hover)
        return;
    m_hover = cell;
    update();
    Q_EMIT cellHovered(cell.y(), cell.x());
}

void MatrixView::mouseMoveEvent(QMouseEvent* event)
{
    const QPoint cell = cellAt(event->position());
    setHover(cell);
    if (cell.x() >= 0)
        QToolTip::showText(event->globalPosition().toPoint(), readout(cell.y(), cell.x()), this);
    else
        QToolTip::hideText();
}

void MatrixView::mousePressEvent(QMouseEvent* event)
{
    const QPoint cell = cellAt(event->position());
    if (event->button() == Qt::LeftButton && cell.x() >= 0)
        Q_EMIT cellClicked(cell.y(), cell.x());
    QWidget::mousePressEvent(event);
}

void MatrixView::leaveEvent(QEvent* event)
{
    setHover({-1, -1});
    QWidget::leaveEvent(event);
}

void MatrixView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) {
        rebuild();
        relayout();
        update();
    }
}

}  // namespace widelab
