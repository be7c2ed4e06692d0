#include "LayerNormView.h"

#include "curves/CurvePlot.h"
#include "MatrixView.h"
#include "common/ComboWidth.h"
#include "common/Palette.h"
#include "common/ViewExport.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

using Rows = std::vector<std::vector<float>>;  // [block][channel]

const Rows& gammas(const TrainingSnapshot& s, LayerNormView::Position p)
{
    return p == LayerNormView::Position::Ffn ? s.ffnGamma : s.attentionGamma;
}

const Rows& betas(const TrainingSnapshot& s, LayerNormView::Position p)
{
    return p == LayerNormView::Position::Ffn ? s.ffnBeta : s.attentionBeta;
}

const LayerNormDivergence& divergence(const TrainingSnapshot& s, LayerNormView::Position p)
{
    return p == LayerNormView::Position::Ffn ? s.divergence : s.attentionDivergence;
}

}  // namespace

LayerNormView::LayerNormView(QWidget* parent) : InsightPage(parent)
{
    m_position = new QComboBox(this);
    m_position->addItem(tr("Before the FFN/MoE (WideNet Eq. 9)"), int(Position::Ffn));
    m_position->addItem(tr("Before attention"), int(Position::Attention));
    m_position->setToolTip(tr("Which of each block's two LayerNorms: the one before the FFN or MoE, which "
                              "WideNet's Eq. 9 compares, or the one before attention"));
    m_position->setAccessibleName(tr("LayerNorm position"));
    m_reading = new QComboBox(this);
    m_reading->addItem(tr("as printed: each channel against every channel of other blocks"), int(Reading::AllPairs));
    m_reading->addItem(tr("elementwise: each channel against the same channel"), int(Reading::Elementwise));
    m_reading->setAccessibleName(tr("Reading of Eq. 9"));
    m_reading->setToolTip(tr("WideNet's Eq. 9 compares element i of block j with element m of block n; read literally "
                             "it averages over every pair of channels, read as intended, over matching channels."));
    // Long choices: the boxes give up width before they widen the page past a laptop's view.
    letShrink({m_position, m_reading}, 20);

    m_divergence = new CurvePlot;
    m_divergence->setTitle(tr("Divergence of the blocks' LayerNorms (Eq. 9)"));
    m_divergence->declareSeries(QStringLiteral("gamma"), QStringLiteral("γ"));
    m_divergence->declareSeries(QStringLiteral("beta"), QStringLiteral("β"));
    m_gamma = new MatrixView;
    m_gamma->setAccessibleName(tr("Gamma of every block and channel"));
    m_beta = new MatrixView;
    m_beta->setAccessibleName(tr("Beta of every block and channel"));

    m_body = new QWidget(this);
    auto* maps = new QSplitter(Qt::Vertical);
    maps->addWidget(m_gamma);
    maps->addWidget(m_beta);
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(m_divergence);
    split->addWidget(maps);
    split->setSizes({1000, 1000});  // halves, whatever the contents ask for
    auto* bodyLayout = new QVBoxLayout(m_body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(split);

    auto* controls = new QHBoxLayout;
    auto* positionLabel = new QLabel(tr("&Position"), this);
    positionLabel->setBuddy(m_position);
    controls->addWidget(positionLabel);
    controls->addWidget(m_position, 2);  // the room the two texts need, about 2:3
    auto* readingLabel = new QLabel(tr("&Reading"), this);
    readingLabel->setBuddy(m_reading);
    controls->addWidget(readingLabel);
    controls->addWidget(m_reading, 3);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(m_body, 1);
    connect(m_position, &QComboBox::currentIndexChanged, this, &LayerNormView::refresh);
    connect(m_reading, &QComboBox::currentIndexChanged, this, &LayerNormView::refresh);
}

void LayerNormView::setPosition(Position p) { m_position->setCurrentIndex(m_position->findData(int(p))); }
void LayerNormView::setReading(Reading r) { m_reading->setCurrentIndex(m_reading->findData(int(r))); }
LayerNormView::Position LayerNormView::position() const { return Position(m_position->currentData().toInt()); }
LayerNormView::Reading LayerNormView::reading() const { return Reading(m_reading->currentData().toInt()); }

void LayerNormView::refresh()
{
    showCurves();
    showMaps();
    const TrainingSnapshot* shown = m_step >= 0 && m_primary.valid() ? m_primary.history->stateAt(m_step) : nullptr;
    m_divergence->setStepMarker(shown ? double(shown->step) : std::numeric_limits<double>::quiet_NaN());
}

void LayerNormView::showCurves()
{
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    QString key = QString::number(int(position())) + QLatin1Char('/') + QString::number(int(reading()));
    for (const InsightSource* source : sources)
        if (source->valid())
            key += QLatin1Char('/') + source->runId + QLatin1Char(':') + QString::number(source->history->revision());
    if (key == m_curvesKey)
        return;
    m_curvesKey = key;
    for (const QString& run : m_divergence->runs())
        m_divergence->removeRun(run);
    for (int i = 0; i < 2; ++i) {
        const InsightSource& source = *sources[i];
        if (!source.valid())
            continue;
        m_divergence->addRun(source.runId, source.label, palette::seriesColor(i));
        QVector<CurvePoint> gamma, beta;
        for (const TrainingSnapshot& state : source.history->states()) {
            const LayerNormDivergence& d = divergence(state, position());
            const bool all = reading() == Reading::AllPairs;
            gamma.push_back({double(state.step), 0.0, all ? d.gammaAllPairs : d.gammaElementwise});
            beta.push_back({double(state.step), 0.0, all ? d.betaAllPairs : d.betaElementwise});
        }
        m_divergence->appendPoints(source.runId, QStringLiteral("gamma"), gamma);
        m_divergence->appendPoints(source.runId, QStringLiteral("beta"), beta);
    }
}

void LayerNormView::showMaps()
{
    const TrainingSnapshot* state = m_primary.valid() ? m_primary.history->stateAt(m_step) : nullptr;
    // The widest row sets the columns; a shorter one (only in damaged data) is padded with gaps.
    auto widest = [](const Rows& rows) {
        std::size_t cols = 0;
        for (const std::vector<float>& row : rows)
            cols = std::max(cols, row.size());
        return static_cast<int>(cols);
    };
    if (state == nullptr || gammas(*state, position()).empty() || widest(gammas(*state, position())) == 0) {
        const QString why = state == nullptr || gammas(*state, position()).empty()
                                ? tr("No measurement yet: LayerNorm weights appear with the first training snapshot.")
                                : tr("The measurement at step %1 has LayerNorm rows without channels.").arg(state->step);
        m_gamma->setTitle(QString());
        m_beta->setTitle(QString());
        m_gamma->clear(why);
        m_beta->clear(why);
        return;
    }
    auto matrix = [&](const Rows& rows, double center, const QString& name) {
        MatrixView::Matrix m;
        m.scale = MatrixView::Scale::Diverging;
        m.center = center;
        m.rows = static_cast<int>(rows.size());
        m.cols = widest(rows);
        m.rowTitle = tr("block");
        m.columnTitle = tr("channel");
        for (int b = 0; b < m.rows; ++b) {
            m.rowLabels.push_back(QString::number(b + 1));
            QVector<float> row(rows[static_cast<std::size_t>(b)].begin(), rows[static_cast<std::size_t>(b)].end());
            row.resize(m.cols, std::numeric_limits<float>::quiet_NaN());
            m.values += row;
        }
        m.valueName = name;
        return m;
    };
    const QString where = position() == Position::Ffn ? tr("before the FFN/MoE") : tr("before attention");
    m_gamma->setTitle(tr("γ of the LayerNorm %1, step %2 (centred on 1)").arg(where).arg(state->step));
    m_gamma->setMatrix(matrix(gammas(*state, position()), 1.0, QStringLiteral("γ")));
    m_beta->setTitle(tr("β of the LayerNorm %1, step %2 (centred on 0)").arg(where).arg(state->step));
    m_beta->setMatrix(matrix(betas(*state, position()), 0.0, QStringLiteral("β")));
}

QString LayerNormView::exportTitle() const { return tr("layernorm %1").arg(m_primary.label); }

QByteArray LayerNormView::csv() const
{
    QByteArray out = "run,step,position,parameter,block,channel,value\n";
    const QByteArray where = position() == Position::Ffn ? "ffn" : "attention";
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    for (const InsightSource* source : sources) {
        if (!source->valid())
            continue;
        const QByteArray run = csvField(source->label) + ',';
        // Eq. 9 over training, both readings.
        for (const TrainingSnapshot& state : source->history->states()) {
            const LayerNormDivergence& d = divergence(state, position());
            const QByteArray prefix = run + QByteArray::number(state.step) + ',' + where + ',';
            out += prefix + "divergence_gamma_all_pairs,,," + csvNumber(d.gammaAllPairs) + '\n';
            out += prefix + "divergence_beta_all_pairs,,," + csvNumber(d.betaAllPairs) + '\n';
            out += prefix + "divergence_gamma_elementwise,,," + csvNumber(d.gammaElementwise) + '\n';
            out += prefix + "divergence_beta_elementwise,,," + csvNumber(d.betaElementwise) + '\n';
        }
        // Gamma and beta of every block and channel at the shown step.
        const TrainingSnapshot* state = source->history->stateAt(m_step);
        if (state == nullptr)
            continue;
        const QByteArray prefix = run + QByteArray::number(state->step) + ',' + where + ',';
        for (const auto& [name, rows] : {std::pair{QByteArray("gamma"), &gammas(*state, position())},
                                         std::pair{QByteArray("beta"), &betas(*state, position())}})
            for (std::size_t b = 0; b < rows->size(); ++b)
                for (std::size_t c = 0; c < (*rows)[b].size(); ++c)
                    out += prefix + name + ',' + QByteArray::number(b + 1) + ',' + QByteArray::number(c + 1) + ','
                           + csvNumber((*rows)[b][c]) + '\n';
    }
    return out;
}

}  // namespace widelab
