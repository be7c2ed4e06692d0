#include "StudiesView.h"

#include "curves/CurvePlot.h"
#include "common/ComboWidth.h"
#include "common/Palette.h"
#include "common/ViewExport.h"
#include "vocab/Curves.h"
#include "vocab/Format.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QRegularExpression>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace widelab {
namespace {

// A measure's value as the table shows it: whole numbers (parameter counts)
// with their digits grouped, "2,512,345", others with the measure's decimals.
// The CSV export takes the plain number (kPlainRole).
constexpr int kPlainRole = Qt::UserRole + 1;

QString measureText(double value, const StudyMeasureInfo& measure)
{
    return QString::fromStdString(tableNumber(value * measure.scale, measure.decimals));
}

struct CurveChoice {
    const char* metric;
    const char* title;
    CurvePlot::SeriesStyle style;
};

// Training loss first: it is there from a member's first steps, validations only every eval_every.
const CurveChoice kCurveChoices[] = {
    {curve::kLoss, QT_TRANSLATE_NOOP("widelab::StudiesView", "training loss"), CurvePlot::SeriesStyle::Smoothed},
    {curve::kValidationAccuracy, QT_TRANSLATE_NOOP("widelab::StudiesView", "validation accuracy"),
     CurvePlot::SeriesStyle::Markers},
    {curve::kValidationLoss, QT_TRANSLATE_NOOP("widelab::StudiesView", "validation loss"), CurvePlot::SeriesStyle::Markers},
    {curve::kAccuracy, QT_TRANSLATE_NOOP("widelab::StudiesView", "training accuracy"), CurvePlot::SeriesStyle::Smoothed},
    {curve::kValidationBleu, QT_TRANSLATE_NOOP("widelab::StudiesView", "validation BLEU"), CurvePlot::SeriesStyle::Markers},
};

QString statusText(const StudyMemberRow& member)
{
    if ((member.status == QLatin1String("running") || member.status == QLatin1String("stopped")) && member.totalSteps > 0)
        return QStringLiteral("%1 %2/%3").arg(member.status).arg(member.step).arg(member.totalSteps);
    return member.status;
}

QColor statusColor(const QString& status, const QPalette& pal)
{
    const QColor base = pal.color(QPalette::Base);
    if (status == QLatin1String("completed"))
        return palette::blend(base, palette::seriesColor(2), 0.25);
    if (status == QLatin1String("failed"))
        return palette::blend(base, QColor(213, 94, 0), 0.3);
    if (status == QLatin1String("running"))
        return palette::blend(base, pal.color(QPalette::Highlight), 0.25);
    return base;
}

}  // namespace

