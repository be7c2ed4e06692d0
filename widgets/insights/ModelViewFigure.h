// defines: widelab::ModelViewFigure, every head of every layer at once (BertViz's
// model view): layers as rows, heads as columns of small attention maps, labelled
#pragma once

#include "InsightHistory.h"

#include <QImage>
#include <QVector>
#include <QWidget>

class QPainter;

namespace widelab {

// Row l, column h: head h of layer l on the probe (query rows, key columns), a
// square of cellSize() pixels. Heads carry their path in a multi-path model
// ("p2 h3"). Colours span 0 to the layer's largest weight, or with
// setScalePerHead each map its own largest weight. The widget asks for the whole
// figure as its size, so a scroll area scrolls it and an export draws all of it.
class ModelViewFigure : public QWidget {
    Q_OBJECT
public:
    struct Hit {
        int layer = -1, head = -1, query = -1, key = -1;
        bool valid() const { return layer >= 0; }
    };

    explicit ModelViewFigure(QWidget* parent = nullptr);

    // Copies the maps out of `capture` (nullptr: nothing to draw); `paths`: the
    // model's attention paths (headLabel).
    void setCapture(const ProbeResult* capture, int paths, bool perHead);
    // What each head's map is (InsightHistory::headCaptions), named in the hover read-out.
    void setCaptions(const QVector<HeadMapCaption>& captions) { m_captions = captions; }
    int layers() const { return static_cast<int>(m_maps.size()); }
    int heads() const { return m_heads; }
    int tokens() const { return m_tokens.size(); }

    void setCellSize(int pixels);
    int cellSize() const { return m_cell; }
    // The largest cell size (not below `minimum`) at which the whole figure fits in `area`.
    int fittingCellSize(const QSize& area, int minimum) const;

    QRectF mapRect(int layer, int head) const;
    QColor colorAt(int layer, int head, int query, int key) const;  // the colour a cell is drawn with
    Hit hitAt(const QPointF& position) const;
    QString readout(const Hit& hit) const;
    QString columnLabel(int head) const;  // a head's name at the current size ("path 1 · head 2", "p1 h2")

    QSize sizeHint() const override { return figureSize(m_cell); }
    QSize minimumSizeHint() const override { return figureSize(m_cell); }

Q_SIGNALS:
    void headClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    QSize figureSize(int cell) const;
    double gutter() const;        // left: "layer N"
    double headerHeight() const;  // above: head labels (and paths)
    double headLeft(int head, int cell) const;
    void paintHeader(QPainter& painter) const;
    void relayout();

    QVector<QVector<QImage>> m_maps;            // [layer][head]
    QVector<QVector<QVector<float>>> m_weights;  // [layer][head]
    QStringList m_tokens;
    int m_heads = 0;
    int m_paths = 1;
    QVector<HeadMapCaption> m_captions;
    int m_cell = 48;
    Hit m_hover;
};

}  // namespace widelab
