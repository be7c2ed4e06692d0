#include "ConfigPanel.h"

#include "ArchitectureDiagram.h"
#include "NumberSpinBox.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFrame>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QScrollBar>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widelab {

enum class ConfigPanel::Kind : int { Int, Number, Bool, Choice, Text, File, Lines, Device };

struct ConfigPanel::Field {
    QString key;       // dotted: "model.experts"; top-level keys have no dot
    QString section;   // "model", "task", "train"; empty for top-level keys
    QString name;      // the key inside its section
    QString label;
    QString tip;
    Kind kind = Kind::Int;
    QJsonValue defaultValue;
    double min = 0;    // the range the core accepts (numbers)
    double max = 0;

    QWidget* editor = nullptr;
    QLabel* labelWidget = nullptr;
    QFrame* frame = nullptr;        // editor (and browse button) and the issue text below them
    QLabel* issueLabel = nullptr;
    QPushButton* browse = nullptr;
    QFormLayout* form = nullptr;
    QGroupBox* group = nullptr;

    // A value the editor cannot show (wrong type, too large): given back as it
    // came until the user edits the field.
    QJsonValue raw;
    bool keepRaw = false;

    bool visible = true;       // hidden: belongs to another task kind
    bool applicable = true;    // disabled: no effect with the other settings
    QString notUsedBecause;
    QString issue;
};

namespace {

constexpr int kIntMax = std::numeric_limits<int>::max();
constexpr qint64 kBig = qint64{1} << 40;
const char* const kIssueProperty = "widelabIssue";
const QString kUnknownChoice = QStringLiteral(" (not in the list)");
constexpr int kUnknownRole = Qt::UserRole + 1;

// 26225674 -> "26.2M": three significant digits with k, M, B, T.
QString humanCount(double value)
{
    static const char* const units[] = {"", "k", "M", "B", "T"};
    int unit = 0;
    double v = value;
    while (std::abs(v) >= 999.5 && unit < 4) {
        v /= 1000.0;
        ++unit;
    }
    if (unit == 0)
        return QString::number(std::llround(value));
    return QString::number(v, 'g', 3) + QLatin1String(units[unit]);
}

QString humanBytes(qint64 bytes)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    double v = static_cast<double>(bytes);
    while (v >= 1023.5 && unit < 4) {
        v /= 1024.0;
        ++unit;
    }
    return (unit == 0 ? QString::number(bytes) : QString::number(v, 'g', 3)) + QLatin1Char(' ') + QLatin1String(units[unit]);
}

bool isIntegral(const QJsonValue& value)
{
    if (!value.isDouble())
        return false;
    const double d = value.toDouble();
    return std::isfinite(d) && std::floor(d) == d;
}

void repolish(QWidget* widget)
{
    widget->style()->unpolish(widget);
    widget->style()->polish(widget);
    widget->update();
}

void removeUnknownItems(QComboBox* combo)
{
    for (int i = combo->count() - 1; i >= 0; --i)
        if (combo->itemData(i, kUnknownRole).toBool())
            combo->removeItem(i);
}

// Selects the item whose data is `value`, adding one for a value not in the list.
void selectData(QComboBox* combo, const QString& value)
{
    int index = combo->findData(value);
    if (index < 0) {
        combo->addItem(value + kUnknownChoice, value);
        index = combo->count() - 1;
        combo->setItemData(index, true, kUnknownRole);
    }
    combo->setCurrentIndex(index);
}

const QString kStyle = QStringLiteral(
    "QFrame#widelabField { border: 2px solid transparent; border-radius: 4px; }"
    "QFrame#widelabField[widelabIssue=\"true\"] { border: 2px solid #d55e00; }"
    "QLabel#widelabIssueText { color: #c0480a; }"
    "QLabel#widelabDocumentIssues { border: 1px solid #d55e00; border-radius: 4px; padding: 4px; color: #c0480a; }"
    "QLabel#widelabCost { border: 1px solid palette(mid); border-radius: 4px; padding: 4px; }");

}  // namespace

