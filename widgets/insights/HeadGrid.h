// defines: widelab::HeadGrid, every head's attention map of one layer side by
// side, at a zoom the user picks, with token labels and a hover read-out
#pragma once

#include "InsightHistory.h"

#include <QImage>
#include <QVector>
#include <QWidget>

namespace widelab {

// Heads are laid out in as many columns as the width allows, each map a square
// of cellSize() pixels (query rows, key columns). Key labels run once above the
// grid and query labels once left of each grid row, when a token row is at least
// kMinLabelPixels tall; below that the hover read-out names the tokens. By
// default all maps share one colour range, 0 to the layer's largest weight, so
// heads compare; with setScalePerHead each map spans 0 to its own largest
// weight, so a head whose weights are all small still shows its pattern.
// In a multi-path model (setPaths) heads are titled with their path, "path 2 ·
// head 3", and a grid row holds whole paths when the width allows.
class HeadGrid : public QWidget {
    Q_OBJECT
public:
    static constexpr int kMinLabelPixels = 8;

    struct Hit {
        int head = -1, query = -1, key = -1;
        bool valid() const { return head >= 0; }
    };

    explicit HeadGrid(QWidget* parent = nullptr);

    // Copies the layer's maps out of `capture` (nullptr: nothing to draw).
    void setCapture(const ProbeResult* capture, int layer);
    int heads() const { return static_cast<int>(m_maps.size()); }
    int tokens() const { return static_cast<int>(m_tokens.size()); }
    float maxWeight() const { return m_max; }

    void setScalePerHead(bool perHead);
    bool scalesPerHead() const { return m_perHead; }
    // The model's attention paths, for the heads' titles (headLabel); 1: none.
    void setPaths(int paths);
    int paths() const { return m_paths; }
    // What each head's map is (InsightHistory::headCaptions); empty: not said.
    void setCaptions(const QVector<HeadMapCaption>& captions);
    QString headTitle(int head) const;  // above a map at the current size, with its caption
    // A fixed number of columns (an export lays the grid out whole); 0: as many as the width holds.
    void setColumns(int columns);
    // The colour a cell of a map is drawn with (invalid outside the maps).
    QColor colorAt(int head, int query, int key) const;

    void setCellSize(int pixels);
    int cellSize() const { return m_cell; }
    // The largest cell size (not below `minimum`) at which every head fits in `area`.
    int fittingCellSize(const QSize& area, int minimum) const;
    int columns() const;
    QRectF mapRect(int head) const;
    Hit hitAt(const QPointF& position) const;
    QString readout(const Hit& hit) const;
    bool showsLabels() const;
    int heightFor(int width) const;

    QSize sizeHint() const override;

Q_SIGNALS:
    void headClicked(int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    // The layout at a given map size (cellSize() for the one shown).
    bool showsLabels(int cell) const;
    int columnsFor(int width, int cell) const;
    int heightFor(int width, int cell) const;
    double widthFor(int columns, int cell) const;
    double gutter(int cell) const;     // left of each grid row: query labels
    double topLabels(int cell) const;  // above the grid: key labels
    void measureLabels();              // m_labelExtent from the tokens and the font
    double headerHeight() const;       // above each map: "head N"
    void updateHeight();

    QVector<QImage> m_maps;
    QVector<QVector<float>> m_weights;
    QStringList m_tokens;
    float m_max = 1;
    double m_labelExtent = 0;  // the widest token label, in pixels
    bool m_perHead = false;
    int m_paths = 1;
    QVector<HeadMapCaption> m_captions;
    int m_fixedColumns = 0;
    int m_cell = 120;
    Hit m_hover;
};

}  // namespace widelab
