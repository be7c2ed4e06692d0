// defines: InsightSource, InsightPage: what every interpretability view shares:
// the run it shows, a run to compare with, the step it is frozen on, the probe
#pragma once

#include "InsightHistory.h"

#include <QByteArray>
#include <QString>
#include <QWidget>

#include <memory>

namespace widelab {

struct InsightSource {
    QString runId;
    QString label;
    std::shared_ptr<const InsightHistory> history;

    bool valid() const { return history != nullptr; }
};

// One view of InsightsView. The view sets the sources, step and probe, then
// calls refresh() when the page is visible (and on showing a page that missed
// changes); a page draws only from those.
class InsightPage : public QWidget {
public:
    using QWidget::QWidget;

    void setSources(InsightSource primary, InsightSource comparison)
    {
        m_primary = std::move(primary);
        m_comparison = std::move(comparison);
    }
    void setStep(qint64 step) { m_step = step; }  // < 0: the newest (live)
    void setProbe(const QString& text) { m_probe = text; }

    virtual void refresh() = 0;
    // The title exports suggest as a file name.
    virtual QString exportTitle() const = 0;
    // What an image export draws (the page without its controls).
    virtual QWidget* exportArea() { return this; }
    // The numbers the page shows, as CSV with a header line.
    virtual QByteArray csv() const = 0;

protected:
    // The text the page shows: the one set, else the shown run's first probe.
    QString probeText() const
    {
        return !m_probe.isEmpty() || !m_primary.valid() ? m_probe : m_primary.history->probeTexts().value(0);
    }

    InsightSource m_primary, m_comparison;
    qint64 m_step = -1;
    QString m_probe;
};

}  // namespace widelab