ConfigPanel::ConfigPanel(QWidget* parent) : QWidget(parent)
{
    setStyleSheet(kStyle);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);

    auto* top = new QHBoxLayout;
    auto* presetLabel = new QLabel(tr("&Preset:"), this);
    m_presets = new QComboBox(this);
    m_presets->setAccessibleName(tr("Preset"));
    m_presets->setToolTip(tr("Replace the whole document with one of the shipped presets"));
    presetLabel->setBuddy(m_presets);
    setPresets({});
    connect(m_presets, &QComboBox::activated, this, [this](int index) {
        if (index <= 0)
            return;
        const QString name = m_presets->itemData(index).toString();
        m_presets->setCurrentIndex(0);
        Q_EMIT presetChosen(name);
    });
    m_readOnlyNote = new QLabel(tr("Read-only while training runs"), this);
    m_readOnlyNote->setVisible(false);
    top->addWidget(presetLabel);
    top->addWidget(m_presets, 1);
    top->addWidget(m_readOnlyNote);
    outer->addLayout(top);

    m_cost = new QLabel(this);
    m_cost->setObjectName(QStringLiteral("widelabCost"));
    m_cost->setWordWrap(true);
    m_cost->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_cost->setAccessibleName(tr("Model cost"));
    m_cost->setToolTip(tr("<p><b>stored</b>: trainable parameters that exist; a shared module counts once.<br>"
                          "<b>active</b>: stored, with only top_k of the experts of each mixture: "
                          "what one token can touch.<br>"
                          "<b>applied</b>: what one token passes through on its way up, counting a shared "
                          "module once for every block that uses it.<br>"
                          "<b>FLOPs per token</b>: forward matrix products at max_len tokens.<br>"
                          "<b>memory</b>: an estimate of training memory (weights, gradients, optimizer "
                          "state and activations).</p>"));
    setCost(CostSummary{});
    outer->addWidget(m_cost);

    m_documentIssues = new QLabel(this);
    m_documentIssues->setObjectName(QStringLiteral("widelabDocumentIssues"));
    m_documentIssues->setWordWrap(true);
    m_documentIssues->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_documentIssues->setAccessibleName(tr("Problems in the document"));
    m_documentIssues->setVisible(false);
    outer->addWidget(m_documentIssues);

    m_scroll = new QScrollArea(this);
    m_scroll->setWidgetResizable(true);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_scroll->setFrameShape(QFrame::NoFrame);
    auto* content = new QWidget(m_scroll);
    auto* contentLayout = new QVBoxLayout(content);
    contentLayout->setContentsMargins(0, 0, 4, 0);
    buildForm(contentLayout);
    // One label column for every group, so that the fields line up down the panel.
    int labelWidth = 0;
    for (const auto& field : m_fields)
        labelWidth = std::max(labelWidth, field->labelWidget->sizeHint().width());
    for (const auto& field : m_fields)
        field->labelWidget->setMinimumWidth(labelWidth);
    contentLayout->addStretch(1);
    m_scroll->setWidget(content);
    // Narrower than its fields, the form would be cut off at the right (it never
    // scrolls sideways): the panel asks for the room its widest row needs.
    m_scroll->setMinimumWidth(content->minimumSizeHint().width()
                              + m_scroll->verticalScrollBar()->sizeHint().width());

    // The diagram stays in view above the form, so that it follows every edit
    // the user makes further down; the splitter between them is theirs to move.
    auto* architecture = new QGroupBox(tr("Architecture"), this);
    architecture->setAccessibleName(tr("Architecture"));
    auto* architectureLayout = new QVBoxLayout(architecture);
    architectureLayout->setContentsMargins(4, 4, 4, 4);
    m_diagram = new ArchitectureDiagram(architecture);
    m_diagram->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Ignored);
    architectureLayout->addWidget(m_diagram);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->setObjectName(QStringLiteral("widelabConfigSplit"));
    split->setChildrenCollapsible(false);
    split->addWidget(architecture);
    split->addWidget(m_scroll);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    outer->addWidget(split, 1);

    m_loading = true;
    for (auto& field : m_fields)
        load(*field, QJsonValue(QJsonValue::Undefined));
    updateDerivedDefaults();
    m_loading = false;
    updateApplicability();
}

ConfigPanel::~ConfigPanel() = default;

// ---------------------------------------------------------------------------
// Building the form

QFormLayout* ConfigPanel::addGroup(const QString& title)
{
    auto* group = new QGroupBox(title);
    group->setAccessibleName(title);
    m_groupTitles.insert(group, title);
    auto* form = new QFormLayout(group);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setVerticalSpacing(2);
    return form;
}

ConfigPanel::Field& ConfigPanel::addField(QFormLayout* form, const QString& key, const QString& label, Kind kind,
                                          QWidget* editor, const QJsonValue& defaultValue, const QString& tip)
{
    auto field = std::make_unique<Field>();
    Field& f = *field;
    f.key = key;
    const int dot = key.indexOf(QLatin1Char('.'));
    f.section = dot < 0 ? QString() : key.left(dot);
    f.name = dot < 0 ? key : key.mid(dot + 1);
    f.label = label;
    f.tip = tip;
    f.kind = kind;
    f.defaultValue = defaultValue;
    f.editor = editor;
    f.form = form;
    f.group = qobject_cast<QGroupBox*>(form->parentWidget());

    editor->setObjectName(key);
    editor->setAccessibleName(label);
    editor->setAccessibleDescription(key + QStringLiteral(": ") + tip);

    f.frame = new QFrame;
    f.frame->setObjectName(QStringLiteral("widelabField"));
    f.frame->setProperty(kIssueProperty, false);
    auto* column = new QVBoxLayout(f.frame);
    column->setContentsMargins(1, 1, 1, 1);
    column->setSpacing(1);
    auto* row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(editor, 1);
    column->addLayout(row);
    f.issueLabel = new QLabel(f.frame);
    f.issueLabel->setObjectName(QStringLiteral("widelabIssueText"));
    f.issueLabel->setWordWrap(true);
    f.issueLabel->setVisible(false);
    column->addWidget(f.issueLabel);

    f.labelWidget = new QLabel(label);
    f.labelWidget->setBuddy(editor);
    form->addRow(f.labelWidget, f.frame);

    // Spin boxes and combos inside a scroll area must not swallow the wheel
    // while the user scrolls past them.
    if (qobject_cast<QAbstractSpinBox*>(editor) || qobject_cast<QComboBox*>(editor)) {
        editor->setFocusPolicy(Qt::StrongFocus);
        editor->installEventFilter(this);
    }

    m_byKey.insert(key, &f);
    m_fields.push_back(std::move(field));
    updateToolTip(f);
    return f;
}

void ConfigPanel::addInt(QFormLayout* form, const QString& key, const QString& label, qint64 min, qint64 max,
                         qint64 defaultValue, const QString& tip, const QString& special)
{
    auto* spin = new QSpinBox;
    spin->setRange(static_cast<int>(min), static_cast<int>(std::min<qint64>(max, kIntMax)));
    spin->setGroupSeparatorShown(max >= 100000);
    if (!special.isEmpty())
        spin->setSpecialValueText(special);
    Field& f = addField(form, key, label, Kind::Int, spin, QJsonValue(defaultValue), tip);
    f.min = static_cast<double>(min);
    f.max = static_cast<double>(max);
    connect(spin, &QSpinBox::valueChanged, this, [this, &f] { edited(f); });
}

void ConfigPanel::addNumber(QFormLayout* form, const QString& key, const QString& label, double min, double max,
                            double defaultValue, double step, const QString& tip, bool logarithmic)
{
    auto* spin = new NumberSpinBox;
    spin->setRange(min, max);
    spin->setSingleStep(step);
    spin->setLogarithmic(logarithmic);
    Field& f = addField(form, key, label, Kind::Number, spin, QJsonValue(defaultValue), tip);
    f.min = min;
    f.max = max;
    connect(spin, &QDoubleSpinBox::valueChanged, this, [this, &f] { edited(f); });
}

