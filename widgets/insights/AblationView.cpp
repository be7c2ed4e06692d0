#include "AblationView.h"

#include "ColorScale.h"
#include "MatrixView.h"
#include "common/Palette.h"
#include "PredictionBars.h"
#include "common/ViewExport.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

constexpr int kRowRole = Qt::UserRole;        // the scan row of a table row (column 0)
constexpr int kSortRole = Qt::UserRole + 1;   // the number a numeric cell sorts by
constexpr int kMostCellTextColumns = 16;      // wider heatmaps leave the numbers to the read-out

// A table cell that sorts by its number, not its text.
class NumberItem : public QTableWidgetItem {
public:
    NumberItem(const QString& text, double value) : QTableWidgetItem(text)
    {
        setData(kSortRole, value);
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& other) const override
    {
        return data(kSortRole).toDouble() < other.data(kSortRole).toDouble();
    }
};

// "+0.033", "−0.020", "0.000": the sign of the number as written (no "−0.000").
QString signedNumber(double value, int decimals)
{
    const QString digits = QString::number(std::abs(value), 'f', decimals);
    const bool zero = QString::number(0.0, 'f', decimals) == digits;
    return (zero ? QString() : value > 0 ? QStringLiteral("+") : QStringLiteral("−")) + digits;
}

QString kindName(const QString& kind)
{
    if (kind == QLatin1String("heads"))
        return QObject::tr("attention heads");
    if (kind == QLatin1String("experts"))
        return QObject::tr("experts");
    if (kind == QLatin1String("paths"))
        return QObject::tr("paths");
    return QObject::tr("sublayers (attention, FFN)");
}

QString partName(const QString& kind)
{
    if (kind == QLatin1String("heads"))
        return QObject::tr("head");
    if (kind == QLatin1String("experts"))
        return QObject::tr("expert");
    if (kind == QLatin1String("paths"))
        return QObject::tr("path");
    return QObject::tr("sublayer");
}

QString modeVerb(const QString& mode)
{
    return mode == QLatin1String("mean") ? QObject::tr("replaced by its mean") : QObject::tr("zeroed");
}

// The most likely label and its probability, "cat (62.1%)"; empty when none is finite.
QString topClass(const QVector<float>& p, const QStringList& labels)
{
    int best = -1;
    for (int i = 0; i < p.size(); ++i)
        if (std::isfinite(p[i]) && (best < 0 || p[i] > p[best]))
            best = i;
    if (best < 0)
        return QString();
    return QStringLiteral("“%1” (%2%)")
        .arg(visibleToken(labels.value(best, QString::number(best))))
        .arg(QString::number(100.0 * p[best], 'f', 1));
}

}  // namespace

