// defines: widelab::StudyChart, a study's results as a chart: a measure against
// one axis of the study (mean over seeds with error bars, the papers' own
// figures beside it), or against stored parameters or inference latency with
// the Pareto front; PNG/PDF/SVG and CSV export
#pragma once

#include "StudyTypes.h"

#include <qcustomplot.h>

namespace widelab {

class StudyChart : public QCustomPlot {
    Q_OBJECT

public:
    enum class Kind {
        AgainstAxis,        // x: the values of one axis; a line per value of the other axes
        AgainstParameters,  // x: stored parameters; a marker per axis point, the Pareto front dashed
        AgainstLatency,     // x: inference latency (ms, batch 1)
    };
    Q_ENUM(Kind)

    // One drawn value: what the CSV export writes and tests read.
    struct Point {
        QString series;   // the legend's name: the other axes' settings ("attention=full"), or a paper's table with them
        QString group;    // the other axes' settings: the study series it belongs to (its colour)
        QString point;    // the study's point (MemberResult::point)
        QString xText;    // the x category (AgainstAxis) or the point's label
        double x = 0.0;   // the category's index, the parameters or the milliseconds
        double y = 0.0;   // the measure, as shown (scaled: % for accuracy)
        double spread = 0.0;  // the sample standard deviation over seeds (NaN: one seed), as shown
        int seeds = 0;        // completed members behind it (0 for a paper's value)
        bool paper = false;
        QString source;       // a paper's value: the paper and its table
    };

    explicit StudyChart(QWidget* parent = nullptr);

    // Redraws with a new study (kind, measure and axis kept where they still apply).
    void setStudy(const StudyData& study);
    void setKind(Kind kind);
    Kind kind() const { return m_kind; }
    // A measure key of the study (StudyMeasureInfo::key); an unknown one is ignored.
    void setMeasure(const QString& key);
    QString measure() const { return m_measure; }
    // The axis the AgainstAxis chart spreads along (an index into StudyData::axes).
    void setAxis(int index);
    int axis() const { return m_axis; }

    QVector<Point> points() const { return m_points; }
    QStringList categories() const { return m_categories; }  // AgainstAxis: the x labels, in order
    QString title() const;
    // The points on the Pareto front (AgainstParameters, AgainstLatency), by point name.
    QStringList paretoFront() const { return m_front; }

    // PNG, PDF or SVG by the suffix; CSV: one row per drawn value.
    bool exportImage(const QString& path, QString* error = nullptr);
    bool exportCsv(const QString& path, QString* error = nullptr) const;

public Q_SLOTS:
    void exportWithDialog();

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    void collectAgainstAxis();
    void collectAgainstMeasure(const QString& xKey);
    void draw();
    void applyPalette();

    StudyData m_study;
    Kind m_kind = Kind::AgainstAxis;
    QString m_measure;
    int m_axis = 0;
    QVector<Point> m_points;
    QStringList m_categories;
    QStringList m_series;  // the study's series, in order (paper series after them)
    QStringList m_front;
    QCPTextElement* m_title = nullptr;
    QString m_exportDirectory;
};

}  // namespace widelab
