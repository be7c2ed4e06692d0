#include "AttentionView.h"

#include "ColorScale.h"
#include "HeadGrid.h"
#include "HeadLabel.h"
#include "MatrixView.h"
#include "ModelViewFigure.h"
#include "PatchAttentionGrid.h"
#include "PredictionBars.h"
#include "TokenFlowView.h"
#include "common/ComboWidth.h"
#include "common/ViewExport.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
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

// The head spin box names heads as everywhere else: "path 2 · head 3".
class HeadSpinBox : public QSpinBox {
public:
    using QSpinBox::QSpinBox;

    void setPaths(int paths)
    {
        if (std::max(1, paths) == m_paths)
            return;  // the text being typed stays
        m_paths = std::max(1, paths);
        lineEdit()->setText(textFromValue(value()));
        updateGeometry();
    }

protected:
    QString textFromValue(int value) const override { return headLabel(value - 1, maximum(), m_paths); }

    // "7", "head 7", "path 2 head 3", "p2 h3".
    int valueFromText(const QString& text) const override
    {
        const std::optional<int> value = parse(text);
        return value ? *value : this->value();
    }

    QValidator::State validate(QString& text, int&) const override
    {
        const std::optional<int> value = parse(text);
        return value && *value >= minimum() && *value <= maximum() ? QValidator::Acceptable
                                                                   : QValidator::Intermediate;
    }

private:
    std::optional<int> parse(const QString& text) const
    {
        static const QRegularExpression number(QStringLiteral("\\d+"));
        QVector<int> numbers;
        for (auto it = number.globalMatch(text); it.hasNext();)
            numbers.push_back(it.next().captured().toInt());
        const int perPath = headsPerPath(maximum(), m_paths);
        if (numbers.size() == 2 && perPath < maximum())
            return (numbers[0] - 1) * perPath + numbers[1];
        if (numbers.size() == 1)
            return numbers[0];
        return std::nullopt;
    }

    int m_paths = 1;
};

namespace {

constexpr int kMinCell = 40;
constexpr int kMinModelCell = 16;

// An exported grid: maps with room for a label per token where that stays
// reasonable, whole paths to a row, else about as many columns as rows; the
// whole at most about kMaxExportSide pixels a side (twice that in a PNG).
constexpr int kMaxExportSide = 2600;

int exportCellSize(int tokens, int columns, int rows)
{
    const int fitting = kMaxExportSide / std::max(1, std::max(columns, rows)) - 24;
    return std::max(96, std::min(std::clamp(tokens * 14, 120, 420), fitting));
}

int exportModelCellSize(int tokens, int layers, int heads)
{
    const int fitting = kMaxExportSide / std::max(1, std::max(layers, heads)) - 8;
    return std::max(32, std::min(std::clamp(tokens * 6, 60, 160), fitting));
}

int exportColumns(int heads, int paths)
{
    const int perPath = headsPerPath(heads, paths);
    if (perPath < heads)
        return perPath;
    int columns = 1;
    while (columns * columns < heads)
        ++columns;
    return columns;
}

// A model's paths do not change over a run: a capture older than the first
// snapshot takes them from the first.
int runPaths(const InsightHistory& history, qint64 step)
{
    const TrainingSnapshot* state = history.stateAt(step);
    return attentionPaths(state != nullptr || history.states().isEmpty() ? state : &history.states().front());
}

QString capitalized(QString text)
{
    if (!text.isEmpty())
        text[0] = text[0].toUpper();
    return text;
}

MatrixView::Matrix attentionMatrix(const QVector<float>& map, const ProbeResult& capture)
{
    MatrixView::Matrix m;
    m.rows = m.cols = probeTokenCount(capture);
    m.values = map;
    for (const QString& token : probeTokens(capture))
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
    m_patches = new PatchAttentionGrid;
    m_patches->setAccessibleName(tr("Attention of every head over the probe image"));
    m_patchArea = new QScrollArea;
    m_patchArea->setWidget(m_patches);
    m_patchArea->setWidgetResizable(true);
    m_patchArea->setFrameShape(QFrame::NoFrame);
    m_matrix = new MatrixView;
    m_matrix->setSquareCells(true);
    m_matrix->setAccessibleName(tr("Attention map"));
    m_tokens = new TokenFlowView;
    m_tokens->setAccessibleName(tr("Where each token looks"));
    m_stack->addWidget(m_gridArea);
    m_stack->addWidget(m_matrix);
    m_stack->addWidget(m_tokens);
    m_model = new ModelViewFigure;
    m_model->setAccessibleName(tr("Attention maps of every head of every layer"));
    m_modelArea = new QScrollArea;
    m_modelArea->setWidget(m_model);
    m_modelArea->setWidgetResizable(false);
    m_modelArea->setFrameShape(QFrame::NoFrame);
    m_stack->addWidget(m_modelArea);
    m_stack->addWidget(m_patchArea);
    m_gridArea->viewport()->installEventFilter(this);
    m_patchArea->viewport()->installEventFilter(this);
    m_modelArea->viewport()->installEventFilter(this);
    m_prediction = new PredictionBars(this);
    m_prediction->setAccessibleName(tr("Prediction for the probe"));

    m_body = new QBoxLayout(QBoxLayout::LeftToRight);
    m_body->setContentsMargins(0, 0, 0, 0);
    m_body->addWidget(m_stack, 1);
    m_body->addWidget(m_prediction, 0);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_header);
    layout->addLayout(m_body, 1);
    connect(m_grid, &HeadGrid::headClicked, this, &AttentionPane::headClicked);
    connect(m_patches, &PatchTileGrid::tileClicked, this, [this](int tile) {
        if (m_patches->showsLayers())
            Q_EMIT layerClicked(tile);
        else
            Q_EMIT headClicked(tile);
    });
    connect(m_model, &ModelViewFigure::headClicked, this, &AttentionPane::layerHeadClicked);
    connect(m_matrix, &MatrixView::cellClicked, this, [this] {
        if (m_stack->currentWidget() == m_matrix)
            Q_EMIT headClicked(-1);  // back to the grid
    });
}