void ConfigPanel::addBool(QFormLayout* form, const QString& key, const QString& label, bool defaultValue,
                          const QString& tip)
{
    auto* box = new QCheckBox;
    Field& f = addField(form, key, label, Kind::Bool, box, QJsonValue(defaultValue), tip);
    connect(box, &QCheckBox::toggled, this, [this, &f] { edited(f); });
}

void ConfigPanel::addChoice(QFormLayout* form, const QString& key, const QString& label,
                            const QList<QPair<QString, QString>>& choices, const QString& defaultValue,
                            const QString& tip)
{
    auto* combo = new QComboBox;
    for (const auto& [value, text] : choices)
        combo->addItem(text, value);
    Field& f = addField(form, key, label, Kind::Choice, combo, QJsonValue(defaultValue), tip);
    connect(combo, &QComboBox::currentIndexChanged, this, [this, &f] { edited(f); });
}

void ConfigPanel::addText(QFormLayout* form, const QString& key, const QString& label, const QString& tip)
{
    auto* edit = new QLineEdit;
    edit->setClearButtonEnabled(true);
    Field& f = addField(form, key, label, Kind::Text, edit, QJsonValue(QString()), tip);
    connect(edit, &QLineEdit::textChanged, this, [this, &f] { edited(f); });
}

void ConfigPanel::addFile(QFormLayout* form, const QString& key, const QString& label, const QString& tip)
{
    auto* edit = new QLineEdit;
    edit->setPlaceholderText(tr("path to a text file"));
    Field& f = addField(form, key, label, Kind::File, edit, QJsonValue(QString()), tip);
    f.browse = new QPushButton(tr("Browse..."), f.frame);
    f.browse->setAccessibleName(tr("Browse for %1").arg(label));
    f.browse->setToolTip(tr("Choose the data file"));
    qobject_cast<QHBoxLayout*>(f.frame->layout()->itemAt(0)->layout())->addWidget(f.browse);
    connect(edit, &QLineEdit::textChanged, this, [this, &f] { edited(f); });
    connect(f.browse, &QPushButton::clicked, this, [this, &f] { browseForFile(f); });
}

void ConfigPanel::addLines(QFormLayout* form, const QString& key, const QString& label, const QString& tip)
{
    auto* edit = new QPlainTextEdit;
    edit->setTabChangesFocus(true);
    edit->setLineWrapMode(QPlainTextEdit::NoWrap);
    edit->setPlaceholderText(tr("one text per line"));
    edit->setFixedHeight(edit->fontMetrics().lineSpacing() * 4 + 12);
    Field& f = addField(form, key, label, Kind::Lines, edit, QJsonValue(QJsonArray()), tip);
    connect(edit, &QPlainTextEdit::textChanged, this, [this, &f] { edited(f); });
}

void ConfigPanel::addDevice(QFormLayout* form, const QString& key, const QString& label, const QString& tip)
{
    auto* combo = new QComboBox;
    Field& f = addField(form, key, label, Kind::Device, combo, QJsonValue(QStringLiteral("auto")), tip);
    setDevices({});
    connect(combo, &QComboBox::currentIndexChanged, this, [this, &f] { edited(f); });
}

