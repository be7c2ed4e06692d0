#include "InsightsView.h"

#include "AblationView.h"
#include "AttentionView.h"
#include "ExpertsView.h"
#include "HeadRolesView.h"
#include "ImageProbeDialog.h"
#include "LayerNormView.h"
#include "LogitLensView.h"
#include "PathsView.h"
#include "ResidualView.h"
#include "WeightsView.h"
#include "TranslationView.h"
#include "common/ComboWidth.h"
#include "common/ViewExport.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QSlider>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace widelab {

InsightsView::InsightsView(QWidget* parent) : QWidget(parent)
{
    // The boxes ask for a few characters, not their longest entry (run folders
    // are long): the bar must fit beside the docks on a 1280-pixel screen.
    m_run = new QComboBox(this);
    m_run->setAccessibleName(tr("Run to inspect"));
    letShrink({m_run}, 10);
    m_compare = new QComboBox(this);
    m_compare->setAccessibleName(tr("Run to compare with"));
    letShrink({m_compare}, 10);
    m_probe = new QComboBox(this);
    m_probe->setAccessibleName(tr("Probe text"));
    letShrink({m_probe}, 12);
    m_addProbe = new QToolButton(this);
    m_addProbe->setText(tr("Add probe…"));
    m_addProbe->setToolTip(tr("Type a text to inspect: its attention, routing and prediction, now and as training goes on"));
    m_scrubber = new QSlider(Qt::Horizontal, this);
    m_scrubber->setAccessibleName(tr("Step shown"));
    m_scrubber->setToolTip(tr("Replay the run: drag to a step (freezes the views; Live follows training again)"));
    m_scrubber->setRange(0, 0);
    m_stepLabel = new QLabel(this);
    m_stepLabel->setMinimumWidth(m_stepLabel->fontMetrics().horizontalAdvance(QStringLiteral("step 000000 of 000000")));
    m_live = new QCheckBox(tr("Li&ve"), this);
    m_live->setChecked(true);
    m_live->setToolTip(tr("Follow training: show the newest step"));
    m_export = new QToolButton(this);
    m_export->setText(tr("Export"));
    m_export->setPopupMode(QToolButton::InstantPopup);
    auto* exportMenu = new QMenu(m_export);
    exportMenu->addAction(tr("Image (PNG, PDF, SVG)…"), this, &InsightsView::exportImageWithDialog);
    exportMenu->addAction(tr("Numbers (CSV)…"), this, &InsightsView::exportCsvWithDialog);
    m_export->setMenu(exportMenu);

    auto* bar = new QHBoxLayout;
    auto label = [this](const QString& text, QWidget* buddy) {
        auto* l = new QLabel(text, this);
        l->setBuddy(buddy);
        return l;
    };
    bar->addWidget(label(tr("R&un"), m_run));
    bar->addWidget(m_run, 1);
    bar->addWidget(label(tr("&against"), m_compare));
    bar->addWidget(m_compare, 1);
    bar->addSpacing(8);
    bar->addWidget(label(tr("&Probe"), m_probe));
    bar->addWidget(m_probe, 2);
    bar->addWidget(m_addProbe);
    auto* scrub = new QHBoxLayout;
    scrub->addWidget(label(tr("&Step"), m_scrubber));
    scrub->addWidget(m_scrubber, 1);
    scrub->addWidget(m_stepLabel);
    scrub->addWidget(m_live);
    scrub->addWidget(m_export);

    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);
    m_attention = new AttentionView;
    m_experts = new ExpertsView;
    m_layerNorm = new LayerNormView;
    m_paths = new PathsView;
    m_headRoles = new HeadRolesView;
    m_logitLens = new LogitLensView;
    // Each page scrolls when the window is smaller than it would like, rather
    // than making the window wider or taller than a 1280x720 screen.
    auto scrolled = [](InsightPage* page) {
        auto* area = new QScrollArea;
        area->setWidgetResizable(true);
        area->setFrameShape(QFrame::NoFrame);
        area->setWidget(page);
        return area;
    };
    m_tabs->addTab(scrolled(m_attention), tr("Attention"));
    m_tabs->addTab(scrolled(m_experts), tr("Experts"));
    m_tabs->addTab(scrolled(m_layerNorm), tr("LayerNorm"));
    m_tabs->addTab(scrolled(m_paths), tr("Paths"));
    m_tabs->addTab(scrolled(m_headRoles), tr("Head roles"));
    m_tabs->addTab(scrolled(m_logitLens), tr("Logit lens"));
    m_ablation = new AblationView;
    m_tabs->addTab(scrolled(m_ablation), tr("Ablation"));
    m_tabs->setTabToolTip(int(Page::Ablation), tr("Switch each head, expert, path or sublayer off in turn and see "
                                                  "what it does to validation loss and the probe's prediction"));
    m_tabs->addTab(scrolled(new ResidualView), tr("Residual stream"));
    m_tabs->addTab(scrolled(new WeightsView), tr("Weights"));
    m_tabs->setTabToolTip(m_tabs->count() - 1, tr("Each part of the model's weights and gradients: how they spread "
                                                  "over training, and their histogram at the shown step"));
    m_tabs->addTab(scrolled(new TranslationView), tr("Translation"));
    m_tabs->setTabToolTip(m_tabs->count() - 1, tr("A translation model's probe: its translation as training goes on, "
                                                  "and the decoder's cross-attention over the source"));

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(bar);
    layout->addLayout(scrub);
    layout->addWidget(m_tabs, 1);
    rebuildRunCombos();

    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(kRefreshMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &InsightsView::refreshNow);
    connect(m_tabs, &QTabWidget::currentChanged, this, &InsightsView::refreshNow);
    connect(m_run, &QComboBox::currentIndexChanged, this, [this] {
        // A frozen step was chosen on the run shown before: on another run it
        // would follow that run up to the step while Live says it does not.
        if (!isLive())
            setLive(true);
        updateProbes();
        refreshNow();
        Q_EMIT currentRunChanged(currentRun());
    });
    connect(m_compare, &QComboBox::currentIndexChanged, this, [this] {
        updateProbes();
        refreshNow();
    });
    connect(m_probe, &QComboBox::currentIndexChanged, this, &InsightsView::refreshNow);
    connect(m_addProbe, &QToolButton::clicked, this, &InsightsView::askForProbe);
    connect(m_live, &QCheckBox::toggled, this, [this](bool live) {
        if (live)
            m_frozenStep = -1;
        else if (m_frozenStep < 0)
            m_frozenStep = m_steps.isEmpty() ? 0 : m_steps.back();
        refreshNow();
        Q_EMIT liveChanged(live);
    });
    connect(m_scrubber, &QSlider::valueChanged, this, [this](int index) {
        if (index < 0 || index >= m_steps.size())
            return;
        if (isLive() && index == m_steps.size() - 1)
            return;  // the scrubber following training
        setStep(m_steps[index]);
    });
}

