// defines: widelab::LensMap, LogitLensView: the logit lens of the probe, the
// model's prediction read off the residual stream after every sublayer, as a
// stage x class heatmap with each stage's top class outlined and the true class
// marked, each stage's top prediction in words, against a comparison run
#pragma once

#include "InsightPage.h"
#include "MatrixView.h"

#include <array>
#include <optional>

class QBoxLayout;
class QLabel;
class QScrollArea;

namespace widelab {

// A MatrixView of probabilities that also outlines one cell per row (the
// stage's top class) and marks one column (the true class) with a dashed frame.
class LensMap : public MatrixView {
    Q_OBJECT
public:
    using MatrixView::MatrixView;

    void setMarks(const QVector<int>& topColumns, int trueColumn);
    const QVector<int>& topColumns() const { return m_top; }  // per row; -1 when the row has no finite value
    int trueColumn() const { return m_true; }                 // -1: unknown or not among the columns

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QVector<int> m_top;
    int m_true = -1;
};

class LogitLensView : public InsightPage {
    Q_OBJECT
public:
    static constexpr int kMinCellWidth = 22;  // a class column: ".62" fits; more columns scroll sideways
    static constexpr int kMaxCellWidth = 72;
    static constexpr int kRowHeight = 20;

    explicit LogitLensView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override { return m_body; }
    QByteArray csv() const override;

    // 0: the shown run, 1: the comparison run.
    LensMap* lensMap(int run) const { return m_panes[run].map; }
    // Each stage's top prediction, one line a stage: "block 3 ffn: predicts 7 (0.62)".
    QLabel* topPredictions(int run) const { return m_panes[run].top; }
    QStringList topLines(int run) const;
    QLabel* emptyLabel() const { return m_empty; }
    bool panesSideBySide() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Shown {
        QString label, text;
        qint64 step = 0;
        QStringList stages, columns;  // column labels as shown (visibleToken)
        QVector<QVector<float>> lens; // [stage][column], padded with NaN
        QVector<int> top;             // per stage: the column of the largest probability, -1: none
        int trueColumn = -1;
        QStringList lines;            // the top predictions in words
    };
    struct Pane {
        QWidget* box = nullptr;
        QLabel* header = nullptr;
        QScrollArea* area = nullptr;
        LensMap* map = nullptr;
        QLabel* top = nullptr;
    };
    static Shown shownOf(const ProbeResult& capture, const QString& label);
    void showPane(int run, const Shown* shown, const QString& why);
    int paneWidth(int run) const;  // what a pane needs to show every column at kMinCellWidth
    void arrange();

    QWidget* m_body = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_note = nullptr;
    QBoxLayout* m_paneBox = nullptr;
    std::array<Pane, 2> m_panes;
    std::array<std::optional<Shown>, 2> m_shown;
};

}  // namespace widelab
