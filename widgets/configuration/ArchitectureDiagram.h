// defines: ArchitectureDiagram, a painted picture of a model's blocks: which modules
// are shared by all blocks and which each block owns, experts, paths and heads
#pragma once

#include "ArchitectureLayout.h"
#include "ArchitectureSketch.h"

#include <QWidget>

namespace widelab {

class ArchitectureDiagram : public QWidget {
    Q_OBJECT

public:
    explicit ArchitectureDiagram(QWidget* parent = nullptr);

    void setSketch(const ArchitectureSketch& sketch);
    const ArchitectureSketch& sketch() const { return m_sketch; }

    // The layout at the widget's current size (what paintEvent draws).
    QVector<DiagramItem> items() const { return m_items; }

    // Its rows never shrink below a legible height: where it gets less than
    // heightForWidth (the least height at that width), it belongs in a QScrollArea.
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;

private:
    void relayout();
    QString toolTipFor(const DiagramItem& item) const;

    ArchitectureSketch m_sketch;
    QVector<DiagramItem> m_items;
};

}  // namespace widelab
