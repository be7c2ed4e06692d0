// defines: widelab::PatchAttentionGrid, every head's attention of one layer over
// a probe image: the picture with each patch tinted by the weight it receives
// (from the CLS token, or averaged over the query patches)
#pragma once

#include "InsightHistory.h"
#include "PatchMaps.h"
#include "PatchTileGrid.h"

#include <algorithm>

namespace widelab {

// One tile per head. Each patch cell is filled with the attention colour scale
// (ColorScale's sequential ramp) at kOpacity over the image, so the picture
// stays visible beneath. By default every head shares one range, 0 to the
// layer's largest patch weight; with setScalePerHead each spans 0 to its own.
class PatchAttentionGrid : public PatchTileGrid {
    Q_OBJECT
public:
    static constexpr double kOpacity = 0.6;  // of the attention colours over the image

    explicit PatchAttentionGrid(QWidget* parent = nullptr);

    // The layer's heads of `capture` (nullptr, a text probe or maps that do not
    // match its patches: nothing to draw).
    void setCapture(const ProbeCapture* capture, int layer);
    void setScalePerHead(bool perHead) { m_perHead = perHead; }
    void setPaths(int paths) { m_paths = std::max(1, paths); }
    // What each head's map is (one per head of a path; empty: not said).
    void setCaptions(const QVector<HeadMapCaption>& captions) { m_captions = captions; }

    int heads() const { return tiles(); }
    float maxWeight() const { return m_max; }
    PatchSource source() const { return m_source; }
    // A head's weight into a patch (0 outside).
    float weight(int head, int row, int col) const;
    // The colour the patch's weight maps to, before it is laid over the image.
    QColor weightColor(int head, int row, int col) const;

protected:
    void paintTile(QPainter& painter, int tile, const QRectF& target) override;
    QString readout(const Hit& hit) const override;

private:
    QVector<QVector<float>> m_weights;  // [head][patch]
    QVector<QImage> m_overlays;         // [head]: gridCols x gridRows colours
    QVector<HeadMapCaption> m_captions;
    PatchSource m_source = PatchSource::FromCls;
    float m_max = 1;
    bool m_perHead = false;
    int m_paths = 1;
};

}  // namespace widelab
