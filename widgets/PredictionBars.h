// defines: widelab::PredictionBars, a model's prediction for a probe: the most
// likely classes or next tokens as horizontal bars with their probabilities
#pragma once

#include <QStringList>
#include <QVector>
#include <QWidget>

namespace widelab {

class PredictionBars : public QWidget {
    Q_OBJECT
public:
    static constexpr int kShown = 10;

    explicit PredictionBars(QWidget* parent = nullptr);

    // Probabilities and their labels (missing labels are numbered).
    void setPrediction(const QVector<float>& probabilities, const QStringList& labels, const QString& title);
    // The bars drawn: label and probability, most likely first, at most kShown.
    QVector<QPair<QString, float>> shown() const { return m_bars; }

    QSize sizeHint() const override { return {220, 260}; }
    QSize minimumSizeHint() const override { return {160, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QVector<QPair<QString, float>> m_bars;
    QString m_title;
};

}  // namespace widelab