void ConfigPanel::buildForm(QVBoxLayout* content)
{
    auto place = [content](QFormLayout* form) { content->addWidget(form->parentWidget()); };

    QFormLayout* f = addGroup(tr("Run"));
    addText(f, "name", tr("Name"), tr("A short name for the run, shown in lists and plots."));
    addText(f, "description", tr("Description"), tr("What this run is about: free text, kept with the run."));
    place(f);

    f = addGroup(tr("Depth"));
    addInt(f, "model.layers", tr("Blocks"), 1, 1024, 6,
           tr("Number of Transformer blocks L. With shared modules, a deeper stack reuses the same weights "
              "more times (WideNet, ALBERT) instead of adding parameters."));
    place(f);

    f = addGroup(tr("Width"));
    addInt(f, "model.d_model", tr("Model width (d_model)"), 1, 65536, 256,
           tr("Width D of the residual stream: every block reads and writes vectors of this size."));
    addInt(f, "model.heads", tr("Attention heads"), 1, 4096, 8,
           tr("Attention heads H per block. Wide Attention trades blocks for heads at a fixed total "
              "(6x8 ... 1x48)."));
    addInt(f, "model.head_dim", tr("Head dimension"), 1, 65536, 32,
           tr("Per-head width A; the attention width is heads x head_dim, independent of d_model. "
              "Default: d_model / heads."));
    addInt(f, "model.ffn_dim", tr("FFN hidden size"), 1, 65536 * 16, 1024,
           tr("Hidden width M of the feed-forward network and of each expert. Default: 4 x d_model."));
    addInt(f, "model.embedding_dim", tr("Embedding size"), 0, 65536, 0,
           tr("0: embed tokens straight into d_model. Otherwise factorised: vocab -> embedding_dim -> "
              "d_model (ALBERT, WideNet NLP), which saves parameters with a large vocabulary."),
           tr("not factorised"));
    addChoice(f, "model.activation", tr("Activation"), {{"gelu", "GELU"}, {"relu", "ReLU"}, {"silu", "SiLU"}},
              "gelu", tr("The FFN's and the experts' nonlinearity."));
    addNumber(f, "model.dropout", tr("Dropout"), 0.0, 0.99, 0.1, 0.05,
              tr("Dropout on embeddings, attention probabilities and sublayer outputs (0 to 0.99)."));
    addInt(f, "model.max_len", tr("Longest input (max_len)"), 1, 1 << 20, 512,
           tr("Longest input sequence in tokens, not counting the CLS token; sets the position table."));
    addInt(f, "model.vocab_size", tr("Vocabulary size"), 2, 10'000'000, 256,
           tr("Token vocabulary size; it must hold the tokenizer's vocabulary (bytes: 258)."));
    place(f);

    f = addGroup(tr("Head"));
    addChoice(f, "model.head", tr("Head"),
              {{"classification", tr("Classification")}, {"language_model", tr("Language model")}},
              "classification",
              tr("Classification: one label per sequence. Language model: next-token logits at every "
                 "position, with causal attention."));
    addChoice(f, "model.pooling", tr("Pooling"), {{"cls", tr("CLS token")}, {"mean", tr("Mean over tokens")}}, "cls",
              tr("Classification only: read the sequence from a learned CLS token, or average the valid tokens."));
    addBool(f, "model.pooler", tr("Pooler"), false,
            tr("Classification only: a tanh dense layer d_model -> d_model on the pooled vector (BERT, ALBERT)."));
    addInt(f, "model.num_classes", tr("Classes"), 2, 10'000'000, 10,
           tr("Classification only: number of labels (ListOps: 10)."));
    place(f);

    f = addGroup(tr("Experts"));
    addInt(f, "model.experts", tr("Experts"), 1, 4096, 1,
           tr("1: a dense FFN. More: a mixture of experts, each token routed to top_k of them."));
    addInt(f, "model.top_k", tr("Experts per token (top-k)"), 1, 4096, 1,
           tr("How many experts each token uses; at most the number of experts. Default: 2 (1 with one expert)."));
    addNumber(f, "model.capacity_factor", tr("Capacity factor"), -1e9, 1e9, 1.2, 0.1,
              tr("Training capacity C: each expert takes at most ceil(top_k x C x tokens / experts) tokens; "
                 "the rest are dropped and the residual carries them. <= 0: never drop."));
    addNumber(f, "model.eval_capacity_factor", tr("Evaluation capacity"), -1e9, 1e9, 2.0, 0.1,
              tr("Capacity factor C in evaluation. <= 0: never drop."));
    addNumber(f, "model.balance_loss_weight", tr("Balance loss weight"), 0.0, 1000.0, 0.01, 0.01,
              tr("Weight lambda of the load-balancing loss (WideNet Eq. 8) added to the task loss."), true);
    addNumber(f, "model.router_noise_std", tr("Router noise"), 0.0, 1000.0, 0.0, 0.05,
              tr("Standard deviation of the Gaussian noise added to router logits while training. "
                 "Default: 1 / experts."));
    addInt(f, "model.routing_groups", tr("Routing groups"), 1, 1024, 6,
           tr("G groups of consecutive blocks; only a group's first block routes, the others reuse its "
              "routing. Default: one group per block."));
    addChoice(f, "model.routing_priority", tr("Routing priority"),
              {{"position", tr("By position")}, {"batch", tr("By top-1 probability (batch)")}}, "position",
              tr("Which tokens get an expert's slots first when it is full. Language models: position only."));
    addBool(f, "model.renormalize_gates", tr("Renormalise gates"), false,
            tr("Scale the top-k combine weights to sum to 1 (needs top_k >= 2)."));
    addBool(f, "model.share_router", tr("Share the router"), true,
            tr("One router for all blocks (WideNet) or one per block."));
    place(f);

    f = addGroup(tr("Paths"));
    addInt(f, "model.paths", tr("Paths per sublayer"), 1, 64, 1,
           tr("n parallel paths in every attention and FFN sublayer (Multi-Path Transformer). Cannot be "
              "combined with experts."));
    addBool(f, "model.path_norm", tr("PathNorm"), false, tr("A LayerNorm at the end of every path."));
    addBool(f, "model.learnable_path_weights", tr("Learnable path weights"), false,
            tr("Train the weights alpha and beta of the paths' sum; otherwise they stay at 1/sqrt(2n) and 1."));
    addBool(f, "model.path_extra_features", tr("Extra path features"), false,
            tr("n cheap extra features, each the mean of n-1 paths (needs paths >= 3)."));
    place(f);

    f = addGroup(tr("Sharing across blocks"));
    addBool(f, "model.share_attention", tr("Share attention"), false,
            tr("One attention module used by every block (WideNet, ALBERT)."));
    addBool(f, "model.share_ffn", tr("Share FFN / MoE"), false,
            tr("One FFN, or one mixture of experts, used by every block (WideNet, ALBERT)."));
    addBool(f, "model.share_layernorm", tr("Share LayerNorms"), false,
            tr("One pair of LayerNorms (and path combiners) for every block. WideNet keeps them individual: "
               "that is what lets shared weights act differently in each block."));
    place(f);

    f = addGroup(tr("Task and data"));
    addChoice(f, "task.kind", tr("Task"),
              {{"listops", tr("ListOps (generated)")},
               {"classification", tr("Classification file")},
               {"language_model", tr("Language model file")}},
              "listops",
              tr("ListOps: nested list operations generated in-process (Long Range Arena rules). "
                 "Classification: a TSV/CSV file of label, text. Language model: any text file."));
    addFile(f, "task.path", tr("Data file"), tr("The TSV/CSV (classification) or text (language model) file."));
    addChoice(f, "task.tokenizer", tr("Tokenizer"),
              {{"byte", tr("Bytes")}, {"character", tr("Characters")}, {"word", tr("Words")}}, "byte",
              tr("How file texts become tokens. Bytes need vocab_size >= 258."));
    addInt(f, "task.vocab_limit", tr("Vocabulary limit"), 3, 10'000'000, 8000,
           tr("Character and word tokenizers: keep the most frequent tokens of the training split, plus "
              "padding and unknown."));
    addInt(f, "task.sequence_length", tr("Sequence length"), 0, kBig, 0,
           tr("Longer texts are cut. 0: model.max_len."), tr("= max_len"));
    addNumber(f, "task.validation_fraction", tr("Validation fraction"), 0.0, 0.5, 0.05, 0.01,
              tr("Share of the file held out for validation (deterministic from the data seed)."));
    addNumber(f, "task.test_fraction", tr("Test fraction"), 0.0, 0.5, 0.05, 0.01,
              tr("Share of the file held out for testing."));
    addInt(f, "task.min_length", tr("Shortest expression"), 1, 1 << 20, 16,
           tr("ListOps: shortest expression in tokens (LRA uses 500-2000)."));
    addInt(f, "task.max_length", tr("Longest expression"), 1, 1 << 20, 128,
           tr("ListOps: longest expression in tokens; at most the sequence length."));
    addInt(f, "task.train_size", tr("Training examples"), 1, kBig, 20000, tr("ListOps examples in the training split."));
    addInt(f, "task.validation_size", tr("Validation examples"), 1, kBig, 1000,
           tr("ListOps examples in the validation split."));
    addInt(f, "task.test_size", tr("Test examples"), 1, kBig, 1000, tr("ListOps examples in the test split."));
    addInt(f, "task.seed", tr("Data seed"), 0, kBig, 0,
           tr("Seed of the ListOps generator and of the file splits."));
    place(f);

    f = addGroup(tr("Optimizer"));
    addChoice(f, "train.optimizer", tr("Optimizer"),
              {{"adamw", "AdamW"}, {"lamb", tr("LAMB (WideNet)")}, {"sgd", tr("SGD with momentum")}}, "adamw",
              tr("AdamW, LAMB (the optimizer WideNet trains with) or SGD with momentum."));
    addNumber(f, "train.learning_rate", tr("Learning rate"), 1e-12, 100.0, 1e-3, 0,
              tr("Peak learning rate, reached at the end of warmup. Accepts scientific notation (3e-4); the "
                 "arrows step 1, 2, ... 9 within a decade."),
              true);
    addNumber(f, "train.weight_decay", tr("Weight decay"), 0.0, 10.0, 0.01, 0,
              tr("Decoupled weight decay on matrices only; biases, LayerNorms and path weights are not decayed."),
              true);
    addNumber(f, "train.beta1", tr("Beta 1"), 0.0, 0.999999, 0.9, 0.01,
              tr("AdamW and LAMB: decay of the first-moment average."));
    addNumber(f, "train.beta2", tr("Beta 2"), 0.0, 0.999999999, 0.999, 0.001,
              tr("AdamW and LAMB: decay of the second-moment average."));
    addNumber(f, "train.epsilon", tr("Epsilon"), 1e-20, 1.0, 1e-8, 0,
              tr("AdamW and LAMB: added to the denominator for stability."), true);
    addNumber(f, "train.momentum", tr("Momentum"), 0.0, 0.999999, 0.9, 0.01, tr("SGD only: momentum."));
    addChoice(f, "train.schedule", tr("Schedule"),
              {{"constant", tr("Constant")},
               {"warmup_cosine", tr("Warmup, then cosine")},
               {"inverse_sqrt", tr("Warmup, then inverse square root")},
               {"warmup_rsqrt", tr("Warmup, then rsqrt (LRA)")}},
              "warmup_cosine",
              tr("How the learning rate moves over training. Inverse square root: the Multi-Path Transformer; "
                 "rsqrt: Long Range Arena."));
    addInt(f, "train.warmup_steps", tr("Warmup steps"), 0, kBig, 100,
           tr("Linear warmup to the peak learning rate (ignored by the constant schedule)."));
    addNumber(f, "train.min_learning_rate_ratio", tr("Final rate ratio"), 0.0, 1.0, 0.0, 0.05,
              tr("Cosine only: the rate at the last step as a fraction of the peak."));
    place(f);

    f = addGroup(tr("Training"));
    addInt(f, "train.steps", tr("Steps"), 1, kBig, 2000, tr("Optimizer steps in the whole run."));
    addInt(f, "train.batch_size", tr("Batch size"), 1, 1 << 20, 32, tr("Sequences per step."));
    addNumber(f, "train.gradient_clip", tr("Gradient clipping"), -1.0, 1e9, 1.0, 0.1,
              tr("Clip the global gradient norm to this value; <= 0 turns clipping off."));
    addNumber(f, "train.label_smoothing", tr("Label smoothing"), 0.0, 0.99, 0.0, 0.05,
              tr("Spread this much of the target probability over the other classes."));
    addDevice(f, "train.device", tr("Device"),
              tr("Where training runs. Automatic: CUDA when this build has it and a GPU is present."));
    addBool(f, "train.bf16", tr("bfloat16 autocast"), true,
            tr("Autocast to bfloat16 on CUDA (the router stays in fp32). No effect on the CPU."));
    addInt(f, "train.threads", tr("CPU threads"), 0, 4096, 0, tr("Intra-op threads; 0: every core."),
           tr("every core"));
    addInt(f, "train.seed", tr("Seed"), 0, kBig, 0,
           tr("Seed of the initialisation, dropout, router noise and batch order."));
    place(f);

    f = addGroup(tr("Logging, evaluation and checkpoints"));
    addInt(f, "train.log_every", tr("Log every"), 1, kBig, 10,
           tr("Steps between snapshots to the views and lines of metrics.jsonl."));
    addInt(f, "train.eval_every", tr("Evaluate every"), 1, kBig, 200, tr("Steps between validation passes."));
    addInt(f, "train.eval_batches", tr("Evaluation batches"), 0, kBig, 20,
           tr("Validation batches per evaluation; 0: the whole validation split."), tr("whole split"));
    addInt(f, "train.checkpoint_every", tr("Checkpoint every"), 1, kBig, 200, tr("Steps between checkpoints."));
    addInt(f, "train.keep_last", tr("Checkpoints kept"), 1, 1000, 3, tr("Older checkpoints are deleted."));
    addInt(f, "train.probe_every", tr("Probe every"), 0, kBig, 0,
           tr("Steps between inspections of the probe texts (attention, routing, prediction); 0: with every "
              "validation."),
           tr("with validation"));
    addLines(f, "train.probes", tr("Probe texts"),
             tr("Texts inspected during training, one per line: their attention maps, expert routing and "
                "prediction. Empty: a short validation example. Texts added in the Attention view join them."));
    place(f);
}