StudiesView::StudiesView(QWidget* parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("studiesView"));
    qRegisterMetaType<StudyStartOptions>();

    m_builtins = new QComboBox(this);
    m_builtins->setObjectName(QStringLiteral("studyPicker"));
    letShrink({m_builtins}, 18);
    m_builtins->setToolTip(tr("The built-in studies: each mirrors a comparison of one of the papers"));
    m_steps = new QSpinBox(this);
    m_steps->setObjectName(QStringLiteral("studySteps"));
    m_steps->setRange(0, 10'000'000);
    m_steps->setSingleStep(50);
    m_steps->setSpecialValueText(tr("study's"));
    m_steps->setToolTip(tr("Every member's training steps, for a quick look (recorded with the study, so that "
                           "continuing keeps it)"));
    m_seeds = new QSpinBox(this);
    m_seeds->setObjectName(QStringLiteral("studySeeds"));
    m_seeds->setRange(0, 100);
    m_seeds->setSpecialValueText(tr("study's"));
    m_seeds->setToolTip(tr("How many seeds each axis point runs with"));
    m_jobs = new QSpinBox(this);
    m_jobs->setObjectName(QStringLiteral("studyJobs"));
    m_jobs->setRange(1, 64);
    m_jobs->setToolTip(tr("Members trained at once; the compute threads are divided among them"));
    m_start = new QPushButton(tr("Start"), this);
    m_start->setObjectName(QStringLiteral("studyStart"));
    m_start->setToolTip(tr("Start the chosen study in a new folder, or continue it where it is (Ctrl+F5)"));
    m_continue = new QPushButton(tr("Continue"), this);
    m_continue->setObjectName(QStringLiteral("studyContinue"));
    m_continue->setToolTip(tr("Continue the study shown where it stopped: finished members are kept, a stopped one "
                              "resumes from its checkpoint (Ctrl+Shift+F5)"));
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName(QStringLiteral("studyStop"));
    m_stop->setToolTip(tr("Stop the running members after their current step; each saves a checkpoint (Ctrl+Alt+F5)"));
    auto* build = m_build = new QPushButton(tr("New..."), this);
    build->setObjectName(QStringLiteral("studyBuild"));
    build->setToolTip(tr("A new study of the configuration being edited: choose the keys to vary, their values and "
                         "seeds (Ctrl+Shift+N)"));
    auto* open = m_open = new QPushButton(tr("Open..."), this);
    open->setObjectName(QStringLiteral("studyOpen"));
    open->setToolTip(tr("Open a study folder, finished or not, or one widelab-cli study is running (Ctrl+Alt+O)"));

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Study:"), this));
    bar->addWidget(m_builtins, 1);
    bar->addWidget(m_start);
    bar->addWidget(m_continue);
    bar->addWidget(m_stop);
    bar->addSpacing(12);
    bar->addWidget(build);
    bar->addWidget(open);

    m_title = new QLabel(tr("No study open: pick one and press Start, or open a study folder."), this);
    m_title->setObjectName(QStringLiteral("studyTitle"));
    m_title->setTextFormat(Qt::RichText);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("studyProgress"));
    m_progress->setMaximumWidth(160);
    m_progress->setFormat(QStringLiteral("%v / %m"));
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("studyStatus"));
    auto* quick = new QHBoxLayout;
    quick->addWidget(new QLabel(tr("Steps:"), this));
    quick->addWidget(m_steps);
    quick->addWidget(new QLabel(tr("Seeds:"), this));
    quick->addWidget(m_seeds);
    quick->addWidget(new QLabel(tr("At once:"), this));
    quick->addWidget(m_jobs);
    quick->addSpacing(12);
    quick->addWidget(m_progress);
    quick->addWidget(m_status, 1);

    // Member curves.
    m_curveMetric = new QComboBox(this);
    m_curveMetric->setObjectName(QStringLiteral("studyCurveMetric"));
    for (const CurveChoice& choice : kCurveChoices)
        m_curveMetric->addItem(tr(choice.title), QString::fromLatin1(choice.metric));
    m_curves = new CurvePlot(this);
    m_curves->setObjectName(QStringLiteral("studyCurves"));
    auto* curvesBox = new QWidget(this);
    auto* curvesLayout = new QVBoxLayout(curvesBox);
    curvesLayout->setContentsMargins(0, 0, 0, 0);
    auto* curvesBar = new QHBoxLayout;
    curvesBar->addWidget(new QLabel(tr("Members:"), curvesBox));
    curvesBar->addWidget(m_curveMetric);
    curvesBar->addStretch(1);
    curvesLayout->addLayout(curvesBar);
    curvesLayout->addWidget(m_curves, 1);

    // The study's chart.
    m_chartKind = new QComboBox(this);
    m_chartKind->setObjectName(QStringLiteral("studyChartKind"));
    m_chartKind->addItem(tr("against an axis"), int(StudyChart::Kind::AgainstAxis));
    m_chartKind->addItem(tr("against parameters"), int(StudyChart::Kind::AgainstParameters));
    m_chartKind->addItem(tr("against latency"), int(StudyChart::Kind::AgainstLatency));
    m_chartMeasure = new QComboBox(this);
    m_chartMeasure->setObjectName(QStringLiteral("studyChartMeasure"));
    m_chartAxis = new QComboBox(this);
    m_chartAxis->setObjectName(QStringLiteral("studyChartAxis"));
    letShrink({m_chartKind, m_chartMeasure, m_chartAxis}, 8);
    m_chartMeasure->setToolTip(tr("The measure drawn (mean over the completed seeds, bars: their standard deviation)"));
    m_chartAxis->setToolTip(tr("The axis along x; the other axes' values make the lines"));
    auto* exportChart = new QPushButton(tr("Export..."), this);
    exportChart->setToolTip(tr("The chart as PNG, PDF or SVG, or its values as CSV"));
    m_chart = new StudyChart(this);
    m_notes = new QLabel(this);
    m_notes->setObjectName(QStringLiteral("studyNotes"));
    m_notes->setWordWrap(true);
    m_notes->setTextFormat(Qt::RichText);
    m_notes->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* chartBox = new QWidget(this);
    auto* chartLayout = new QVBoxLayout(chartBox);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    auto* chartBar = new QHBoxLayout;
    chartBar->addWidget(m_chartMeasure);
    chartBar->addWidget(m_chartKind);
    chartBar->addWidget(m_chartAxis);
    chartBar->addStretch(1);
    chartBar->addWidget(exportChart);
    chartLayout->addLayout(chartBar);
    chartLayout->addWidget(m_chart, 1);

    // The results table.
    m_table = new QTableWidget(this);
    m_table->setObjectName(QStringLiteral("studyTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(false);
    m_table->verticalHeader()->setVisible(false);
    m_table->setToolTip(tr("Double-click a member to open it as a run (curves and insights)"));
    auto* exportTable = new QPushButton(tr("Export Table..."), this);
    auto* tableBox = new QWidget(this);
    auto* tableLayout = new QVBoxLayout(tableBox);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addWidget(m_table, 1);
    auto* tableBar = new QHBoxLayout;
    tableBar->addWidget(m_notes, 1);
    tableBar->addWidget(exportTable, 0, Qt::AlignTop);
    tableLayout->addLayout(tableBar);

    auto* top = new QSplitter(Qt::Horizontal, this);
    top->addWidget(curvesBox);
    top->addWidget(chartBox);
    top->setStretchFactor(0, 1);
    top->setStretchFactor(1, 1);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(top);
    split->addWidget(tableBox);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({500, 420});
    split->setChildrenCollapsible(false);
    m_table->setMinimumHeight(80);

    // Until a study is open, what the page is for instead of empty charts.
    auto* hint = new QLabel(
        tr("<p><b>A study trains a grid of runs and sets their results beside the papers' tables.</b></p>"
           "<p>Pick a built-in study above (its tooltip says what it mirrors and how long it takes) and press "
           "<b>Start</b>, make your own with <b>New...</b>, or open a study folder with "
           "<b>Open...</b>.</p>"
           "<p>Here you will see every member's curves as it trains, a chart of any measure against an axis, "
           "and the results table with the paper's figures beside them; each exports as a figure or a CSV.</p>"),
        this);
    hint->setObjectName(QStringLiteral("studyEmptyHint"));
    hint->setWordWrap(true);
    hint->setAlignment(Qt::AlignCenter);
    hint->setStyleSheet(QStringLiteral("color: palette(link); padding: 24px;"));
    m_body = new QStackedWidget(this);
    m_body->addWidget(hint);
    m_body->addWidget(split);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addLayout(quick);
    layout->addWidget(m_title);
    layout->addWidget(m_body, 1);

    connect(m_start, &QPushButton::clicked, this, [this] { Q_EMIT startRequested(startOptions()); });
    connect(m_continue, &QPushButton::clicked, this, &StudiesView::continueRequested);
    connect(m_stop, &QPushButton::clicked, this, &StudiesView::stopRequested);
    connect(build, &QPushButton::clicked, this, &StudiesView::buildRequested);
    connect(open, &QPushButton::clicked, this, &StudiesView::openRequested);
    connect(m_builtins, &QComboBox::currentIndexChanged, this,
            [this] { m_builtins->setToolTip(m_builtins->currentData(Qt::ToolTipRole).toString()); });
    connect(m_curveMetric, &QComboBox::currentIndexChanged, this, [this] { redrawCurves(); });
    connect(m_chartKind, &QComboBox::currentIndexChanged, this, [this] {
        m_chart->setKind(StudyChart::Kind(m_chartKind->currentData().toInt()));
        m_chartAxis->setEnabled(m_chart->kind() == StudyChart::Kind::AgainstAxis);
    });
    connect(m_chartMeasure, &QComboBox::currentIndexChanged, this,
            [this] { m_chart->setMeasure(m_chartMeasure->currentData().toString()); });
    connect(m_chartAxis, &QComboBox::currentIndexChanged, this, [this](int index) { m_chart->setAxis(index); });
    connect(exportChart, &QPushButton::clicked, this, &StudiesView::exportChartWithDialog);
    connect(exportTable, &QPushButton::clicked, this, &StudiesView::exportTableWithDialog);
    connect(m_table, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        const QString directory = m_table->item(row, 0)->data(Qt::UserRole).toString();
        if (!directory.isEmpty() && QFileInfo(directory).isDir())
            Q_EMIT memberActivated(directory);
    });
    setDefaultJobs(1);
    redrawCurves();
    updateButtons();
}