AblationView::AblationView(QWidget* parent) : InsightPage(parent)
{
    m_kind = new QComboBox(this);
    m_kind->setAccessibleName(tr("Parts to ablate"));
    m_kind->setToolTip(tr("Which parts the scan switches off, one at a time"));
    m_mode = new QComboBox(this);
    m_mode->setAccessibleName(tr("Ablation mode"));
    m_mode->addItem(tr("zero"), QStringLiteral("zero"));
    m_mode->setItemData(0, tr("The part's output is replaced by zeros"), Qt::ToolTipRole);
    m_mode->addItem(tr("mean"), QStringLiteral("mean"));
    m_mode->setItemData(1, tr("The part's output is replaced by its mean over the batch's real tokens"), Qt::ToolTipRole);
    m_mode->setToolTip(tr("zero: the part's output is replaced by zeros; mean: by its mean over the batch's real "
                          "tokens (keeps the part's average contribution, removes what it says about each token)"));
    m_scan = new QPushButton(tr("&Scan"), this);
    m_scan->setToolTip(tr("Switch each part off in turn and measure validation loss and accuracy on the same "
                          "examples; runs beside training"));
    m_cancel = new QPushButton(tr("&Cancel"), this);
    m_cancel->setToolTip(tr("Stop the scan of the shown run"));
    m_progress = new QProgressBar(this);
    m_progress->setAccessibleName(tr("Scan progress"));
    m_progress->setTextVisible(true);
    m_progress->setMinimumWidth(220);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* controls = new QHBoxLayout;
    auto* kindLabel = new QLabel(tr("&Ablate"), this);
    kindLabel->setBuddy(m_kind);
    controls->addWidget(kindLabel);
    controls->addWidget(m_kind);
    auto* modeLabel = new QLabel(tr("&mode"), this);
    modeLabel->setBuddy(m_mode);
    controls->addWidget(modeLabel);
    controls->addWidget(m_mode);
    controls->addWidget(m_scan);
    controls->addWidget(m_cancel);
    controls->addWidget(m_progress, 1);

    m_baseline = new QLabel;
    m_baseline->setWordWrap(true);
    m_baseline->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_map = new MatrixView;
    m_map->setAccessibleName(tr("Change of validation loss with each part ablated"));
    m_compareMap = new MatrixView;
    m_compareMap->setAccessibleName(tr("Change of validation loss with each part ablated, run compared"));
    m_table = new QTableWidget;
    m_table->setAccessibleName(tr("Parts by change of validation loss"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->setColumnCount(4);
    m_table->setHorizontalHeaderLabels({tr("Part"), tr("Loss"), tr("Δloss"), tr("Δaccuracy")});
    m_table->horizontalHeaderItem(1)->setToolTip(tr("Validation loss with the part ablated"));
    m_table->horizontalHeaderItem(2)->setToolTip(tr("Loss with the part ablated minus the baseline: positive, the "
                                                    "part helped"));
    m_table->horizontalHeaderItem(3)->setToolTip(tr("Accuracy with the part ablated minus the baseline, in "
                                                    "percentage points"));
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_baselineBars = new PredictionBars;
    m_ablatedBars = new PredictionBars;
    m_topClass = new QLabel;
    m_topClass->setWordWrap(true);
    m_predictionBox = new QWidget;
    auto* predictionLayout = new QVBoxLayout(m_predictionBox);
    predictionLayout->setContentsMargins(0, 0, 0, 0);
    auto* bars = new QHBoxLayout;
    bars->addWidget(m_baselineBars);
    bars->addWidget(m_ablatedBars);
    predictionLayout->addWidget(m_topClass);
    predictionLayout->addLayout(bars, 1);

    m_body = new QWidget(this);
    auto* maps = new QSplitter(Qt::Horizontal);
    maps->addWidget(m_map);
    maps->addWidget(m_compareMap);
    auto* lower = new QSplitter(Qt::Horizontal);
    lower->addWidget(m_table);
    lower->addWidget(m_predictionBox);
    lower->setSizes({1000, 1000});
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(maps);
    split->addWidget(lower);
    auto* bodyLayout = new QVBoxLayout(m_body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(m_baseline);
    bodyLayout->addWidget(split, 1);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(m_status);
    layout->addWidget(m_body, 1);
    // Takes the height while the body is hidden (no scan yet), so that the
    // controls stay at the top instead of floating to the middle.
    layout->addStretch(0);

    connect(m_scan, &QPushButton::clicked, this, [this] {
        if (m_primary.valid() && !kind().isEmpty() && !isBusy(m_primary.runId))
            Q_EMIT scanRequested(m_primary.runId, kind(), mode());
    });
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_primary.valid() && isBusy(m_primary.runId))
            Q_EMIT cancelRequested(m_primary.runId);
    });
    connect(m_table, &QTableWidget::currentCellChanged, this, [this](int row) {
        const QTableWidgetItem* item = row >= 0 ? m_table->item(row, 0) : nullptr;
        if (item != nullptr && item->data(kRowRole).toInt() != m_selected)
            selectRow(item->data(kRowRole).toInt());
    });
    connect(m_map, &MatrixView::cellClicked, this, [this](int row, int col) {
        const AblationScan* scan = scanOf(m_primary.runId);
        if (scan == nullptr)
            return;
        for (int i = 0; i < scan->rows.size(); ++i)
            if (cellOf(i) == QPoint(col, row))
                selectRow(i);
    });
    updateControls();
    showScan();
}

