#include "AttentionView.h"

#include "ColorScale.h"
#include "HeadGrid.h"
#include "MatrixView.h"
#include "PredictionBars.h"
#include "TokenFlowView.h"
#include "ViewExport.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace widelab {

using viewexport::csvField;
using viewexport::csvNumber;

namespace {

constexpr int kMinCell = 40;

MatrixView::Matrix attentionMatrix(const QVector<float>& map, const ProbeCapture& capture)
{
    MatrixView::Matrix m;
    m.rows = m.cols = capture.tokenCount();
    m.values = map;
    for (const QString& token : capture.tokens)
        m.rowLabels.push_back(visibleToken(token));
    m.columnLabels = m.rowLabels;
    m.rowTitle = QObject::tr("query");
    m.columnTitle = QObject::tr("key");
    m.valueName = QObject::tr("weight");
    double low = 0, high = 1;
    colorscale::finiteRange(map.constData(), map.size(), &low, &high);
    m.low = 0;
    m.high = std::max(1e-6, high);
    return m;
}

}  // namespace

AttentionPane::AttentionPane(QWidget* parent) : QWidget(parent)
{
    m_header = new QLabel(this);
    m_header->setWordWrap(true);
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_stack = new QStackedWidget(this);
    m_grid = new HeadGrid;
    m_grid->setAccessibleName(tr("Attention maps of every head"));
    m_gridArea = new QScrollArea;
    m_gridArea->setWidget(m_grid);
    m_gridArea->setWidgetResizable(true);
    m_gridArea->setFrameShape(QFrame::NoFrame);
    m_matrix = new MatrixView;
    m_matrix->setSquareCells(true);
    m_matrix->setAccessibleName(tr("Attention map"));
    m_tokens = new TokenFlowView;
    m_tokens->setAccessibleName(tr("Where each token looks"));
    m_stack->addWidget(m_gridArea);
    m_stack->addWidget(m_matrix);
    m_stack->addWidget(m_tokens);
    m_prediction = new PredictionBars(this);
    m_prediction->setAccessibleName(tr("Prediction for the probe"));

    auto* body = new QHBoxLayout;
    body->setContentsMargins(0, 0, 0, 0);
    body->addWidget(m_stack, 1);
    body->addWidget(m_prediction, 0);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_header);
    layout->addLayout(body, 1);
    connect(m_grid, &HeadGrid::headClicked, this, &AttentionPane::headClicked);
    connect(m_matrix, &MatrixView::cellClicked, this, [this] {
        if (m_stack->currentWidget() == m_matrix)
            Q_EMIT headClicked(-1);  // back to the grid
    });
}

void AttentionPane::show(const ProbeCapture* capture, const QString& runLabel, int layer, Mode mode, int head,
                         int cellSize, bool perHead, const QString& why)
{
    if (capture != nullptr)
        m_capture = *capture;
    else
        m_capture.reset();
    capture = this->capture();
    // A capture with nothing to draw explains itself instead (it may come from a damaged file).
    QString nothing = capture == nullptr ? why : QString();
    if (capture != nullptr) {
        const int n = capture->tokenCount();
        const qsizetype cells = static_cast<qsizetype>(n) * n;
        bool anyMap = false;
        for (const auto& heads : capture->attention)
            for (const QVector<float>& map : heads)
                anyMap = anyMap || map.size() == cells;
        if (n == 0)
            nothing = tr("The probe at step %1 has no tokens: there is no attention to draw.").arg(capture->step);
        else if (capture->layers() == 0)
            nothing = tr("The capture at step %1 holds no attention maps.").arg(capture->step);
        else if (!anyMap)
            nothing = tr("The attention maps at step %1 do not match its %2 tokens: nothing to draw.")
                          .arg(capture->step)
                          .arg(n);
    }
    if (!nothing.isEmpty() || capture == nullptr) {
        m_layer = 0;
        m_header->setText(QStringLiteral("<b>%1</b>").arg(runLabel.toHtmlEscaped()));
        m_grid->setCapture(nullptr, 0);
        m_matrix->setTitle(QString());
        m_matrix->clear(nothing);
        m_tokens->setCapture(nullptr, 0);
        m_prediction->setPrediction({}, {}, QString());
        m_stack->setCurrentWidget(m_matrix);
        return;
    }
    m_layer = std::clamp(layer, 0, capture->layers() - 1);
    head = std::clamp(head, 0, std::max(0, capture->heads() - 1));
    QString where = tr("step %1 · layer %2 of %3 · %4 heads · %5 tokens")
                        .arg(capture->step)
                        .arg(m_layer + 1)
                        .arg(capture->layers())
                        .arg(capture->heads())
                        .arg(capture->tokenCount());
    m_header->setText(QStringLiteral("<b>%1</b> · %2").arg(runLabel.toHtmlEscaped(), where));
    switch (mode) {
    case Mode::Grid:
        m_grid->setCellSize(cellSize);
        m_grid->setScalePerHead(perHead);
        m_grid->setCapture(capture, m_layer);
        m_stack->setCurrentWidget(m_gridArea);
        break;
    case Mode::Head:
        m_matrix->setTitle(tr("Head %1 (click to go back to every head)").arg(head + 1));
        m_matrix->setMatrix(attentionMatrix(capture->attention[m_layer].value(head), *capture));
        m_stack->setCurrentWidget(m_matrix);
        break;
    case Mode::Mean:
        m_matrix->setTitle(tr("Mean over %1 heads").arg(capture->heads()));
        m_matrix->setMatrix(attentionMatrix(capture->meanOverHeads(m_layer), *capture));
        m_stack->setCurrentWidget(m_matrix);
        break;
    case Mode::Tokens:
        m_tokens->setCapture(capture, m_layer);
        m_stack->setCurrentWidget(m_tokens);
        break;
    }
    const bool classes = capture->predictionLabels.size() < 20 || capture->prediction.size() < 20;
    m_prediction->setPrediction(capture->prediction, capture->predictionLabels,
                                classes ? tr("Prediction") : tr("Next token"), capture->trueLabel);
}