void AttentionPane::show(const ProbeResult* capture, const QString& runLabel, int layer, Mode mode, int head,
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
        const int n = probeTokenCount(*capture);
        const qsizetype cells = static_cast<qsizetype>(n) * n;
        bool anyMap = false;
        for (int layer = 0; layer < probeLayers(*capture); ++layer)
            for (const QVector<float>& map : layerMaps(*capture, layer))
                anyMap = anyMap || map.size() == cells;
        if (n == 0)
            nothing = tr("The probe at step %1 has no tokens: there is no attention to draw.").arg(capture->step);
        else if (probeLayers(*capture) == 0)
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
        m_patches->setCapture(nullptr, 0);
        m_matrix->setTitle(QString());
        m_matrix->clear(nothing);
        m_tokens->setCapture(nullptr, 0);
        m_model->setCapture(nullptr, 1, false);
        m_prediction->setPrediction({}, {}, QString());
        m_stack->setCurrentWidget(m_matrix);
        arrange();
        return;
    }
    m_layer = std::clamp(layer, 0, probeLayers(*capture) - 1);
    head = std::clamp(head, 0, std::max(0, probeHeads(*capture) - 1));
    const int heads = probeHeads(*capture);
    const int perPath = headsPerPath(heads, m_paths);
    const QString headCount = perPath < heads ? tr("%1 paths × %2 heads").arg(heads / perPath).arg(perPath)
                                              : tr("%1 heads").arg(heads);
    // A picture's mean over heads is drawn for every layer at once, as the model view is.
    const bool image = probeHasImage(*capture);
    const bool imageMeans = mode == Mode::Mean && image;
    QString where = mode == Mode::Model || imageMeans ? tr("step %1 · %2 layers · %3 · %4 tokens")
                                              .arg(capture->step)
                                              .arg(probeLayers(*capture))
                                              .arg(headCount)
                                              .arg(probeTokenCount(*capture))
                                        : tr("step %1 · layer %2 of %3 · %4 · %5 tokens")
                                              .arg(capture->step)
                                              .arg(m_layer + 1)
                                              .arg(probeLayers(*capture))
                                              .arg(headCount)
                                              .arg(probeTokenCount(*capture));
    if (image)
        where += tr(" · %1 × %2 patches").arg(capture->image.gridRows).arg(capture->image.gridCols);
    if ((mode == Mode::Grid || imageMeans) && image) {
        m_patches->setScalePerHead(perHead);
        m_patches->setPaths(m_paths);
        m_patches->setCaptions(m_captions);
        if (imageMeans)
            m_patches->setLayerMeans(capture);
        else
            m_patches->setCapture(capture, m_layer);
        if (m_patches->heads() > 0)  // an image grid says what it draws
            where += QStringLiteral(" · <b>%1%2</b>")
                         .arg(patchSourceText(m_patches->source()), imageMeans ? tr(", mean over heads") : QString());
    }
    m_header->setText(QStringLiteral("<b>%1</b> · %2").arg(runLabel.toHtmlEscaped(), where));
    switch (mode) {
    case Mode::Grid:
        if (image && m_patches->heads() > 0) {
            m_patches->setCellSize(cellSize);
            m_stack->setCurrentWidget(m_patchArea);
            break;
        }
        m_grid->setCellSize(cellSize);
        m_grid->setScalePerHead(perHead);
        m_grid->setPaths(m_paths);
        m_grid->setCaptions(m_captions);
        m_grid->setCapture(capture, m_layer);
        m_stack->setCurrentWidget(m_gridArea);
        break;
    case Mode::Model:
        m_model->setCaptions(m_captions);
        m_model->setCapture(capture, m_paths, perHead);
        m_model->setCellSize(cellSize / 2);
        m_stack->setCurrentWidget(m_modelArea);
        break;
    case Mode::Head: {
        const QString caption = headCaptionText(m_captions, head, heads, m_paths);
        m_matrix->setTitle(tr("%1 (click to go back to every head)")
                               .arg(capitalized(headLabel(head, heads, m_paths))
                                    + (caption.isEmpty() ? QString() : QStringLiteral(" · ") + caption)));
        m_matrix->setMatrix(attentionMatrix(headMap(*capture, m_layer, head), *capture));
        m_stack->setCurrentWidget(m_matrix);
        break;
    }
    case Mode::Mean:
        if (imageMeans && m_patches->heads() > 0) {
            m_patches->setCellSize(cellSize);
            m_stack->setCurrentWidget(m_patchArea);
            break;
        }
        m_matrix->setTitle(tr("Mean over %1 heads").arg(probeHeads(*capture)));
        m_matrix->setMatrix(attentionMatrix(meanOverHeads(*capture, m_layer), *capture));
        m_stack->setCurrentWidget(m_matrix);
        break;
    case Mode::Tokens:
        m_tokens->setCapture(capture, m_layer, m_paths);
        m_stack->setCurrentWidget(m_tokens);
        break;
    }
    const bool classes = capture->predictionLabels.size() < 20 || capture->prediction.size() < 20;
    // A translation model's probe: its greedy translation, and the token it would write next.
    const QString title = !capture->translation.empty()
                              ? tr("Translation: %1 · next token").arg(QString::fromStdString(capture->translation))
                          : classes           ? tr("Prediction")
                          : m_hidesLastToken ? tr("Hidden last token")
                                             : tr("Next token");
    m_prediction->setPrediction(QVector<float>(capture->prediction.begin(), capture->prediction.end()),
                                probeLabels(*capture), title, static_cast<int>(capture->label));
    arrange();
    if (m_fitting)
        fit();
}