void StudiesView::setBuiltins(const QVector<Builtin>& builtins)
{
    const QString selected = selectedBuiltin();
    m_builtins->clear();
    for (const Builtin& builtin : builtins) {
        m_builtins->addItem(builtin.title.isEmpty() ? builtin.name : builtin.title, builtin.name);
        m_builtins->setItemData(m_builtins->count() - 1, builtin.description, Qt::ToolTipRole);
    }
    selectBuiltin(selected);
    updateButtons();
}

void StudiesView::selectBuiltin(const QString& name)
{
    const int index = m_builtins->findData(name);
    if (index >= 0)
        m_builtins->setCurrentIndex(index);
}

QString StudiesView::selectedBuiltin() const
{
    return m_builtins->currentData().toString();
}

void StudiesView::setDefaultJobs(int jobs)
{
    m_jobs->setValue(std::max(1, jobs));
}

StudyStartOptions StudiesView::startOptions() const
{
    return {selectedBuiltin(), m_steps->value(), m_seeds->value(), m_jobs->value()};
}

void StudiesView::setStudy(const StudyData& study)
{
    const bool another = study.directory != m_study.directory;
    m_study = study;
    if (another)
        clearCurves();
    m_body->setCurrentIndex(study.isEmpty() ? 0 : 1);
    const int done = study.count(QStringLiteral("completed")) + study.count(QStringLiteral("failed"));
    m_title->setText(study.isEmpty() ? tr("No study open.")
                                     : QStringLiteral("<b>%1</b> &nbsp; %2")
                                           .arg(study.title.toHtmlEscaped(),
                                                QDir::toNativeSeparators(QDir::cleanPath(study.directory)).toHtmlEscaped()));
    m_title->setToolTip(study.description);
    if (!m_running)
        setProgress(done, static_cast<int>(study.members.size()),
                    study.isEmpty() ? QString()
                    : done == study.members.size()
                        ? tr("finished")
                        : tr("%1 left; Continue trains them").arg(study.members.size() - done));
    fillTable();
    m_chart->setStudy(study);
    fillChartControls();
    fillNotes();
    // New members take their colours; curves already drawn keep theirs.
    for (const StudyMemberRow& member : study.members)
        if (m_curves->hasRun(member.name))
            m_curves->addRun(member.name, memberLabel(member), pointColor(member.point));
    updateButtons();
}