QStringList AblationView::kindsOf(const InsightHistory* history)
{
    if (history == nullptr)
        return {};
    QStringList kinds{QStringLiteral("heads")};
    if (history->hasExperts())
        kinds << QStringLiteral("experts");
    if (history->hasPathWeights())
        kinds << QStringLiteral("paths");
    kinds << QStringLiteral("sublayers");
    return kinds;
}

QStringList AblationView::offeredKinds() const
{
    QStringList kinds;
    for (int i = 0; i < m_kind->count(); ++i)
        kinds << m_kind->itemData(i).toString();
    return kinds;
}

void AblationView::setKind(const QString& kind) { m_kind->setCurrentIndex(m_kind->findData(kind)); }
QString AblationView::kind() const { return m_kind->currentData().toString(); }
void AblationView::setMode(const QString& mode) { m_mode->setCurrentIndex(m_mode->findData(mode)); }
QString AblationView::mode() const { return m_mode->currentData().toString(); }

const AblationScan* AblationView::scanOf(const QString& runId) const
{
    const auto at = m_runs.constFind(runId);
    return at != m_runs.constEnd() && at->scan ? &*at->scan : nullptr;
}

bool AblationView::isBusy(const QString& runId) const
{
    const auto at = m_runs.constFind(runId);
    return at != m_runs.constEnd() && at->busy;
}

void AblationView::forgetRun(const QString& runId)
{
    m_runs.remove(runId);
    changed(runId);
}

void AblationView::setProgress(const QString& runId, int done, int total, const QString& current)
{
    RunScan& run = m_runs[runId];
    run.busy = true;
    run.done = done;
    run.total = total;
    run.current = current;
    run.failure.clear();
    if (runId == m_primary.runId)
        updateControls();
}

void AblationView::setScan(const QString& runId, const AblationScan& scan)
{
    RunScan& run = m_runs[runId];
    run.scan = scan;
    run.failure.clear();
    run.done = run.total = static_cast<int>(scan.rows.size());
    run.current.clear();
    ++run.revision;
    changed(runId);
}

void AblationView::setFailed(const QString& runId, const QString& message)
{
    RunScan& run = m_runs[runId];
    run.failure = message;
    run.busy = false;
    changed(runId);
}

void AblationView::setBusy(const QString& runId, bool busy)
{
    RunScan& run = m_runs[runId];
    if (busy && !run.busy) {  // a new scan: its progress starts from nothing
        run.done = run.total = 0;
        run.current.clear();
        run.failure.clear();
    }
    run.busy = busy;
    changed(runId);
}

void AblationView::changed(const QString& runId)
{
    if (runId == m_primary.runId || runId == m_comparison.runId) {
        updateControls();
        showScan();
    }
}

void AblationView::refresh()
{
    // The kinds the shown run's model has; the choice is kept where it can be.
    const QStringList kinds = kindsOf(m_primary.valid() ? m_primary.history.get() : nullptr);
    if (kinds != offeredKinds()) {
        const QString current = kind();
        const QSignalBlocker block(m_kind);
        m_kind->clear();
        for (const QString& k : kinds)
            m_kind->addItem(kindName(k), k);
        m_kind->setCurrentIndex(std::max(0, m_kind->findData(current)));
    }
    updateControls();
    showScan();
}

