// defines: widelab::headRoleColor, headRoleCell, HeadRoleGrid, HeadRolesView:
// what each attention head does (previous token, induction, ...) as a layer x head
// grid coloured by the dominant role, at the scrubbed validation and against a
// comparison run, and one head's role scores over training
#pragma once

#include "InsightPage.h"

#include <QPoint>

#include <array>
#include <optional>

class QBoxLayout;
class QCPItemStraightLine;
class QCustomPlot;
class QLabel;

namespace widelab {

// The hue of a role, the same wherever roles are drawn: the core's roles in its
// order take the Okabe-Ito colours ("previous token" blue, "next token" orange,
// "first token" bluish green, "self" reddish purple, "local" sky blue, "broad"
// vermillion, "duplicate token" yellow) and "induction" the text colour (black
// on a light theme, white on a dark one); another name `index` (its place in
// its run's roles) a lighter or darker Okabe-Ito variant.
QColor headRoleColor(const QString& role, int index, const QColor& text);
// How a cell draws a role scored `score` (0..1, clamped): a faint tint of the
// role's colour over the whole cell, and from its bottom a bar of the role's full
// colour, `fill` of the cell's height. The hue is always the role's own, so a weak
// head of one role never takes the pale colour of another ("broad" vermillion
// washed out looked like "next token" orange); the strength is the bar's height.
struct HeadRoleCell {
    QColor tint;  // the background 15 % of the way to the role's colour
    QColor bar;   // the role's colour
    double fill = 0;
};
HeadRoleCell headRoleCell(const QColor& role, double score, const QColor& base);

// Every head of every layer as one cell: rows are layers, columns heads (a
// multi-path model's heads path-major, grouped under "path N" headers, as
// headLabel names them). A cell takes its dominant role's colour at the
// dominant score's strength and prints the score when it fits; hovering shows
// every role's score, a click selects the head.
class HeadRoleGrid : public QWidget {
    Q_OBJECT
public:
    static constexpr int kMinCellWidth = 12;  // 48 heads need 576 pixels
    static constexpr int kMaxCellWidth = 72;
    static constexpr int kMinCellHeight = 20;

    explicit HeadRoleGrid(QWidget* parent = nullptr);

    // Copies `state`; `paths` > 1 dividing the heads groups them by path.
    void setState(const HeadRoleScores& state, int paths, const QString& title);
    void clear(const QString& emptyText);  // no grid; the text says why
    const HeadRoleScores& state() const { return m_state; }
    bool hasGrid() const { return m_state.layers() > 0 && m_state.heads() > 0; }
    QString title() const { return m_title; }
    QString emptyText() const { return m_emptyText; }
    int paths() const { return m_paths; }

    void setSelected(int layer, int head);  // -1, -1: none
    QPoint selected() const { return m_selected; }  // (head, layer); (-1, -1): none

    // The dominant role of a head (-1 when the state names none) and its score.
    int dominant(int layer, int head) const;
    double dominantScore(int layer, int head) const;
    // The dominant role's colour (a faint grey without one); invalid outside the grid.
    QColor cellColor(int layer, int head) const;
    double cellFill(int layer, int head) const;    // the bar's share of the cell: the dominant score
    QString cellText(int layer, int head) const;   // the score as printed in the cell (when it fits)
    QString readout(int layer, int head) const;    // the hover tool tip
    QRectF cellRect(int layer, int head) const;
    QPoint cellAt(const QPointF& position) const;  // (head, layer); (-1, -1) outside the cells

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

Q_SIGNALS:
    void cellClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    struct Geometry {
        QRectF title, cells;
        double cellWidth = 0, cellHeight = 0, gap = 0, labelWidth = 0;
        int perPath = 0;
    };
    // The layout in `width` x `height` pixels: cells as tall as the width
    // suggests, less when the height is short, never below kMinCellHeight.
    Geometry layoutFor(int width, double height) const;
    Geometry layoutNow() const;  // at the widget's size
    double headLeft(const Geometry& g, int head) const;

    HeadRoleScores m_state;
    QString m_title;
    QString m_emptyText;
    int m_paths = 1;
    QPoint m_selected{-1, -1};
    QPoint m_hover{-1, -1};
};

class HeadRolesView : public InsightPage {
    Q_OBJECT
public:
    explicit HeadRolesView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override { return m_body; }
    QByteArray csv() const override;

    // 0: the shown run, 1: the comparison run.
    HeadRoleGrid* grid(int run) const { return m_grids[run]; }
    QLabel* legend() const { return m_legend; }
    QLabel* emptyLabel() const { return m_empty; }
    // Follows a head of a run over training (run -1: none).
    void selectHead(int run, int layer, int head);
    int selectedRun() const { return m_selectedRun; }
    // The selected head's role scores over every validation: one graph per role.
    QCustomPlot* rolePlot() const { return m_plot; }
    double plotCursorStep() const;  // the step the plot's cursor marks; NaN when hidden
    bool gridsSideBySide() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Shown {
        QString label;
        qint64 step = 0;
        HeadRoleScores heads;
    };
    void arrange();
    void showLegend();
    void showPlot();
    void plotHovered(QMouseEvent* event);

    QWidget* m_body = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_legend = nullptr;
    QBoxLayout* m_gridBox = nullptr;
    std::array<HeadRoleGrid*, 2> m_grids{};
    std::array<std::optional<Shown>, 2> m_shown;
    QLabel* m_plotHint = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPItemStraightLine* m_cursor = nullptr;
    int m_selectedRun = -1;
    int m_selectedLayer = -1, m_selectedHead = -1;
};

}  // namespace widelab