QString StudiesView::memberLabel(const StudyMemberRow& member) const
{
    QStringList values;
    for (int axis = 0; axis < m_study.axes.size(); ++axis)
        values << studyAxisValueText(m_study, member, axis, true);
    values.removeAll(QString());
    if (values.isEmpty() || member.axisValues.isEmpty())
        return member.name;
    return values.join(QStringLiteral(", ")) + tr(" · seed %1").arg(member.seed);
}

QColor StudiesView::pointColor(const QString& point) const
{
    return palette::seriesColor(std::max(0, static_cast<int>(m_study.points().indexOf(point))));
}

void StudiesView::clearCurves()
{
    for (const QString& run : m_curves->runs())
        m_curves->removeRun(run);
    m_memberCurves.clear();
}

void StudiesView::clearCurve(const QString& member)
{
    m_memberCurves.remove(member);
    m_curves->removeRun(member);
}

QString StudiesView::curveMetric() const
{
    return m_curveMetric->currentData().toString();
}

void StudiesView::setCurveMetric(const QString& metric)
{
    const int index = m_curveMetric->findData(metric);
    if (index >= 0)
        m_curveMetric->setCurrentIndex(index);
}

void StudiesView::appendCurve(const QString& member, const QString& metric, const QVector<CurvePoint>& points)
{
    m_memberCurves[member][metric] += points;
    if (metric != curveMetric())
        return;
    if (!m_curves->hasRun(member)) {
        StudyMemberRow row;
        row.name = row.point = member;
        for (const StudyMemberRow& known : m_study.members)
            if (known.name == member)
                row = known;
        m_curves->addRun(member, memberLabel(row), pointColor(row.point));
    }
    m_curves->appendPoints(member, metric, points);
}