AttentionView::AttentionView(QWidget* parent) : InsightPage(parent)
{
    m_layer = new QSpinBox(this);
    m_layer->setRange(1, 1);
    m_layer->setAccessibleName(tr("Layer"));
    m_layer->setToolTip(tr("The layer whose heads are shown"));
    m_mode = new QComboBox(this);
    m_mode->addItem(tr("Every head"), int(AttentionPane::Mode::Grid));
    m_mode->addItem(tr("One head"), int(AttentionPane::Mode::Head));
    m_mode->addItem(tr("Mean over heads"), int(AttentionPane::Mode::Mean));
    m_mode->addItem(tr("Per token"), int(AttentionPane::Mode::Tokens));
    m_mode->setAccessibleName(tr("What to show"));
    m_mode->setToolTip(tr("Every head's map in a grid, one head enlarged (click a map), the mean over heads, or where "
                          "each token looks (hover a token)"));
    m_head = new QSpinBox(this);
    m_head->setRange(1, 1);
    m_head->setAccessibleName(tr("Head"));
    m_zoom = new QSlider(Qt::Horizontal, this);
    m_zoom->setRange(kMinCell, 600);
    m_zoom->setValue(140);
    m_zoom->setAccessibleName(tr("Map size"));
    m_zoom->setToolTip(tr("Size of each head's map; labels appear when a token has room"));
    m_fit = new QPushButton(tr("Fit"), this);
    m_fit->setToolTip(tr("The largest maps at which every head is in view"));
    m_scale = new QComboBox(this);
    m_scale->addItem(tr("One colour range for the layer"));
    m_scale->addItem(tr("Each head its own range"));
    m_scale->setAccessibleName(tr("Colour range of the maps"));
    m_scale->setToolTip(tr("One range: heads compare by strength. Each head its own: every head's pattern shows, "
                           "however weak its weights."));
    m_legend = new QLabel(this);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("&Layer"), this));
    static_cast<QLabel*>(controls->itemAt(0)->widget())->setBuddy(m_layer);
    controls->addWidget(m_layer);
    controls->addWidget(m_mode);
    auto* headLabel = new QLabel(tr("&Head"), this);
    headLabel->setBuddy(m_head);
    controls->addWidget(headLabel);
    controls->addWidget(m_head);
    auto* zoomLabel = new QLabel(tr("&Zoom"), this);
    zoomLabel->setBuddy(m_zoom);
    controls->addWidget(zoomLabel);
    controls->addWidget(m_zoom, 1);
    controls->addWidget(m_fit);
    controls->addWidget(m_scale);
    controls->addWidget(m_legend);

    m_split = new QSplitter(Qt::Horizontal, this);
    for (auto*& pane : m_panes) {
        pane = new AttentionPane(m_split);
        m_split->addWidget(pane);
        connect(pane, &AttentionPane::headClicked, this, [this](int head) {
            if (head < 0)
                setMode(AttentionPane::Mode::Grid);
            else
                showHead(head);
        });
    }
    m_panes[1]->hide();
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(m_split, 1);

    connect(m_layer, &QSpinBox::valueChanged, this, &AttentionView::refresh);
    connect(m_head, &QSpinBox::valueChanged, this, &AttentionView::refresh);
    connect(m_mode, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
    connect(m_zoom, &QSlider::valueChanged, this, [this] {
        m_fitting = false;  // the user's size from now on
        refresh();
    });
    connect(m_fit, &QPushButton::clicked, this, &AttentionView::fitCells);
    connect(m_scale, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
}

void AttentionView::setLayer(int layer) { m_layer->setValue(layer + 1); }
int AttentionView::layer() const { return m_layer->value() - 1; }
void AttentionView::setMode(AttentionPane::Mode mode) { m_mode->setCurrentIndex(m_mode->findData(int(mode))); }
AttentionPane::Mode AttentionView::mode() const { return AttentionPane::Mode(m_mode->currentData().toInt()); }
int AttentionView::head() const { return m_head->value() - 1; }
void AttentionView::setCellSize(int pixels)
{
    m_fitting = false;
    if (pixels == m_zoom->value())
        refresh();
    else
        m_zoom->setValue(pixels);  // refreshes
}

void AttentionView::showHead(int head)
{
    m_head->setValue(head + 1);
    setMode(AttentionPane::Mode::Head);
}

void AttentionView::setScalePerHead(bool perHead) { m_scale->setCurrentIndex(perHead ? 1 : 0); }

void AttentionView::fitCells()
{
    m_fitting = true;
    if (mode() != AttentionPane::Mode::Grid)
        setMode(AttentionPane::Mode::Grid);  // refreshes
    else
        refresh();
}

void AttentionView::refresh()
{
    const QString nothing = tr("No probe captured yet. Training probes its texts with every validation; "
                               "add a text with Add probe…");
    const InsightSource* sources[2] = {&m_primary, &m_comparison};
    const QString text = probeText();  // the same for both runs
    int layers = 1, heads = 1;
    for (int i = 0; i < 2; ++i) {
        const InsightSource& source = *sources[i];
        AttentionPane* pane = m_panes[i];
        pane->setVisible(i == 0 || source.valid());
        if (!source.valid()) {
            if (i == 0)
                pane->show(nullptr, QString(), 0, mode(), 0, m_zoom->value(), false, tr("No run to show."));
            continue;
        }
        const ProbeCapture* capture = source.history->captureAt(text, m_step);
        QString why = nothing;
        if (capture == nullptr && !source.history->captures(text).isEmpty())
            why = tr("The first capture of this text is after step %1.").arg(m_step);
        else if (capture == nullptr && !text.isEmpty())
            why = tr("%1 has no capture of \"%2\" yet; Add probe… inspects it.").arg(source.label, text);
        const bool perHead = m_scale->currentIndex() == 1;
        pane->show(capture, source.label, layer(), mode(), head(), m_zoom->value(), perHead, why);
        if (m_fitting && capture != nullptr && mode() == AttentionPane::Mode::Grid) {
            // Each pane's maps as large as lets all its heads be seen at once.
            const int cell = pane->grid()->fittingCellSize(pane->gridArea()->viewport()->size(), kMinCell);
            pane->grid()->setCellSize(cell);
            if (i == 0) {
                const QSignalBlocker block(m_zoom);
                m_zoom->setValue(cell);
            }
        }
        if (i == 0 && capture != nullptr) {
            layers = capture->layers();
            heads = capture->heads();
            m_legend->setText(perHead ? tr("0 … each head's largest weight")
                                      : tr("0 … %1").arg(QString::number(pane->grid()->maxWeight(), 'f', 2)));
        }
    }
    const QSignalBlocker layerBlock(m_layer), headBlock(m_head);
    m_layer->setRange(1, std::max(1, layers));
    m_head->setRange(1, std::max(1, heads));
    m_head->setEnabled(mode() == AttentionPane::Mode::Head);
    m_zoom->setEnabled(mode() == AttentionPane::Mode::Grid);
}

void AttentionView::resizeEvent(QResizeEvent* event)
{
    InsightPage::resizeEvent(event);
    if (m_fitting)  // after the layout has given the panes their new size
        QTimer::singleShot(0, this, &AttentionView::refresh);
}

QString AttentionView::exportTitle() const
{
    return tr("attention %1 layer %2").arg(m_primary.label).arg(layer() + 1);
}

QWidget* AttentionView::exportArea() { return m_split; }

QByteArray AttentionView::csv() const
{
    QByteArray out = "run,step,probe,layer,head,query_index,query,key_index,key,weight\n";
    for (const AttentionPane* pane : m_panes) {
        const InsightSource& source = pane == m_panes[0] ? m_primary : m_comparison;
        const ProbeCapture* c = source.valid() ? pane->capture() : nullptr;
        if (c == nullptr)
            continue;
        const QByteArray prefix = csvField(source.label) + ',' + QByteArray::number(c->step) + ',' + csvField(c->text) + ',';
        const int n = c->tokenCount();
        for (int l = 0; l < c->layers(); ++l)
            for (int h = 0; h < c->attention[l].size(); ++h)
                for (int q = 0; q < n; ++q)
                    for (int k = 0; k < n; ++k)
                        out += prefix + QByteArray::number(l + 1) + ',' + QByteArray::number(h + 1) + ','
                               + QByteArray::number(q) + ',' + csvField(c->tokens[q]) + ',' + QByteArray::number(k)
                               + ',' + csvField(c->tokens[k]) + ',' + csvNumber(c->weight(l, h, q, k)) + '\n';
    }
    return out;
}

void AttentionView::keyPressEvent(QKeyEvent* event)
{
    if (event->key() == Qt::Key_Escape && mode() != AttentionPane::Mode::Grid) {
        setMode(AttentionPane::Mode::Grid);
        return;
    }
    InsightPage::keyPressEvent(event);
}

}  // namespace widelab