void AblationView::updateControls()
{
    const bool valid = m_primary.valid();
    const auto found = m_runs.constFind(m_primary.runId);
    const RunScan none;
    const RunScan& run = found != m_runs.constEnd() ? *found : none;
    m_kind->setEnabled(valid && !run.busy);
    m_mode->setEnabled(valid && !run.busy);
    m_scan->setEnabled(valid && !run.busy && m_kind->count() > 0);
    m_cancel->setEnabled(valid && run.busy);
    if (run.busy) {
        m_progress->setRange(0, std::max(1, run.total));
        m_progress->setValue(std::clamp(run.done, 0, std::max(1, run.total)));
        QString text = run.total > 0 ? tr("%1 / %2").arg(run.done).arg(run.total) : tr("starting the scan…");
        if (run.total > 0 && !run.current.isEmpty())
            text += QStringLiteral(": ") + run.current;
        m_progress->setFormat(text);
    } else {
        m_progress->setRange(0, 1);
        m_progress->setValue(run.scan ? 1 : 0);
        m_progress->setFormat(run.scan ? (run.scan->rows.size() == 1 ? tr("done: 1 part scanned")
                                                                        : tr("done: %1 parts scanned").arg(run.scan->rows.size()))
                                       : tr("no scan yet"));
    }
    QString status;
    if (!valid)
        status = tr("No run to scan.");
    else if (!run.failure.isEmpty())
        status = QStringLiteral("⚠ ") + tr("The scan failed: %1").arg(run.failure);
    else if (!run.scan && !run.busy)
        status = tr("Scan switches each part off in turn and measures validation loss, accuracy and the probe's "
                    "prediction on the same examples.");
    m_status->setText(status);
    m_status->setVisible(!status.isEmpty());
}

QVector<int> AblationView::layersOf(const AblationScan& scan)
{
    QVector<int> layers;
    for (const AblationRow& row : scan.rows)
        if (!layers.contains(row.layer))
            layers << row.layer;
    std::sort(layers.begin(), layers.end());
    return layers;
}

int AblationView::columnsOf(const AblationScan& scan)
{
    int columns = std::max(0, scan.columns);
    for (const AblationRow& row : scan.rows)
        columns = std::max(columns, row.index + 1);
    return columns;
}

QPoint AblationView::cellOf(int index) const
{
    const AblationScan* scan = scanOf(m_primary.runId);
    if (scan == nullptr || index < 0 || index >= scan->rows.size())
        return {-1, -1};
    const AblationRow& row = scan->rows[index];
    return {row.index, static_cast<int>(layersOf(*scan).indexOf(row.layer))};
}

void AblationView::showScan()
{
    auto revision = [this](const QString& runId) {
        const auto at = m_runs.constFind(runId);
        return at == m_runs.constEnd() ? quint64(0) : at->revision;
    };
    const QString key = m_primary.runId + QLatin1Char(':') + QString::number(revision(m_primary.runId))
                        + QLatin1Char('/') + m_comparison.runId + QLatin1Char(':')
                        + QString::number(revision(m_comparison.runId));
    if (key == m_shownKey)
        return;
    m_shownKey = key;
    m_selected = -1;
    const AblationScan* scan = scanOf(m_primary.runId);
    m_body->setVisible(scan != nullptr);
    showMap(m_map, m_primary, scan, true);
    const AblationScan* other = m_comparison.valid() ? scanOf(m_comparison.runId) : nullptr;
    m_compareMap->setVisible(other != nullptr);
    if (other != nullptr)
        showMap(m_compareMap, m_comparison, other, false);
    if (scan == nullptr) {
        m_baseline->clear();
        m_table->setRowCount(0);
        return;
    }
    m_baseline->setText(tr("baseline: loss %1, accuracy %2% on %3 validation examples (step %4, %5)")
                            .arg(QString::number(scan->baselineLoss, 'f', 3))
                            .arg(QString::number(100.0 * scan->baselineAccuracy, 'f', 1))
                            .arg(scan->examples)
                            .arg(scan->step)
                            .arg(scan->weights));
    showTable(*scan);
    // The part that matters most is shown first.
    const QTableWidgetItem* first = m_table->item(0, 0);
    selectRow(first != nullptr ? first->data(kRowRole).toInt() : -1);
}