InsightsView::~InsightsView() = default;

void InsightsView::addRun(const QString& runId, const QString& label, std::shared_ptr<const InsightHistory> history)
{
    if (!m_runs.contains(runId))
        m_order << runId;
    m_runs[runId] = {label, std::move(history)};
    rebuildRunCombos();
    scheduleRefresh();
}

void InsightsView::removeRun(const QString& runId)
{
    const QString current = currentRun();
    m_runs.remove(runId);
    m_asked.remove(runId);
    m_order.removeAll(runId);
    rebuildRunCombos();
    refreshNow();
    if (currentRun() != current)
        Q_EMIT currentRunChanged(currentRun());
}

QStringList InsightsView::runs() const { return m_order; }

void InsightsView::rebuildRunCombos()
{
    const QString current = currentRun(), compared = comparisonRun();
    const QSignalBlocker runBlock(m_run), compareBlock(m_compare);
    m_run->clear();
    m_compare->clear();
    m_compare->addItem(tr("no comparison"), QString());
    for (const QString& id : std::as_const(m_order)) {
        for (QComboBox* box : {m_run, m_compare}) {
            box->addItem(m_runs[id].label, id);
            box->setItemData(box->count() - 1, m_runs[id].label, Qt::ToolTipRole);  // whole, where the box is narrow
        }
    }
    m_run->setCurrentIndex(std::max(0, m_run->findData(current)));
    m_compare->setCurrentIndex(std::max(0, m_compare->findData(compared)));
    m_addProbe->setEnabled(!m_order.isEmpty());  // a probe needs a run to inspect it
    updateProbes();
}

