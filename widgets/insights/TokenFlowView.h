// defines: widelab::TokenFlowView, where each token sends its attention: the
// tokens in two columns, lines from a query on the left to the keys on the right
#pragma once

#include "InsightHistory.h"

#include <QWidget>

class QPainter;

namespace widelab {

// At rest it draws the mean over heads, every query to every key, each line as
// opaque as its weight. Hovering a token on the left shows that query's lines
// for every head, one colour per head; hovering one on the right, the lines
// that reach that key. (BertViz's head view, for a whole layer at once.)
class TokenFlowView : public QWidget {
    Q_OBJECT
public:
    explicit TokenFlowView(QWidget* parent = nullptr);

    // `paths`: the model's attention paths, so that the legend names each head
    // with its path ("p2 h3") in a multi-path model.
    void setCapture(const ProbeResult* capture, int layer, int paths = 1);
    // Shows the lines of one token as if hovered (-1: none); left = query side.
    void setFocusToken(int token, bool left);
    int focusToken() const { return m_focus; }
    bool focusIsQuery() const { return m_focusLeft; }
    // The token under a position: index and side, or -1.
    int tokenAt(const QPointF& position, bool* left) const;
    QRectF tokenRect(int token, bool left) const;
    // The lines drawn now: (query, key, head (-1: the mean), weight), weights below 0.01 left out.
    struct Line {
        int query = 0, key = 0, head = -1;
        float weight = 0;
    };
    QVector<Line> lines() const;
    // The legend's name of a head: "h3", or "p2 h1" in a multi-path model.
    QString headName(int head) const;

    QSize sizeHint() const override { return {360, 480}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    double rowHeight() const;
    void paintHeadLegend(QPainter& painter) const;
    double legendItemWidth() const;
    int legendColumns() const;
    double legendHeight() const;

    QStringList m_tokens;
    QVector<QVector<float>> m_maps;  // [head] tokens x tokens
    QVector<float> m_mean;
    int m_paths = 1;
    int m_focus = -1;
    bool m_focusLeft = true;
};

}  // namespace widelab
