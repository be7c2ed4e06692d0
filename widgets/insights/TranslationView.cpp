#include "TranslationView.h"

#include "HeadLabel.h"
#include "MatrixView.h"
#include "common/Elements.h"
#include "common/ViewExport.h"
#include "vocab/ByteText.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

// A translation as shown: its bytes legible, an empty one said to be empty.
QString translationText(const ProbeResult& probe)
{
    return probe.translation.empty() ? QObject::tr("(an empty translation)")
                                     : QString::fromStdString(legibleBytes(probe.translation));
}

// The decoder's paths (for the heads' names), from the configuration; 1 when not known.
int decoderPaths(const InsightSource& source)
{
    const auto& sketch = source.history->architecture();
    return sketch ? std::max(1, sketch->decoderPaths) : 1;
}

}  // namespace

TranslationView::TranslationView(QWidget* parent) : InsightPage(parent)
{
    m_empty = new QLabel(this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_body = new QWidget(this);

    m_source = new QLabel(m_body);
    m_source->setWordWrap(true);
    m_source->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_current = new QLabel(m_body);
    m_current->setWordWrap(true);
    m_current->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_current->setAccessibleName(tr("Translation at the shown step"));
    QFont large = m_current->font();
    large.setPointSizeF(large.pointSizeF() * 1.25);
    large.setBold(true);
    m_current->setFont(large);
    m_compared = new QLabel(m_body);
    m_compared->setWordWrap(true);
    m_compared->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_block = new QComboBox(m_body);
    m_block->setAccessibleName(tr("Decoder block"));
    m_head = new QComboBox(m_body);
    m_head->setAccessibleName(tr("Head"));
    m_head->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    auto* controls = new QHBoxLayout;
    controls->setContentsMargins(0, 0, 0, 0);
    auto* blockLabel = new QLabel(tr("Cross-attention of decoder &block"), m_body);
    blockLabel->setBuddy(m_block);
    auto* headLabel = new QLabel(tr("h&ead"), m_body);
    headLabel->setBuddy(m_head);
    controls->addWidget(blockLabel);
    controls->addWidget(m_block);
    controls->addWidget(headLabel);
    controls->addWidget(m_head);
    controls->addStretch(1);

    m_map = new MatrixView(m_body);
    m_map->setAccessibleName(tr("Cross-attention: target tokens against source tokens"));
    m_map->setSquareCells(true);
    m_history = new QListWidget(m_body);
    m_history->setAccessibleName(tr("The probe's translation at each step"));
    m_history->setWordWrap(true);
    m_history->setSelectionMode(QAbstractItemView::NoSelection);
    // Wrapped at spaces; an early model's run of punctuation is cut at the edge, never scrolled sideways.
    m_history->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* historyBox = new QWidget(m_body);
    auto* historyLayout = new QVBoxLayout(historyBox);
    historyLayout->setContentsMargins(0, 0, 0, 0);
    historyLayout->addWidget(new QLabel(tr("Its translation over training"), historyBox));
    historyLayout->addWidget(m_history, 1);
    auto* split = new QSplitter(Qt::Horizontal, m_body);
    split->setChildrenCollapsible(false);
    split->addWidget(m_map);
    split->addWidget(historyBox);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    auto* bodyLayout = new QVBoxLayout(m_body);
    bodyLayout->setContentsMargins(0, 0, 0, 0);
    bodyLayout->addWidget(m_source);
    bodyLayout->addWidget(m_current);
    bodyLayout->addWidget(m_compared);
    bodyLayout->addLayout(controls);
    bodyLayout->addWidget(split, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_empty);
    layout->addWidget(m_body, 1);

    connect(m_block, &QComboBox::currentIndexChanged, this, &TranslationView::refresh);
    connect(m_head, &QComboBox::currentIndexChanged, this, &TranslationView::refresh);
}

void TranslationView::setBlock(int block) { m_block->setCurrentIndex(m_block->findData(block)); }
void TranslationView::setHead(int head) { m_head->setCurrentIndex(m_head->findData(head)); }

QStringList TranslationView::writtenTokens(const ProbeResult& probe)
{
    QStringList written;
    for (std::size_t t = 1; t < probe.targetTokens.size(); ++t)
        written << QString::fromStdString(probe.targetTokens[t]);
    if (!probe.targetTokens.empty()) {
        const auto top = std::max_element(probe.prediction.begin(), probe.prediction.end());
        const std::string label = valueAt(probe.predictionLabels, top - probe.prediction.begin(), std::string("?"));
        written << QString::fromStdString(label);
    }
    return written;
}

QVector<float> TranslationView::crossMap(const ProbeResult& probe, int block, int head)
{
    if (block < 0 || block >= sizeOf(probe.crossAttention))
        return {};
    const auto& heads = probe.crossAttention[static_cast<std::size_t>(block)];
    const std::size_t rows = probe.targetTokens.size(), cols = probe.tokens.size();
    if (head >= sizeOf(heads))
        return {};
    QVector<float> map(static_cast<qsizetype>(rows * cols), 0.0f);
    const std::size_t first = head < 0 ? 0 : static_cast<std::size_t>(head);
    const std::size_t last = head < 0 ? heads.size() : first + 1;
    for (std::size_t h = first; h < last; ++h) {
        if (heads[h].size() != rows)
            return {};
        for (std::size_t t = 0; t < rows; ++t) {
            if (heads[h][t].size() != cols)
                return {};
            for (std::size_t s = 0; s < cols; ++s)
                map[static_cast<qsizetype>(t * cols + s)] += heads[h][t][s] / static_cast<float>(last - first);
        }
    }
    return map;
}

const ProbeResult* TranslationView::shownCapture(const InsightSource& source) const
{
    return source.valid() ? source.history->captureAt(probeText(), m_step) : nullptr;
}

void TranslationView::refresh()
{
    const ProbeResult* shown = shownCapture(m_primary);
    const auto& sketch = m_primary.valid() ? m_primary.history->architecture() : std::nullopt;
    const bool translates = sketch ? sketch->headKind == QLatin1String("translation")
                                   : shown != nullptr && !shown->targetTokens.empty();
    const bool ready = translates && shown != nullptr;
    m_empty->setVisible(!ready);
    m_body->setVisible(ready);
    if (!ready) {
        m_empty->setText(!m_primary.valid() ? tr("No run to show.")
                         : !translates
                             ? tr("This view shows a translation model's decoder (model.head \"translation\"): the "
                                  "probe's translation as training goes on and what each target token is written "
                                  "from. This run is not a translation model; the translation-bible preset is one.")
                             : tr("No probe yet: the probe is translated at every validation, and %1 is translated "
                                  "with it.").arg(probeText().isEmpty() ? tr("a validation sentence")
                                                                        : QStringLiteral("“%1”").arg(probeText())));
        return;
    }
    m_source->setText(tr("Source (step %1): %2").arg(shown->step).arg(probeTextOf(*shown)));
    m_current->setText(translationText(*shown));
    const ProbeResult* compared = shownCapture(m_comparison);
    m_compared->setVisible(compared != nullptr);
    if (compared != nullptr)
        m_compared->setText(tr("%1 at step %2: %3").arg(m_comparison.label).arg(compared->step).arg(translationText(*compared)));
    showHistory(*shown);
    showMap(*shown);
}

void TranslationView::showHistory(const ProbeResult& shown)
{
    m_history->clear();
    for (const ProbeResult& capture : m_primary.history->captures(probeText())) {
        if (capture.step > shown.step)
            break;  // replaying: what the run had translated by the shown step
        auto* item = new QListWidgetItem(tr("step %1 · %2").arg(capture.step).arg(translationText(capture)), m_history);
        if (capture.step == shown.step) {
            QFont bold = item->font();
            bold.setBold(true);
            item->setFont(bold);
        }
    }
    m_history->scrollToBottom();
}

void TranslationView::showMap(const ProbeResult& shown)
{
    const int blocks = sizeOf(shown.crossAttention);
    if (m_block->count() != blocks) {
        const QSignalBlocker block(m_block);
        const int current = std::max(0, m_block->currentIndex());
        m_block->clear();
        for (int b = 0; b < blocks; ++b)
            m_block->addItem(QString::number(b + 1), b);
        m_block->setCurrentIndex(std::min(current, blocks - 1));
    }
    const int heads = blocks > 0 ? sizeOf(shown.crossAttention.front()) : 0;
    if (m_head->count() != heads + 1) {
        const QSignalBlocker block(m_head);
        const int current = m_head->currentData().isValid() ? m_head->currentData().toInt() : -1;
        m_head->clear();
        m_head->addItem(tr("mean over heads"), -1);
        const int paths = decoderPaths(m_primary);
        for (int h = 0; h < heads; ++h)
            m_head->addItem(headLabel(h, heads, paths), h);
        m_head->setCurrentIndex(std::max(0, m_head->findData(current)));
    }
    const int block = m_block->currentData().toInt(), head = m_head->currentData().toInt();
    const QVector<float> values = crossMap(shown, block, head);
    if (values.isEmpty()) {
        m_map->clear(blocks == 0 ? tr("This probe was recorded without the decoder's cross-attention (a run from "
                                      "before this view): its translations are on the right.")
                                 : tr("The cross-attention of this step cannot be drawn (its maps do not match its "
                                      "tokens)."));
        return;
    }
    MatrixView::Matrix m;
    m.rows = sizeOf(shown.targetTokens);
    m.cols = sizeOf(shown.tokens);
    m.values = values;
    for (const QString& token : writtenTokens(shown))
        m.rowLabels << visibleToken(token);
    for (const QString& token : probeTokens(shown))
        m.columnLabels << visibleToken(token);
    m.rowTitle = tr("writing");
    m.columnTitle = tr("source");
    m.low = 0;
    m.high = 1;
    m.valueName = tr("weight");
    m.decimals = 2;
    m_map->setTitle(tr("Decoder block %1 · %2").arg(block + 1).arg(m_head->currentText()));
    m_map->setMatrix(std::move(m));
}

QString TranslationView::exportTitle() const { return tr("translation %1").arg(m_primary.label); }

QByteArray TranslationView::csv() const
{
    QByteArray out = "run,step,translation,block,head,target_position,writing,source_position,source_token,weight\n";
    for (const InsightSource* source : {&m_primary, &m_comparison}) {
        const ProbeResult* capture = shownCapture(*source);
        if (capture == nullptr)
            continue;
        const QStringList written = writtenTokens(*capture), read = probeTokens(*capture);
        const QByteArray prefix = csvField(source->label) + ',' + QByteArray::number(capture->step) + ','
                                  + csvField(translationText(*capture)) + ',';
        if (capture->crossAttention.empty())  // recorded without it: the translation alone
            out += prefix + ",,,,,,\n";
        for (int b = 0; b < sizeOf(capture->crossAttention); ++b) {
            const auto& heads = capture->crossAttention[static_cast<std::size_t>(b)];
            for (int h = 0; h < sizeOf(heads); ++h) {
                const QVector<float> map = crossMap(*capture, b, h);
                for (int t = 0; t < written.size() && !map.isEmpty(); ++t)
                    for (int s = 0; s < read.size(); ++s)
                        out += prefix + QByteArray::number(b + 1) + ',' + QByteArray::number(h + 1) + ','
                               + QByteArray::number(t + 1) + ',' + csvField(written[t]) + ','
                               + QByteArray::number(s + 1) + ',' + csvField(read[s]) + ','
                               + csvNumber(map[t * read.size() + s]) + '\n';
            }
        }
    }
    return out;
}

}  // namespace widelab