// ---------------------------------------------------------------------------
// Values

ConfigPanel::Field* ConfigPanel::fieldFor(const QString& key) const { return m_byKey.value(key, nullptr); }

QWidget* ConfigPanel::field(const QString& key) const
{
    const Field* f = fieldFor(key);
    return f ? f->editor : nullptr;
}

QStringList ConfigPanel::keys() const
{
    QStringList result;
    for (const auto& f : m_fields)
        result << f->key;
    return result;
}

QJsonValue ConfigPanel::valueOf(const Field& f) const
{
    if (f.keepRaw)
        return f.raw;
    switch (f.kind) {
    case Kind::Int:
        return QJsonValue(static_cast<qint64>(static_cast<QSpinBox*>(f.editor)->value()));
    case Kind::Number:
        return QJsonValue(static_cast<NumberSpinBox*>(f.editor)->value());
    case Kind::Bool:
        return QJsonValue(static_cast<QCheckBox*>(f.editor)->isChecked());
    case Kind::Choice:
    case Kind::Device:
        return QJsonValue(static_cast<QComboBox*>(f.editor)->currentData().toString());
    case Kind::Text:
    case Kind::File:
        return QJsonValue(static_cast<QLineEdit*>(f.editor)->text());
    case Kind::Lines: {
        QJsonArray lines;
        const QStringList texts = static_cast<QPlainTextEdit*>(f.editor)->toPlainText().split(QLatin1Char('\n'));
        for (QString text : texts) {
            if (text.endsWith(QLatin1Char('\r')))
                text.chop(1);
            if (!text.trimmed().isEmpty())
                lines.append(text);
        }
        return lines;
    }
    }
    return {};
}