bool AttentionPane::showsPatches() const { return m_stack->currentWidget() == m_patchArea; }

// A pane narrower than it is tall (two runs side by side) gives the maps its
// whole width and the prediction the few lines it needs below them.
void AttentionPane::arrange()
{
    const bool tall = width() < height() * 1.3;
    m_body->setDirection(tall ? QBoxLayout::TopToBottom : QBoxLayout::LeftToRight);
    const int line = QFontMetrics(m_prediction->font()).height() + 6;
    const int needed = 8 + line * (static_cast<int>(m_prediction->shown().size()) + 1);
    m_prediction->setMaximumHeight(tall ? needed : QWIDGETSIZE_MAX);
}

void AttentionPane::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    arrange();
}

void AttentionPane::fit()
{
    if (m_inFit || capture() == nullptr)
        return;
    m_inFit = true;
    if (m_stack->currentWidget() == m_gridArea && m_grid->heads() > 0) {
        const int cell = m_grid->fittingCellSize(m_gridArea->viewport()->size(), kMinCell);
        if (cell != m_grid->cellSize())
            m_grid->setCellSize(cell);
        Q_EMIT fitted(cell);
    } else if (m_stack->currentWidget() == m_patchArea && m_patches->heads() > 0) {
        const int cell = m_patches->fittingCellSize(m_patchArea->viewport()->size(), kMinCell);
        if (cell != m_patches->cellSize())
            m_patches->setCellSize(cell);
        Q_EMIT fitted(cell);
    } else if (m_stack->currentWidget() == m_modelArea && m_model->layers() > 0) {
        const int cell = m_model->fittingCellSize(m_modelArea->viewport()->size(), kMinModelCell);
        if (cell != m_model->cellSize())
            m_model->setCellSize(cell);
        Q_EMIT fitted(cell * 2);  // the zoom slider sizes the grid's maps; the model view's are half that
    }
    m_inFit = false;
}

