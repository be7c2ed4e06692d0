// defines: widelab::PatchExpertGrid, where each patch of a probe image goes in
// every block that routes: the picture with each patch tinted by its first-choice
// expert's colour, dropped patches greyed and crossed
#pragma once

#include "InsightHistory.h"
#include "PatchTileGrid.h"

namespace widelab {

// One tile per block. A routed patch is filled with colorscale::categorical of
// its expert at kOpacity over the image; a dropped patch (no expert had room:
// the residual carries it) is filled with kDroppedFill at kOpacity and crossed
// corner to corner with the text colour.
class PatchExpertGrid : public PatchTileGrid {
    Q_OBJECT
public:
    static constexpr double kOpacity = 0.55;
    static inline const QColor kDroppedFill = QColor(128, 128, 128);

    explicit PatchExpertGrid(QWidget* parent = nullptr);

    // The blocks' routing of `capture` (nullptr, a text probe or routing that
    // does not cover its tokens: nothing to draw).
    void setCapture(const ProbeResult* capture);
    int blocks() const { return tiles(); }
    // The first-choice expert of a patch, -1 when dropped or outside.
    int expertAt(int block, int row, int col) const;

protected:
    void paintTile(QPainter& painter, int tile, const QRectF& target) override;
    QString readout(const Hit& hit) const override;

private:
    QVector<QVector<int>> m_experts;            // [block][patch]
    QVector<QVector<QVector<int>>> m_choices;   // [block][patch][choice]
};

}  // namespace widelab