// Shows `value` in the field's editor; undefined shows the default. Called with m_loading set.
void ConfigPanel::load(Field& f, const QJsonValue& given)
{
    const QJsonValue value = given.isUndefined() ? f.defaultValue : given;
    f.keepRaw = false;
    f.raw = QJsonValue();
    bool shown = false;
    switch (f.kind) {
    case Kind::Int: {
        auto* spin = static_cast<QSpinBox*>(f.editor);
        // The core's range, widened to show an out-of-range value the checks will report.
        const double v = value.toDouble();
        if (isIntegral(value) && v >= std::numeric_limits<int>::min() && v <= kIntMax) {
            spin->setRange(static_cast<int>(std::min(f.min, v)), static_cast<int>(std::min(std::max(f.max, v), double(kIntMax))));
            spin->setValue(static_cast<int>(v));
            shown = true;
        }
        break;
    }
    case Kind::Number: {
        auto* spin = static_cast<NumberSpinBox*>(f.editor);
        if (value.isDouble() && std::isfinite(value.toDouble())) {
            const double v = value.toDouble();
            spin->setRange(std::min(f.min, v), std::max(f.max, v));
            spin->setValue(v);
            shown = true;
        }
        break;
    }
    case Kind::Bool:
        if (value.isBool()) {
            static_cast<QCheckBox*>(f.editor)->setChecked(value.toBool());
            shown = true;
        }
        break;
    case Kind::Choice:
    case Kind::Device: {
        auto* combo = static_cast<QComboBox*>(f.editor);
        removeUnknownItems(combo);
        if (value.isString()) {
            selectData(combo, value.toString());
            shown = true;
        }
        break;
    }
    case Kind::Text:
    case Kind::File:
        if (value.isString()) {
            static_cast<QLineEdit*>(f.editor)->setText(value.toString());
            static_cast<QLineEdit*>(f.editor)->setCursorPosition(0);  // show the start of a long text
            shown = true;
        }
        break;
    case Kind::Lines:
        if (value.isArray()) {
            QStringList texts;
            bool strings = true;
            for (const QJsonValue& item : value.toArray()) {
                strings = strings && item.isString();
                texts << item.toString();
            }
            if (strings) {
                static_cast<QPlainTextEdit*>(f.editor)->setPlainText(texts.join(QLatin1Char('\n')));
                shown = true;
            }
        }
        break;
    }
    if (!shown) {
        // A value of the wrong type: the editor shows the default, the document keeps the value.
        if (f.defaultValue != value)
            load(f, f.defaultValue);
        f.keepRaw = true;
        f.raw = value;
    }
}

qint64 ConfigPanel::intValue(const QString& key) const
{
    const Field* f = fieldFor(key);
    return f ? valueOf(*f).toInteger() : 0;
}

QString ConfigPanel::choiceValue(const QString& key) const
{
    const Field* f = fieldFor(key);
    return f ? valueOf(*f).toString() : QString();
}

void ConfigPanel::setDocument(const QJsonObject& document)
{
    m_loading = true;
    m_base = document;
    m_derived.clear();
    static const QSet<QString> derivable = {"model.head_dim", "model.ffn_dim", "model.top_k",
                                            "model.router_noise_std", "model.routing_groups"};
    for (auto& field : m_fields) {
        Field& f = *field;
        QJsonValue value(QJsonValue::Undefined);
        if (f.section.isEmpty()) {
            value = document.value(f.name);
        } else {
            const QJsonValue section = document.value(f.section);
            if (section.isObject())
                value = section.toObject().value(f.name);
        }
        if (value.isUndefined() && derivable.contains(f.key))
            m_derived.insert(f.key);
        load(f, value);
    }
    updateDerivedDefaults();
    m_loading = false;
    updateApplicability();
}

QJsonObject ConfigPanel::document() const
{
    QJsonObject out = m_base;
    QHash<QString, QJsonObject> sections;
    for (const auto& field : m_fields) {
        const Field& f = *field;
        const QJsonValue value = valueOf(f);
        if (f.section.isEmpty()) {
            // name and description are written only when they say something.
            if (value.toString().isEmpty() && !m_base.contains(f.name))
                continue;
            out.insert(f.name, value);
            continue;
        }
        if (!sections.contains(f.section)) {
            const QJsonValue given = m_base.value(f.section);
            sections.insert(f.section, given.isObject() ? given.toObject() : QJsonObject());
        }
        sections[f.section].insert(f.name, value);
    }
    for (auto it = sections.cbegin(); it != sections.cend(); ++it)
        out.insert(it.key(), it.value());
    return out;
}