void InsightsView::setCurrentRun(const QString& runId)
{
    const int index = m_run->findData(runId);
    if (index >= 0 && index != m_run->currentIndex())
        m_run->setCurrentIndex(index);
}

QString InsightsView::currentRun() const { return m_run->currentData().toString(); }

void InsightsView::setComparisonRun(const QString& runId)
{
    m_compare->setCurrentIndex(std::max(0, m_compare->findData(runId)));
}

QString InsightsView::comparisonRun() const { return m_compare->currentData().toString(); }

void InsightsView::historyChanged(const QString& runId)
{
    if (runId == currentRun() || runId == comparisonRun())
        scheduleRefresh();
}

void InsightsView::scheduleRefresh()
{
    if (!m_refreshTimer.isActive())
        m_refreshTimer.start();
}

void InsightsView::setPage(Page page) { m_tabs->setCurrentIndex(int(page)); }
InsightsView::Page InsightsView::page() const { return Page(m_tabs->currentIndex()); }
InsightPage* InsightsView::currentPage() const
{
    const auto* area = qobject_cast<QScrollArea*>(m_tabs->currentWidget());
    return area != nullptr ? dynamic_cast<InsightPage*>(area->widget()) : nullptr;
}

void InsightsView::setLive(bool live) { m_live->setChecked(live); }
bool InsightsView::isLive() const { return m_live->isChecked(); }
qint64 InsightsView::shownStep() const { return isLive() ? -1 : m_frozenStep; }

void InsightsView::setStep(qint64 step)
{
    // The newest recorded step at or before `step` (the first one, before it).
    updateScrubber();
    if (!m_steps.isEmpty()) {
        auto after = std::upper_bound(m_steps.begin(), m_steps.end(), step);
        step = after == m_steps.begin() ? m_steps.front() : *(after - 1);
    }
    m_frozenStep = step;
    const bool wasLive = isLive();
    {
        const QSignalBlocker block(m_live);
        m_live->setChecked(false);
    }
    refreshNow();
    if (wasLive)
        Q_EMIT liveChanged(false);
}

void InsightsView::stepBy(int stops)
{
    updateScrubber();
    if (m_steps.isEmpty())
        return;
    int index = m_scrubber->value();
    index = std::clamp(index + stops, 0, static_cast<int>(m_steps.size()) - 1);
    setStep(m_steps[index]);
}

void InsightsView::setProbe(const QString& text)
{
    if (text.isEmpty())
        return;
    // Asked of the runs shown, so it stays in the box while they show.
    for (const QString& id : {currentRun(), comparisonRun()})
        if (m_runs.contains(id) && !m_asked[id].contains(text))
            m_asked[id] << text;
    // Items show a name (an image probe's file name, "validation #N") and hold the probe.
    if (m_probe->findData(text) < 0)
        m_probe->addItem(imageProbeName(text), text);
    m_probe->setCurrentIndex(m_probe->findData(text));
}

QString InsightsView::probe() const { return m_probe->currentData().toString(); }

void InsightsView::updateProbes()
{
    // The texts of the runs shown: captured, or asked for and not captured yet.
    // Texts of runs no longer shown leave the box.
    QStringList texts;
    for (const QString& id : {currentRun(), comparisonRun()})
        if (m_runs.contains(id))
            for (const QString& text : m_runs[id].history->probeTexts() + m_asked.value(id))
                if (!texts.contains(text))
                    texts << text;
    const QString current = probe();
    QStringList held;
    for (int i = 0; i < m_probe->count(); ++i)
        held << m_probe->itemData(i).toString();
    if (held == texts)
        return;
    const QSignalBlocker block(m_probe);
    m_probe->clear();
    for (const QString& text : texts)
        m_probe->addItem(imageProbeName(text), text);
    m_probe->setCurrentIndex(std::max(0, m_probe->findData(current)));
}

