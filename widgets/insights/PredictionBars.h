// defines: widelab::PredictionBars, a model's prediction for a probe: the most
// likely classes or next tokens as horizontal bars with their probabilities,
// the true class (when known) marked
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

    // Probabilities and their labels (missing labels are numbered); `trueIndex`
    // the true class when known (-1: unknown): it is marked, and shown below the
    // others when it is not among the most likely.
    void setPrediction(const QVector<float>& probabilities, const QStringList& labels, const QString& title,
                       int trueIndex = -1);
    // The bars drawn: label and probability, most likely first, at most kShown
    // (one more when the true class is not among them).
    QVector<QPair<QString, float>> shown() const { return m_bars; }
    // The bar of the true class, -1 when it is unknown.
    int trueBar() const { return m_trueBar; }
    const QString& title() const { return m_title; }

    QSize sizeHint() const override { return {220, 260}; }
    QSize minimumSizeHint() const override { return {160, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QVector<QPair<QString, float>> m_bars;
    QString m_title;
    int m_trueBar = -1;
};

}  // namespace widelab