// A pane that changes size (a window resized, the comparison run shown beside
// it, a splitter dragged) fits its maps again once the scroll area has its size.
bool AttentionPane::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::Resize && m_fitting
        && (watched == m_gridArea->viewport() || watched == m_modelArea->viewport()
            || watched == m_patchArea->viewport()))
        fit();
    return QWidget::eventFilter(watched, event);
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
    m_mode->addItem(tr("Every layer (model view)"), int(AttentionPane::Mode::Model));
    m_mode->setAccessibleName(tr("What to show"));
    m_mode->setToolTip(tr("Every head's map in a grid, one head enlarged (click a map), the mean over heads, where "
                          "each token looks (hover a token), or every head of every layer in one figure"));
    m_head = new HeadSpinBox(this);
    m_head->setRange(1, 1);
    m_head->setAccessibleName(tr("Head"));
    m_head->setKeyboardTracking(false);  // "p2 h3" passes through other heads while typed
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
    // The row fits a laptop's Insights page (about 740 pixels at 1366x768 with the default docks):
    // the two boxes give up width before the row would push the page past its view, and their
    // lists still show every choice in full.
    letShrink({m_mode, m_scale}, 10);
    m_kinds = new QLabel(this);
    m_kinds->setWordWrap(true);
    m_kinds->setAccessibleName(tr("What the maps are"));
    m_kinds->hide();

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("&Layer"), this));
    static_cast<QLabel*>(controls->itemAt(0)->widget())->setBuddy(m_layer);
    controls->addWidget(m_layer);
    controls->addWidget(m_mode);
    auto* headTitle = new QLabel(tr("&Head"), this);
    headTitle->setBuddy(m_head);
    controls->addWidget(headTitle);
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
        connect(pane, &AttentionPane::layerClicked, this, [this](int layer) {
            setLayer(layer);
            setMode(AttentionPane::Mode::Grid);
        });
        connect(pane, &AttentionPane::layerHeadClicked, this, [this](int layer, int head) {
            setLayer(layer);
            showHead(head);
        });
        connect(pane, &AttentionPane::fitted, this, [this, pane](int cell) {
            if (pane == m_panes[0] && m_fitting) {
                const QSignalBlocker block(m_zoom);
                m_zoom->setValue(cell);
            }
        });
    }
    m_panes[1]->hide();
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(m_kinds);
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
    if (mode() != AttentionPane::Mode::Grid && mode() != AttentionPane::Mode::Model)
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
    int layers = 1, heads = 1, paths = 1;
    const bool comparisonWasShown = m_panes[1]->isVisibleTo(this);
    for (int i = 0; i < 2; ++i) {
        const InsightSource& source = *sources[i];
        AttentionPane* pane = m_panes[i];
        pane->setVisible(i == 0 || source.valid());
        pane->setFitting(m_fitting);
        pane->setPaths(source.valid() ? runPaths(*source.history, m_step) : 1);
        pane->setCaptions(source.valid() ? source.history->headCaptions() : QVector<HeadMapCaption>());
        pane->setHidesLastToken(source.valid() && source.history->architecture()
                                && source.history->architecture()->headKind == QLatin1String("masked_lm"));
        if (!source.valid()) {
            if (i == 0)
                pane->show(nullptr, QString(), 0, mode(), 0, m_zoom->value(), false, tr("No run to show."));
            continue;
        }
        const ProbeResult* capture = source.history->captureAt(text, m_step);
        QString why = nothing;
        if (capture == nullptr && !source.history->captures(text).isEmpty())
            why = tr("The first capture of this text is after step %1.").arg(m_step);
        else if (capture == nullptr && !text.isEmpty())
            why = tr("%1 has no capture of \"%2\" yet; Add probe… inspects it.").arg(source.label, text);
        const bool perHead = m_scale->currentIndex() == 1;
        pane->show(capture, source.label, layer(), mode(), head(), m_zoom->value(), perHead, why);
        if (i == 0 && capture != nullptr) {
            layers = probeLayers(*capture);
            heads = probeHeads(*capture);
            paths = pane->paths();
            const float top = pane->showsPatches() ? pane->patches()->maxWeight() : pane->grid()->maxWeight();
            m_legend->setText(perHead ? tr("0 … each head's max")
                                      : tr("0 … %1").arg(QString::number(top, 'f', 2)));
            m_legend->setToolTip(perHead ? tr("Each head's colours run from 0 to its own largest weight")
                                         : tr("Every head's colours run from 0 to the layer's largest weight"));
            const QString kinds = mapKindLegend(pane->captions());
            m_kinds->setText(kinds);
            m_kinds->setVisible(!kinds.isEmpty());
        }
    }
    const QSignalBlocker layerBlock(m_layer), headBlock(m_head);
    m_layer->setRange(1, std::max(1, layers));
    m_head->setRange(1, std::max(1, heads));
    m_head->setPaths(paths);
    m_head->setEnabled(mode() == AttentionPane::Mode::Head);
    // The model view and a picture's means draw every layer: no layer to choose, and tiles to zoom.
    const bool everyLayer = mode() == AttentionPane::Mode::Model
                            || (mode() == AttentionPane::Mode::Mean && m_panes[0]->showsPatches());
    m_layer->setEnabled(!everyLayer);
    m_zoom->setEnabled(mode() == AttentionPane::Mode::Grid || everyLayer);
    // A comparison run that appears gets half the room, not what the splitter had left.
    // (QSplitter raises each size to the pane's minimum: equal large sizes stay equal.)
    if (!comparisonWasShown && m_panes[1]->isVisibleTo(this))
        m_split->setSizes({1 << 20, 1 << 20});
}