void AblationView::showMap(MatrixView* map, const InsightSource& source, const AblationScan* scan, bool primary)
{
    if (scan == nullptr) {
        map->setTitle(QString());
        map->clear(tr("No scan of %1 yet.").arg(source.label));
        return;
    }
    const QVector<int> layers = layersOf(*scan);
    MatrixView::Matrix m;
    m.rows = static_cast<int>(layers.size());
    m.cols = columnsOf(*scan);
    if (m.rows == 0 || m.cols == 0) {
        map->setTitle(QString());
        map->clear(tr("The scan of %1 holds no part.").arg(source.label));
        return;
    }
    m.scale = MatrixView::Scale::Diverging;
    m.center = 0;
    m.halfRange = 0;  // the largest |Δloss|
    m.rowTitle = scan->kind == QLatin1String("heads") ? tr("layer") : tr("block");
    m.columnTitle = partName(scan->kind);
    for (int layer : layers)
        m.rowLabels << QString::number(layer + 1);
    // Paths: the attention sublayer's n paths, then the FFN's n.
    const int paths = m.cols / 2;
    for (int c = 0; c < m.cols; ++c) {
        if (scan->kind == QLatin1String("sublayers"))
            m.columnLabels << (c == 0 ? tr("attention") : tr("FFN"));
        else if (scan->kind == QLatin1String("paths"))
            m.columnLabels << (c < paths ? tr("attn %1").arg(c + 1) : tr("FFN %1").arg(c - paths + 1));
        else
            m.columnLabels << QString::number(c + 1);
    }
    m.values.fill(0.0f, qsizetype(m.rows) * m.cols);
    QVector<int> rowAt(m.values.size(), -1);
    for (int i = 0; i < scan->rows.size(); ++i) {
        const AblationRow& row = scan->rows[i];
        if (row.index < 0)
            continue;
        const qsizetype at = qsizetype(layers.indexOf(row.layer)) * m.cols + row.index;
        m.values[at] = std::isfinite(row.lossDelta) ? float(row.lossDelta) : 0.0f;
        rowAt[at] = i;
    }
    if (m.cols <= kMostCellTextColumns)
        for (qsizetype at = 0; at < m.values.size(); ++at)
            m.cellTexts << (rowAt[at] < 0 ? QString() : signedNumber(scan->rows[rowAt[at]].lossDelta, 3));
    m.valueName = tr("Δloss");
    m.decimals = 3;
    const QVector<AblationRow> rows = scan->rows;
    const int cols = m.cols;
    map->setReadout([rows, rowAt, cols](int r, int c) {
        const int i = rowAt.value(qsizetype(r) * cols + c, -1);
        if (i < 0)
            return tr("not scanned");
        const AblationRow& row = rows[i];
        return tr("%1 ablated: loss %2 (Δloss %3), Δaccuracy %4 points")
            .arg(row.label, QString::number(row.loss, 'f', 4), signedNumber(row.lossDelta, 4),
                 signedNumber(100.0 * row.accuracyDelta, 2));
    });
    map->setTitle(tr("%1: Δ validation loss with each %2 %3 (orange: it hurts, blue: it helps)")
                      .arg(source.label, partName(scan->kind), modeVerb(scan->mode)));
    map->setToolTip(primary ? tr("Click a cell to see the probe's prediction without that part") : QString());
    map->setMatrix(std::move(m));
}