void StudiesView::redrawCurves()
{
    const QString metric = curveMetric();
    for (const QString& run : m_curves->runs())
        m_curves->removeRun(run);
    for (const CurveChoice& choice : kCurveChoices)
        if (metric == QLatin1String(choice.metric)) {
            m_curves->declareSeries(metric, QString(), choice.style);
            m_curves->setTitle(tr("Members: %1").arg(tr(choice.title)));
        }
    for (const StudyMemberRow& row : m_study.members) {
        const auto member = m_memberCurves.constFind(row.name);
        if (member == m_memberCurves.constEnd() || !member->contains(metric))
            continue;
        m_curves->addRun(row.name, memberLabel(row), pointColor(row.point));
        m_curves->appendPoints(row.name, metric, member->value(metric));
    }
    m_curves->resetView();
}

void StudiesView::setMemberProgress(const QString& member, qint64 step, qint64 totalSteps)
{
    for (int row = 0; row < m_study.members.size(); ++row) {
        StudyMemberRow& m = m_study.members[row];
        if (m.name != member || m.status != QLatin1String("running"))
            continue;
        m.step = step;
        m.totalSteps = totalSteps;
        if (QTableWidgetItem* item = m_table->item(row, 2))
            item->setText(statusText(m));
    }
}

void StudiesView::setRunning(bool running)
{
    m_running = running;
    m_stopping = false;
    updateButtons();
}

void StudiesView::setStopping()
{
    m_stopping = m_running;
    updateButtons();
}

bool StudiesView::canContinue() const
{
    const int done = m_study.count(QStringLiteral("completed")) + m_study.count(QStringLiteral("failed"));
    return !m_running && !m_study.isEmpty() && done < m_study.members.size();
}

void StudiesView::setProgress(int done, int total, const QString& text)
{
    m_progress->setRange(0, std::max(total, 1));
    m_progress->setValue(std::min(done, std::max(total, 1)));
    m_progress->setVisible(total > 0);
    m_status->setText(text);
}

void StudiesView::updateButtons()
{
    m_start->setEnabled(!m_running && m_builtins->count() > 0);
    m_continue->setEnabled(canContinue());
    m_stop->setEnabled(m_running && !m_stopping);
    m_build->setEnabled(!m_running);
    m_open->setEnabled(!m_running);
    Q_EMIT buttonsChanged();
    for (QSpinBox* box : {m_steps, m_seeds, m_jobs})
        box->setEnabled(!m_running);
    m_builtins->setEnabled(!m_running);
}

void StudiesView::fillTable()
{
    QStringList keys;
    for (const StudyMemberRow& member : m_study.members)
        for (const auto& setting : member.settings)
            if (!keys.contains(setting.first))
                keys << setting.first;
    QStringList headers{tr("member"), tr("seed"), tr("status")};
    for (const QString& key : keys)
        headers << key.section(QLatin1Char('.'), -1);
    for (const StudyMeasureInfo& measure : m_study.measures)
        headers << measure.title;
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    for (int i = 0; i < keys.size(); ++i)
        m_table->horizontalHeaderItem(3 + i)->setToolTip(keys.at(i));
    m_table->setRowCount(static_cast<int>(m_study.members.size()));
    const QPalette pal = palette();
    for (int row = 0; row < m_study.members.size(); ++row) {
        const StudyMemberRow& member = m_study.members.at(row);
        QStringList cells{member.name, QString::number(member.seed), statusText(member)};
        for (const QString& key : keys)
            cells << studySettingValue(member, key);
        QStringList plain = cells;
        for (const StudyMeasureInfo& measure : m_study.measures) {
            const auto it = member.measures.constFind(measure.key);
            const bool measured = it != member.measures.constEnd() && std::isfinite(*it);
            cells << (measured ? measureText(*it, measure) : QString());
            plain << (measured ? QString::number(*it * measure.scale, 'f', measure.decimals) : QString());
        }
        for (int column = 0; column < cells.size(); ++column) {
            auto* item = new QTableWidgetItem(cells.at(column));
            item->setData(kPlainRole, plain.at(column));
            if (column >= 3 + keys.size() || column == 1)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (column == 2) {
                item->setBackground(statusColor(member.status, pal));
                if (!member.error.isEmpty())
                    item->setToolTip(member.error);
            }
            if (column == 0) {
                item->setData(Qt::UserRole, member.directory);
                item->setForeground(pointColor(member.point));
                item->setToolTip(member.error.isEmpty() ? member.directory : member.error);
            }
            m_table->setItem(row, column, item);
        }
    }
    m_table->resizeColumnsToContents();
}