void InsightsView::updateScrubber()
{
    QVector<qint64> steps;
    for (const QString& id : {currentRun(), comparisonRun()})
        if (m_runs.contains(id))
            steps += m_runs[id].history->steps();
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    m_steps = steps;
    const QSignalBlocker block(m_scrubber);
    m_scrubber->setRange(0, std::max(0, static_cast<int>(steps.size()) - 1));
    m_scrubber->setEnabled(!steps.isEmpty());
    int index = static_cast<int>(steps.size()) - 1;
    if (!isLive()) {
        auto after = std::upper_bound(steps.begin(), steps.end(), m_frozenStep);
        index = std::max(0, static_cast<int>(after - steps.begin()) - 1);
    }
    m_scrubber->setValue(std::max(0, index));
    const qint64 last = steps.isEmpty() ? 0 : steps.back();
    m_stepLabel->setText(steps.isEmpty() ? tr("no steps yet")
                         : isLive()      ? tr("step %1 (live)").arg(last)
                                         : tr("step %1 of %2").arg(steps.value(index)).arg(last));
}

void InsightsView::refreshNow()
{
    m_refreshTimer.stop();
    updateProbes();
    updateScrubber();
    // Every change of the shown step passes here (scrubber, Live, run), shown or not.
    if (shownStep() != m_announcedStep) {
        m_announcedStep = shownStep();
        Q_EMIT shownStepChanged(m_announcedStep);
    }
    auto source = [this](const QString& id) {
        InsightSource s;
        if (m_runs.contains(id)) {
            s.runId = id;
            s.label = m_runs[id].label;
            s.history = m_runs[id].history;
        }
        return s;
    };
    const QString compared = comparisonRun() == currentRun() ? QString() : comparisonRun();
    InsightPage* page = currentPage();
    if (page == nullptr || !isVisible())
        return;
    page->setSources(source(currentRun()), source(compared));
    page->setStep(shownStep());
    page->setProbe(probe());
    page->refresh();
}

void InsightsView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    refreshNow();
}

void InsightsView::askForProbe()
{
    if (m_order.isEmpty())
        return;  // nothing to inspect it with: the button is disabled too
    bool ok = false;
    QString text;
    if (m_runs.contains(currentRun()) && m_runs[currentRun()].history->imageInput()) {
        ImageProbeDialog dialog(this);
        ok = dialog.exec() == QDialog::Accepted;
        text = dialog.probe();
    } else {
        text = QInputDialog::getText(this, tr("Add probe"),
                                               tr("A text to inspect with %1%2: attention, routing and prediction.")
                                                   .arg(m_run->currentText(),
                                                        comparisonRun().isEmpty() ? QString()
                                                                                  : tr(" and ") + m_compare->currentText()),
                                               QLineEdit::Normal, QString(), &ok);
    }
    if (!ok || text.trimmed().isEmpty())
        return;
    QStringList ids{currentRun()};
    if (!comparisonRun().isEmpty() && comparisonRun() != currentRun())
        ids << comparisonRun();
    ids.removeAll(QString());
    setProbe(text);
    Q_EMIT probeRequested(ids, text);
    refreshNow();
}

bool InsightsView::exportImage(const QString& path, QString* error)
{
    InsightPage* page = currentPage();
    refreshNow();
    return viewexport::exportWidgetImage(page->exportArea(), path, page->exportTitle(), error);
}

bool InsightsView::exportCsv(const QString& path, QString* error)
{
    refreshNow();
    return viewexport::writeFile(path, currentPage()->csv(), error);
}

void InsightsView::exportImageWithDialog()
{
    viewexport::exportWithDialog(this, currentPage()->exportTitle(), viewexport::imageFilters(), m_exportDirectory,
                                 [this](const QString& path, QString* error) { return exportImage(path, error); });
}

void InsightsView::exportCsvWithDialog()
{
    viewexport::exportWithDialog(this, currentPage()->exportTitle(), {viewexport::csvFilter()}, m_exportDirectory,
                                 [this](const QString& path, QString* error) { return exportCsv(path, error); });
}

}  // namespace widelab