// Keys absent from the document show the default the core would compute from
// the other keys (model.head_dim = d_model / heads, ...), kept up to date.
void ConfigPanel::updateDerivedDefaults()
{
    if (m_derived.isEmpty())
        return;
    const bool wasLoading = m_loading;
    m_loading = true;
    const qint64 dModel = intValue("model.d_model");
    const qint64 heads = std::max<qint64>(1, intValue("model.heads"));
    const qint64 experts = std::max<qint64>(1, intValue("model.experts"));
    const QHash<QString, QJsonValue> derived = {
        {"model.head_dim", QJsonValue(std::max<qint64>(1, dModel / heads))},
        {"model.ffn_dim", QJsonValue(4 * dModel)},
        {"model.top_k", QJsonValue(std::min<qint64>(2, experts))},
        {"model.router_noise_std", QJsonValue(experts > 1 ? 1.0 / static_cast<double>(experts) : 0.0)},
        {"model.routing_groups", QJsonValue(intValue("model.layers"))},
    };
    for (const QString& key : std::as_const(m_derived))
        if (Field* f = fieldFor(key))
            load(*f, derived.value(key));
    m_loading = wasLoading;
}

void ConfigPanel::edited(Field& f)
{
    if (m_loading)
        return;
    f.keepRaw = false;
    f.raw = QJsonValue();
    m_derived.remove(f.key);
    updateDerivedDefaults();
    updateApplicability();
    Q_EMIT documentChanged();
}

void ConfigPanel::browseForFile(Field& f)
{
    auto* edit = static_cast<QLineEdit*>(f.editor);
    const QString current = edit->text();
    const QString directory = current.isEmpty() ? QString() : QFileInfo(current).absolutePath();
    const QString chosen = QFileDialog::getOpenFileName(
        this, tr("Choose the data file"), directory,
        tr("Text and tables (*.txt *.tsv *.csv *.text);;All files (*)"));
    if (!chosen.isEmpty())
        edit->setText(chosen);  // textChanged -> edited
}

// ---------------------------------------------------------------------------
// Presentation

void ConfigPanel::updateApplicability()
{
    const bool moe = intValue("model.experts") > 1;
    const bool classification = choiceValue("model.head") != QLatin1String("language_model");
    const qint64 paths = intValue("model.paths");
    const bool listops = choiceValue("task.kind") == QLatin1String("listops");
    const QString tokenizer = choiceValue("task.tokenizer");
    const bool sgd = choiceValue("train.optimizer") == QLatin1String("sgd");
    const QString schedule = choiceValue("train.schedule");
    const bool cpu = choiceValue("train.device") == QLatin1String("cpu");

    for (auto& field : m_fields) {
        Field& f = *field;
        const QString& k = f.key;
        bool applicable = true;
        bool visible = true;
        QString why;
        if (k.startsWith("model.") && (k.endsWith("top_k") || k.contains("capacity_factor")
                                       || k == "model.balance_loss_weight" || k == "model.router_noise_std"
                                       || k.contains("routing_") || k == "model.renormalize_gates"
                                       || k == "model.share_router")) {
            applicable = moe;
            why = tr("only with more than one expert");
        } else if (k == "model.pooling" || k == "model.pooler" || k == "model.num_classes") {
            applicable = classification;
            why = tr("only with a classification head");
        } else if (k == "model.path_extra_features") {
            applicable = paths >= 3 || valueOf(f).toBool();
            why = tr("needs 3 or more paths");
        } else if (k == "task.path" || k == "task.tokenizer" || k == "task.vocab_limit"
                   || k == "task.validation_fraction" || k == "task.test_fraction") {
            visible = !listops;
            if (k == "task.vocab_limit") {
                applicable = tokenizer != QLatin1String("byte");
                why = tr("only with the character or word tokenizer");
            }
        } else if (k == "task.min_length" || k == "task.max_length" || (k.startsWith("task.") && k.endsWith("_size"))) {
            visible = listops;
        } else if (k == "train.beta1" || k == "train.beta2" || k == "train.epsilon") {
            applicable = !sgd;
            why = tr("only with AdamW or LAMB");
        } else if (k == "train.momentum") {
            applicable = sgd;
            why = tr("only with SGD");
        } else if (k == "train.warmup_steps") {
            applicable = schedule != QLatin1String("constant");
            why = tr("the constant schedule has no warmup");
        } else if (k == "train.min_learning_rate_ratio") {
            applicable = schedule == QLatin1String("warmup_cosine");
            why = tr("only with the cosine schedule");
        } else if (k == "train.bf16") {
            applicable = !cpu;
            why = tr("only on CUDA");
        }
        const bool visibilityChanged = visible != f.visible;
        f.visible = visible;
        f.applicable = applicable;
        f.notUsedBecause = applicable ? QString() : why;
        if (visibilityChanged)
            f.form->setRowVisible(f.frame, visible);
        applyEditability(f);
        updateToolTip(f);
    }
}

void ConfigPanel::applyEditability(Field& f)
{
    f.labelWidget->setEnabled(f.applicable);
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(f.editor)) {
        spin->setEnabled(f.applicable);
        spin->setReadOnly(m_readOnly);
        spin->setButtonSymbols(m_readOnly ? QAbstractSpinBox::NoButtons : QAbstractSpinBox::UpDownArrows);
    } else if (auto* line = qobject_cast<QLineEdit*>(f.editor)) {
        line->setEnabled(f.applicable);
        line->setReadOnly(m_readOnly);
    } else if (auto* text = qobject_cast<QPlainTextEdit*>(f.editor)) {
        text->setEnabled(f.applicable);
        text->setReadOnly(m_readOnly);
    } else {
        f.editor->setEnabled(f.applicable && !m_readOnly);
    }
    if (f.browse)
        f.browse->setEnabled(f.applicable && !m_readOnly);
}