void StudiesView::fillChartControls()
{
    const QSignalBlocker blockMeasure(m_chartMeasure);
    const QSignalBlocker blockAxis(m_chartAxis);
    const QString measure = m_chartMeasure->currentData().toString();
    const int axis = m_chartAxis->currentIndex();
    m_chartMeasure->clear();
    for (const StudyMeasureInfo& info : m_study.measures)
        if (info.key != QLatin1String("steps"))
            m_chartMeasure->addItem(info.title, info.key);
    m_chartAxis->clear();
    for (const StudyAxisInfo& info : m_study.axes)
        m_chartAxis->addItem(info.label.isEmpty() ? info.keys.join(QStringLiteral(", ")) : info.label);
    m_chartAxis->setCurrentIndex(std::clamp(axis, 0, std::max(0, static_cast<int>(m_chartAxis->count()) - 1)));
    m_chart->setAxis(m_chartAxis->currentIndex());
    if (!measure.isEmpty())
        m_chart->setMeasure(measure);
    // The chart picks the study's headline measure the first time.
    m_chartMeasure->setCurrentIndex(m_chartMeasure->findData(m_chart->measure()));
}

void StudiesView::fillNotes()
{
    QStringList parts;
    for (const StudyLatencyRow& row : m_study.latency) {
        QString line = tr("Inference latency, deep against wide%1: %2 takes %3 ms, %4 takes %5 ms: <b>%6x</b>")
                           .arg(row.group.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(row.group.toHtmlEscaped()))
                           .arg(row.deep.toHtmlEscaped())
                           .arg(row.deepMs, 0, 'f', 2)
                           .arg(row.wide.toHtmlEscaped())
                           .arg(row.wideMs, 0, 'f', 2)
                           .arg(row.deepMs / row.wideMs, 0, 'f', 2);
        if (std::isfinite(row.paperRatio)) {
            static const QRegularExpression table(QStringLiteral("Table \\d+"));
            line += tr("; the paper's: %1x (its %2)").arg(row.paperRatio, 0, 'f', 2).arg(table.match(row.paperSource).captured());
        }
        parts << line;
    }
    // One line per paper: its tables; what each is and how it differs from the study, in the tooltip.
    QStringList tips, papers;
    QHash<QString, QStringList> tables;
    static const QRegularExpression tableRef(QStringLiteral("^Table \\d+"));
    for (const StudyPaperSeries& paper : m_study.papers) {
        if (!papers.contains(paper.paper))
            papers << paper.paper;
        const QString ref = tableRef.match(paper.source).captured();
        tables[paper.paper] << (ref.isEmpty() ? paper.source : ref);
        tips << paper.paper + QStringLiteral(", ") + paper.source + QStringLiteral(": ") + paper.note;
    }
    for (const QString& paper : papers)
        parts << tr("Diamonds (dashed): the paper's own figures, %1 of %2 (hover for what they are).")
                     .arg(tables.value(paper).join(tr(" and ")).toHtmlEscaped(), paper.toHtmlEscaped());
    m_notes->setToolTip(tips.join(QStringLiteral("\n\n")));
    if (!m_study.paperProblem.isEmpty())
        parts << tr("The papers' figures could not be read: %1").arg(m_study.paperProblem.toHtmlEscaped());
    m_notes->setText(parts.join(QStringLiteral("<br>")));
    m_notes->setVisible(!parts.isEmpty());
}

void StudiesView::exportChartWithDialog()
{
    m_chart->exportWithDialog();
}

bool StudiesView::exportTableCsv(const QString& path, QString* error) const
{
    QByteArray csv;
    for (int column = 0; column < m_table->columnCount(); ++column)
        csv += (column ? "," : "") + viewexport::csvField(m_table->horizontalHeaderItem(column)->text());
    csv += '\n';
    for (int row = 0; row < m_table->rowCount(); ++row) {
        for (int column = 0; column < m_table->columnCount(); ++column) {
            const QTableWidgetItem* item = m_table->item(row, column);
            csv += (column ? "," : "") + viewexport::csvField(item ? item->data(kPlainRole).toString() : QString());
        }
        csv += '\n';
    }
    return viewexport::writeFile(path, csv, error);
}

void StudiesView::exportTableWithDialog()
{
    viewexport::exportWithDialog(this, m_study.title.isEmpty() ? tr("study") : m_study.title, {viewexport::csvFilter()},
                                 m_exportDirectory,
                                 [this](const QString& path, QString* error) { return exportTableCsv(path, error); });
}

}  // namespace widelab
