#include "PredictionBars.h"

#include "InsightHistory.h"
#include "common/Palette.h"

#include <QPainter>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace widelab {

PredictionBars::PredictionBars(QWidget* parent) : QWidget(parent) {}

void PredictionBars::setPrediction(const QVector<float>& probabilities, const QStringList& labels, const QString& title,
                                   int trueIndex)
{
    m_title = title;
    m_bars.clear();
    m_trueBar = -1;
    // Only finite probabilities take part: NaN would break the sort's ordering.
    QVector<int> order;
    for (int i = 0; i < probabilities.size(); ++i)
        if (std::isfinite(probabilities[i]))
            order.push_back(i);
    const int count = std::min<int>(kShown, static_cast<int>(order.size()));
    std::partial_sort(order.begin(), order.begin() + count, order.end(),
                      [&](int a, int b) { return probabilities[a] > probabilities[b]; });
    auto label = [&](int index) { return visibleToken(labels.value(index, QString::number(index))); };
    for (int i = 0; i < count; ++i) {
        const int index = order[i];
        if (index == trueIndex)
            m_trueBar = i;
        m_bars.push_back({label(index), probabilities[index]});
    }
    const bool known = trueIndex >= 0 && trueIndex < probabilities.size();
    if (known && m_trueBar < 0 && std::isfinite(probabilities[trueIndex])) {
        m_trueBar = static_cast<int>(m_bars.size());
        m_bars.push_back({label(trueIndex), probabilities[trueIndex]});
    }
    if (known)
        m_title = tr("%1 (true: %2)").arg(title, label(trueIndex));
    update();
}

void PredictionBars::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    const QColor text = palette().color(QPalette::Text);
    QFont bold = font();
    bold.setBold(true);
    painter.setFont(bold);
    painter.setPen(text);
    const QFontMetricsF metrics(font());
    const double line = metrics.height() + 6;
    painter.drawText(QRectF(6, 4, width() - 12, line), Qt::AlignLeft | Qt::AlignVCenter, m_title);
    painter.setFont(font());
    double labelWidth = 0;
    for (const auto& bar : m_bars)
        labelWidth = std::max(labelWidth, metrics.horizontalAdvance(bar.first));
    labelWidth = std::min(labelWidth + 8, width() * 0.4);
    const double valueWidth = metrics.horizontalAdvance(QStringLiteral("100.0%")) + 6;
    const double barLeft = 6 + labelWidth;
    const double barSpace = std::max(10.0, width() - barLeft - valueWidth - 6);
    const QColor fill = palette::seriesColor(0);
    const QColor trueFill = palette::seriesColor(2);  // the true class: another colour, a bold label, a frame
    for (int i = 0; i < m_bars.size(); ++i) {
        const double y = 4 + line * (i + 1);
        const auto& [label, p] = m_bars[i];
        const bool truth = i == m_trueBar;
        painter.setPen(text);
        painter.setFont(truth ? bold : font());
        painter.drawText(QRectF(6, y, labelWidth - 6, line), Qt::AlignRight | Qt::AlignVCenter,
                         metrics.elidedText(label, Qt::ElideRight, labelWidth - 6));
        painter.setFont(font());
        painter.fillRect(QRectF(barLeft, y + 3, barSpace * std::clamp(p, 0.0f, 1.0f), line - 6), truth ? trueFill : fill);
        if (truth) {
            painter.setPen(QPen(text, 1, Qt::DotLine));
            painter.drawRect(QRectF(barLeft, y + 2, barSpace, line - 4));
            painter.setPen(text);
        }
        painter.drawText(QRectF(barLeft + barSpace + 4, y, valueWidth, line), Qt::AlignLeft | Qt::AlignVCenter,
                         QString::number(100.0 * p, 'f', 1) + QLatin1Char('%'));
    }
}

}  // namespace widelab
