// defines: widelab::PatchAttentionGrid, every head's attention of one layer (or
// every layer's mean over heads) over a probe image: the picture with each patch
// tinted by the weight it receives (from the CLS token, or averaged over the
// query patches)
#pragma once

#include "InsightHistory.h"
#include "PatchMaps.h"
#include "PatchTileGrid.h"

#include <algorithm>

namespace widelab {

// One tile per head (or per layer). Each patch cell is filled with the attention colour scale
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
    void setCapture(const ProbeResult* capture, int layer);
    // One tile per layer: the mean over the layer's heads of each head's patch
    // weights ("layer 2 · mean over 8 heads"), so that the picture is seen
    // through the whole depth at once. Clicking a tile means its layer.
    void setLayerMeans(const ProbeResult* capture);
    bool showsLayers() const { return m_layers; }
    void setScalePerHead(bool perHead) { m_perHead = perHead; }
    void setPaths(int paths) { m_paths = std::max(1, paths); }
    // What each head's map is (one per head of a path; empty: not said).
    void setCaptions(const QVector<HeadMapCaption>& captions) { m_captions = captions; }

    int heads() const { return tiles(); }
    // The largest weight of the tiles, the top of their shared colour range.
    float maxWeight() const { return m_max; }
    PatchSource source() const { return m_source; }
    // A tile's (head's or layer's) weight into a patch (0 outside).
    float weight(int head, int row, int col) const;
    // The colour the patch's weight maps to, before it is laid over the image.
    QColor weightColor(int head, int row, int col) const;

protected:
    void paintTile(QPainter& painter, int tile, const QRectF& target) override;
    QString readout(const Hit& hit) const override;

private:
    // The tiles' weights (every tile or none: a missing one leaves nothing to
    // guess from), coloured against one range or each its own.
    void setWeights(const ProbeResult* capture, QVector<QVector<float>> weights, const QStringList& titles,
                    const QStringList& shortTitles);

    QVector<QVector<float>> m_weights;  // [tile][patch]
    QVector<QImage> m_overlays;         // [tile]: gridCols x gridRows colours
    QVector<HeadMapCaption> m_captions;
    PatchSource m_source = PatchSource::FromCls;
    float m_max = 1;
    bool m_perHead = false;
    bool m_layers = false;  // tiles are layers (setLayerMeans), not heads
    int m_paths = 1;
};

}  // namespace widelab