void ConfigPanel::updateToolTip(Field& f)
{
    QString tip = QStringLiteral("<p><b>%1</b> (%2)</p><p>%3</p>").arg(f.label.toHtmlEscaped(), f.key, f.tip.toHtmlEscaped());
    if (!f.issue.isEmpty())
        tip.prepend(QStringLiteral("<p style=\"color:#c0480a\"><b>Problem:</b> %1</p>")
                        .arg(f.issue.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
    if (!f.notUsedBecause.isEmpty())
        tip.append(QStringLiteral("<p><i>Not used now: %1.</i></p>").arg(f.notUsedBecause.toHtmlEscaped()));
    f.editor->setToolTip(tip);
    f.labelWidget->setToolTip(tip);
}

void ConfigPanel::applyIssue(Field& f)
{
    const bool marked = !f.issue.isEmpty();
    f.frame->setProperty(kIssueProperty, marked);
    f.editor->setProperty(kIssueProperty, f.issue);
    repolish(f.frame);
    f.issueLabel->setText(f.issue);
    f.issueLabel->setVisible(marked);
    f.editor->setAccessibleDescription(marked ? tr("Problem: %1. %2").arg(f.issue, f.tip) : f.key + QStringLiteral(": ") + f.tip);
    updateToolTip(f);
}

void ConfigPanel::setIssues(const QList<FieldIssue>& issues)
{
    for (auto& field : m_fields)
        field->issue.clear();
    QList<FieldIssue> unmatched;
    for (const FieldIssue& issue : issues) {
        Field* f = fieldFor(issue.key);
        if (!f) {
            unmatched.append(issue);
            continue;
        }
        if (!f->issue.isEmpty())
            f->issue += QLatin1Char('\n');
        f->issue += issue.reason;
    }
    for (auto& field : m_fields) {
        applyIssue(*field);
        // A hidden field's problem would be invisible: list it at the top too.
        if (!field->issue.isEmpty() && !field->visible)
            unmatched.append({field->key, field->issue});
    }
    updateGroupTitles();
    updateDocumentIssues(unmatched);
}

void ConfigPanel::updateGroupTitles()
{
    QHash<QGroupBox*, int> counts;
    for (const auto& f : m_fields)
        if (!f->issue.isEmpty())
            counts[f->group] += 1;
    for (auto it = m_groupTitles.cbegin(); it != m_groupTitles.cend(); ++it) {
        const int n = counts.value(it.key());
        it.key()->setTitle(n == 0   ? it.value()
                           : n == 1 ? tr("%1 (1 problem)").arg(it.value())
                                    : tr("%1 (%2 problems)").arg(it.value()).arg(n));
    }
}

void ConfigPanel::updateDocumentIssues(const QList<FieldIssue>& unmatched)
{
    if (unmatched.isEmpty()) {
        m_documentIssues->clear();
        m_documentIssues->setVisible(false);
        return;
    }
    QStringList lines;
    for (const FieldIssue& issue : unmatched) {
        const QString reason = issue.reason.toHtmlEscaped();
        lines << (issue.key.isEmpty() ? reason : QStringLiteral("<b>%1</b>: %2").arg(issue.key.toHtmlEscaped(), reason));
    }
    m_documentIssues->setText(tr("<b>Problems in the document:</b><br>") + lines.join(QStringLiteral("<br>")));
    m_documentIssues->setVisible(true);
}

void ConfigPanel::setCost(const CostSummary& cost)
{
    if (cost.stored == 0 && cost.flopsPerToken == 0) {
        m_cost->setText(tr("Parameters: not computed yet"));
        return;
    }
    QString text = tr("<b>%1</b> parameters stored · %2 active · %3 applied<br>%4 FLOPs per token")
                       .arg(humanCount(static_cast<double>(cost.stored)), humanCount(static_cast<double>(cost.active)),
                            humanCount(static_cast<double>(cost.applied)), humanCount(cost.flopsPerToken));
    if (cost.memoryBytes > 0)
        text += tr(" · about %1 of memory to train").arg(humanBytes(cost.memoryBytes));
    m_cost->setText(text);
}

void ConfigPanel::setArchitecture(const ArchitectureSketch& sketch) { m_diagram->setSketch(sketch); }

void ConfigPanel::setPresets(const QStringList& names)
{
    const QSignalBlocker blocker(m_presets);
    m_presets->clear();
    m_presets->addItem(names.isEmpty() ? tr("(no presets)") : tr("Load a preset..."), QString());
    for (const QString& name : names)
        m_presets->addItem(name, name);
    m_presets->setCurrentIndex(0);
}

void ConfigPanel::setDevices(const QList<DeviceChoice>& devices)
{
    Field* f = fieldFor("train.device");
    if (!f)
        return;
    auto* combo = static_cast<QComboBox*>(f->editor);
    const QString current = combo->count() > 0 ? combo->currentData().toString() : f->defaultValue.toString();
    const bool wasLoading = m_loading;
    m_loading = true;
    combo->clear();
    QList<DeviceChoice> list = devices;
    if (list.isEmpty())
        list = {{"auto", tr("Automatic (CUDA when available)")}, {"cpu", tr("CPU")}};
    for (const DeviceChoice& device : list)
        combo->addItem(device.label.isEmpty() ? device.id : device.label, device.id);
    selectData(combo, current);
    m_loading = wasLoading;
}

void ConfigPanel::setReadOnly(bool readOnly)
{
    m_readOnly = readOnly;
    m_presets->setEnabled(!readOnly);
    m_readOnlyNote->setVisible(readOnly);
    for (auto& field : m_fields)
        applyEditability(*field);
}

bool ConfigPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::Wheel) {
        auto* widget = qobject_cast<QWidget*>(watched);
        if (widget && !widget->hasFocus()) {
            QCoreApplication::sendEvent(m_scroll->verticalScrollBar(), event);
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace widelab