void AttentionView::resizeEvent(QResizeEvent* event)
{
    InsightPage::resizeEvent(event);
    if (m_fitting)  // after the layout has given the panes their new size
        QTimer::singleShot(0, this, &AttentionView::refresh);
}

QString AttentionView::exportTitle() const
{
    if (mode() == AttentionPane::Mode::Model)
        return tr("attention %1 every layer").arg(m_primary.label);
    return tr("attention %1 layer %2").arg(m_primary.label).arg(layer() + 1);
}

QWidget* AttentionView::exportArea()
{
    const bool grid = mode() == AttentionPane::Mode::Grid;
    if (!grid && mode() != AttentionPane::Mode::Model)
        return m_split;
    QVector<const AttentionPane*> shown;
    for (const AttentionPane* pane : m_panes)
        if (pane->isVisibleTo(this) && pane->capture() != nullptr && probeTokenCount(*pane->capture()) > 0)
            shown.push_back(pane);
    if (shown.isEmpty())
        return m_split;  // it says why there is nothing to draw

    // Rebuilt for every export from what the panes show, at a size of its own.
    delete m_sheet;
    m_sheet = new QWidget(this);
    m_sheet->setVisible(false);
    m_sheet->setAutoFillBackground(true);
    QPalette sheetPalette = m_sheet->palette();
    sheetPalette.setColor(QPalette::Window, sheetPalette.color(QPalette::Base));
    m_sheet->setPalette(sheetPalette);
    auto* row = new QHBoxLayout(m_sheet);
    row->setSpacing(24);
    const bool perHead = m_scale->currentIndex() == 1;
    for (const AttentionPane* pane : shown) {
        const ProbeResult* capture = pane->capture();
        auto* column = new QVBoxLayout;
        auto* header = new QLabel(m_sheet);
        header->setTextFormat(Qt::RichText);
        column->addWidget(header);
        QString colours;
        if (grid && pane->showsPatches()) {
            auto* heads = new PatchAttentionGrid(m_sheet);
            heads->setScalePerHead(perHead);
            heads->setPaths(pane->paths());
            heads->setCaptions(pane->captions());
            heads->setCapture(capture, pane->shownLayer());
            const int columns = exportColumns(heads->heads(), pane->paths());
            heads->setCellSize(std::clamp(kMaxExportSide / std::max(1, columns) - 24, 96, 360));
            heads->setColumns(columns);
            heads->setFixedSize(heads->sizeHint());
            column->addWidget(heads);
            colours = perHead ? tr("each head's largest weight") : QString::number(heads->maxWeight(), 'f', 2);
        } else if (grid) {
            auto* heads = new HeadGrid(m_sheet);
            heads->setScalePerHead(perHead);
            heads->setPaths(pane->paths());
            heads->setCaptions(pane->captions());
            heads->setCapture(capture, pane->shownLayer());
            const int columns = exportColumns(heads->heads(), pane->paths());
            const int rows = (heads->heads() + columns - 1) / std::max(1, columns);
            heads->setCellSize(exportCellSize(probeTokenCount(*capture), columns, rows));
            heads->setColumns(columns);
            heads->setFixedSize(heads->sizeHint());
            column->addWidget(heads);
            colours = perHead ? tr("each head's largest weight") : QString::number(heads->maxWeight(), 'f', 2);
        } else {
            auto* figure = new ModelViewFigure(m_sheet);
            figure->setCapture(capture, pane->paths(), perHead);
            figure->setCellSize(exportModelCellSize(probeTokenCount(*capture), figure->layers(), figure->heads()));
            column->addWidget(figure);
            colours = perHead ? tr("each head's largest weight") : tr("each layer's largest weight");
        }
        // The colour range travels with the picture (on screen it is beside the controls).
        QString kinds = mapKindLegend(pane->captions()).toHtmlEscaped();
        header->setText(tr("%1 · colours: 0 (dark) … %2 (light)").arg(pane->header()->text(), colours.toHtmlEscaped())
                        + (kinds.isEmpty() ? QString() : QStringLiteral("<br>") + kinds));
        column->addStretch(1);
        row->addLayout(column);
    }
    row->activate();
    m_sheet->resize(m_sheet->sizeHint());
    row->activate();
    return m_sheet;
}

QByteArray AttentionView::csv() const
{
    QByteArray out = "run,step,probe,layer,head,query_index,query,key_index,key,weight\n";
    for (const AttentionPane* pane : m_panes) {
        const InsightSource& source = pane == m_panes[0] ? m_primary : m_comparison;
        const ProbeResult* c = source.valid() ? pane->capture() : nullptr;
        if (c == nullptr)
            continue;
        const QByteArray prefix =
            csvField(source.label) + ',' + QByteArray::number(c->step) + ',' + csvField(probeTextOf(*c)) + ',';
        const int n = probeTokenCount(*c);
        const QStringList tokens = probeTokens(*c);
        for (int l = 0; l < probeLayers(*c); ++l)
            for (int h = 0; h < static_cast<int>(c->attention[static_cast<std::size_t>(l)].size()); ++h)
                for (int q = 0; q < n; ++q)
                    for (int k = 0; k < n; ++k)
                        out += prefix + QByteArray::number(l + 1) + ',' + QByteArray::number(h + 1) + ','
                               + QByteArray::number(q) + ',' + csvField(tokens[q]) + ',' + QByteArray::number(k)
                               + ',' + csvField(tokens[k]) + ',' + csvNumber(probeWeight(*c, l, h, q, k)) + '\n';
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
