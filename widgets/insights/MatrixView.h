// defines: widelab::MatrixView, a heatmap of one matrix with its row and column
// labels, a colour bar, a hover read-out and clicks on cells
#pragma once

#include <QPoint>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <functional>

namespace widelab {

// Draws rows x cols numbers as coloured cells: labels left and on top (every
// k-th when they would overlap; columns turned upright when they are long), the
// colour bar on the right, and cell texts when the cells are large enough.
// Hovering a cell outlines it and shows its read-out as a tool tip.
class MatrixView : public QWidget {
    Q_OBJECT
public:
    enum class Scale {
        Sequential,   // low..high: dark to light (colorscale::sequential)
        Diverging,    // center +- halfRange: blue, neutral, orange
        Categorical,  // each cell coloured by its category (colorscale::categorical), -1: none
    };
    struct Matrix {
        int rows = 0, cols = 0;
        QVector<float> values;           // rows * cols, row-major
        QStringList rowLabels, columnLabels;
        QString rowTitle, columnTitle;   // what rows and columns are: "query", "key", "block", ...
        Scale scale = Scale::Sequential;
        double low = 0, high = 0;        // sequential range; high <= low: the data's min..max
        double center = 0, halfRange = 0;  // diverging; halfRange 0: the largest |value - center|
        QVector<int> categories;         // categorical: rows * cols
        QStringList cellTexts;           // optional, rows * cols
        QString valueName = QStringLiteral("value");  // in the read-out: "weight", "share", "gamma"
        double valueScale = 1;           // the read-out and colour bar show value * valueScale ...
        QString valueSuffix;             // ... followed by this ("%")
        int decimals = 3;
        QVector<QPoint> marked;          // cells outlined boldly (x = column, y = row): an alarm's expert, a selection
    };

    explicit MatrixView(QWidget* parent = nullptr);

    void setTitle(const QString& title);
    QString title() const { return m_title; }
    void setMatrix(Matrix matrix);
    const Matrix& matrix() const { return m_matrix; }
    void clear(const QString& emptyText = QString());  // no matrix; the text says why
    QString emptyText() const { return m_emptyText; }
    // Square cells (attention maps) instead of cells filling the space.
    void setSquareCells(bool square);
    // Replaces the default read-out ("row title row label, column title column label: value").
    void setReadout(std::function<QString(int row, int col)> readout);

    // The cell under a widget position, or (-1, -1); and a cell's read-out.
    QPoint cellAt(const QPointF& position) const;
    QString readout(int row, int col) const;
    QRectF cellRect(int row, int col) const;
    // The colour a cell is drawn with.
    QColor cellColor(int row, int col) const;
    // The colour bar's ends as the user reads them (scaled, with the suffix).
    QString scaleLowText() const;
    QString scaleHighText() const;

    QSize sizeHint() const override { return {420, 320}; }
    QSize minimumSizeHint() const override { return {160, 120}; }

Q_SIGNALS:
    void cellClicked(int row, int col);
    void cellHovered(int row, int col);  // (-1, -1) when the pointer leaves the cells

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void rebuild();   // image and scale from the matrix
    void relayout();  // rectangles from the size and labels
    void setHover(QPoint cell);
    QString formatValue(double value) const;

    Matrix m_matrix;
    QString m_title;
    QString m_emptyText;
    bool m_square = false;
    std::function<QString(int, int)> m_readout;
    QImage m_image;
    double m_low = 0, m_high = 1;  // the resolved colour range (sequential), or center -/+ halfRange
    QRectF m_cells, m_bar;
    QRectF m_titleRect, m_rowLabelRect, m_columnLabelRect;
    bool m_columnsUpright = false;
    QPoint m_hover{-1, -1};
};

}  // namespace widelab