void AblationView::showTable(const AblationScan& scan)
{
    m_table->setSortingEnabled(false);
    m_table->clearContents();
    m_table->setRowCount(static_cast<int>(scan.rows.size()));
    double largest = 0;
    for (const AblationRow& row : scan.rows)
        if (std::isfinite(row.lossDelta))
            largest = std::max(largest, std::abs(row.lossDelta));
    const QColor base = palette().color(QPalette::Base);
    for (int i = 0; i < scan.rows.size(); ++i) {
        const AblationRow& row = scan.rows[i];
        auto* label = new QTableWidgetItem(row.label);
        label->setData(kRowRole, i);
        m_table->setItem(i, 0, label);
        m_table->setItem(i, 1, new NumberItem(QString::number(row.loss, 'f', 4), row.loss));
        auto* delta = new NumberItem(signedNumber(row.lossDelta, 4), row.lossDelta);
        if (largest > 0 && std::isfinite(row.lossDelta))
            delta->setBackground(palette::blend(base, QColor(colorscale::diverging(row.lossDelta / largest)), 0.6));
        m_table->setItem(i, 2, delta);
        m_table->setItem(i, 3, new NumberItem(signedNumber(100.0 * row.accuracyDelta, 2) + tr(" pts"), row.accuracyDelta));
    }
    m_table->setSortingEnabled(true);
    m_table->sortItems(2, Qt::DescendingOrder);
}

void AblationView::selectRow(int index)
{
    const AblationScan* scan = scanOf(m_primary.runId);
    m_selected = scan != nullptr && index >= 0 && index < scan->rows.size() ? index : -1;
    // The table and the heatmap follow.
    for (int r = 0; r < m_table->rowCount(); ++r)
        if (const QTableWidgetItem* item = m_table->item(r, 0); item != nullptr && item->data(kRowRole).toInt() == m_selected) {
            const QSignalBlocker block(m_table);
            m_table->setCurrentCell(r, 0);
            m_table->selectRow(r);
        }
    if (m_map->matrix().rows > 0) {
        MatrixView::Matrix m = m_map->matrix();
        m.marked.clear();
        if (m_selected >= 0)
            m.marked << cellOf(m_selected);
        m_map->setMatrix(std::move(m));
    }
    showPrediction();
}

void AblationView::showPrediction()
{
    const AblationScan* scan = scanOf(m_primary.runId);
    if (scan == nullptr)
        return;
    if (scan->probeText.isEmpty() || scan->baselinePrediction.isEmpty()) {
        m_topClass->setText(tr("The scan had no probe: there is no prediction to compare."));
        m_baselineBars->setPrediction({}, {}, QString());
        m_ablatedBars->setPrediction({}, {}, QString());
        return;
    }
    const QString baseTop = topClass(scan->baselinePrediction, scan->predictionLabels);
    m_baselineBars->setPrediction(scan->baselinePrediction, scan->predictionLabels, tr("baseline"));
    if (m_selected < 0 || scan->rows[m_selected].probePrediction.isEmpty()) {
        m_ablatedBars->setPrediction({}, {}, m_selected < 0 ? tr("select a part") : tr("no prediction"));
        m_topClass->setText(tr("Probe “%1”: top class %2. Select a part to see the prediction without it.")
                                .arg(scan->probeText, baseTop));
        return;
    }
    const AblationRow& row = scan->rows[m_selected];
    m_ablatedBars->setPrediction(row.probePrediction, scan->predictionLabels, tr("without %1").arg(row.label));
    m_topClass->setText(tr("Probe “%1”: top class %2 with every part, %3 without %4.")
                            .arg(scan->probeText, baseTop, topClass(row.probePrediction, scan->predictionLabels), row.label));
}

QString AblationView::exportTitle() const
{
    const AblationScan* scan = scanOf(m_primary.runId);
    return tr("ablation %1").arg(scan != nullptr ? scan->kind : kind());
}

QByteArray AblationView::csv() const
{
    QByteArray out = "layer,index,label,loss,loss_delta,accuracy_delta\n";
    const AblationScan* scan = scanOf(m_primary.runId);
    if (scan == nullptr)
        return out;
    for (const AblationRow& row : scan->rows)
        out += QByteArray::number(row.layer + 1) + ',' + QByteArray::number(row.index + 1) + ',' + csvField(row.label)
               + ',' + csvNumber(row.loss) + ',' + csvNumber(row.lossDelta) + ',' + csvNumber(row.accuracyDelta) + '\n';
    return out;
}

}  // namespace widelab
