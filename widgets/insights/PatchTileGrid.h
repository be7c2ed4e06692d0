// defines: widelab::PatchTileGrid, tiles of one probe image side by side (one per
// head, or per block), each titled, with something drawn per patch over the
// picture by a subclass; the layout, fitting, hover and clicks they share
#pragma once

#include <QImage>
#include <QStringList>
#include <QWidget>

namespace widelab {

// Tiles are cellSize() pixels wide and as tall as the image's aspect asks, laid
// out in as many columns as the width allows (or setColumns). The image is drawn
// as the model saw it, one flat colour per pixel, never smoothed.
class PatchTileGrid : public QWidget {
    Q_OBJECT
public:
    struct Hit {
        int tile = -1, row = -1, col = -1;  // the patch under the pointer
        bool valid() const { return tile >= 0; }
    };

    explicit PatchTileGrid(QWidget* parent = nullptr);

    int tiles() const { return static_cast<int>(m_titles.size()); }
    int gridRows() const { return m_rows; }
    int gridCols() const { return m_cols; }
    const QImage& image() const { return m_image; }
    QString title(int tile) const { return m_titles.value(tile); }
    // The title drawn above a tile at the current size: the full one when it fits.
    QString shownTitle(int tile) const;

    // A fixed number of columns (an export lays the grid out whole); 0: as many as the width holds.
    void setColumns(int columns);
    void setCellSize(int pixels);
    int cellSize() const { return m_cell; }
    // The largest tile width (not below `minimum`) at which every tile fits in `area`.
    int fittingCellSize(const QSize& area, int minimum) const;
    int columns() const;
    QRectF tileRect(int tile) const;
    QRectF patchRect(int tile, int row, int col) const;
    Hit hitAt(const QPointF& position) const;
    int heightFor(int width) const;
    QSize sizeHint() const override;

Q_SIGNALS:
    void tileClicked(int tile);

protected:
    // The picture and its patch grid, and one title per tile (no image or no
    // tiles: nothing to draw), and shorter titles for narrow tiles (empty: the
    // titles, elided). The image is kept as RGB32.
    void setTiles(const QImage& image, int gridRows, int gridCols, const QStringList& titles,
                  const QStringList& shortTitles = {});
    // Over the image of `tile`, drawn in `target` (the tile's rectangle).
    virtual void paintTile(QPainter& painter, int tile, const QRectF& target) = 0;
    // The hover read-out of a patch; empty: none.
    virtual QString readout(const Hit& hit) const = 0;

    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    int columnsFor(int width, int cell) const;
    int heightFor(int width, int cell) const;
    double tileHeight(int cell) const;
    double headerHeight() const;
    void updateHeight();

    QImage m_image;
    int m_rows = 0, m_cols = 0;
    QStringList m_titles, m_shortTitles;
    int m_fixedColumns = 0;
    int m_cell = 160;
    Hit m_hover;
};

}  // namespace widelab
