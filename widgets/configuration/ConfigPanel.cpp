#include "ConfigPanel.h"
#include "ConfigPanelField.h"

#include "ArchitectureDiagram.h"
#include "CostBreakdown.h"
#include "ConfigPanelLayout.h"
#include "common/Palette.h"
#include "vocab/Format.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFocusEvent>
#include <QFrame>
#include <QGraphicsOpacityEffect>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyle>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widelab {

using Type = FieldSpec::Type;

namespace {

const char* const kDerivedProperty = "widelabDerived";

void repolish(QWidget* widget)
{
    widget->style()->unpolish(widget);
    widget->style()->polish(widget);
    widget->update();
}

// The colour of problems: vermillion, darker on a light window and lighter on a
// dark one, so that it reads on either.
QColor problemColor(const QPalette& palette)
{
    const bool dark = palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
    return dark ? QColor(0xff, 0x8a, 0x50) : QColor(0xc0, 0x48, 0x0a);
}

// Greys mixed from the palette's text and window colours (palette(mid) is about
// the window's own colour in a dark theme, and text drawn in it disappears).
QString styleFor(const QPalette& palette)
{
    const QColor text = palette.color(QPalette::WindowText), window = palette.color(QPalette::Window);
    const QString quiet = palette::blend(text, window, 0.45).name();  // derived values, stale numbers
    const QString rule = palette::blend(text, window, 0.7).name();    // frames
    return QStringLiteral(
               "QFrame#widelabField { border: 2px solid transparent; border-radius: 4px; }"
               "QFrame#widelabField[widelabIssue=\"true\"] { border: 2px solid #d55e00; }"
               "QLabel#widelabIssueText { color: %1; }"
               "*[widelabDerived=\"true\"] { color: %2; font-style: italic; }"
               "QLabel#widelabRule { color: %2; font-style: italic; }"
               "QLabel#widelabCost[widelabStale=\"true\"] { color: %2; }"
               "QLabel#widelabDocumentIssues { border: 1px solid #d55e00; border-radius: 4px; padding: 4px; color: %1; }"
               "QLabel#widelabCost { border: 1px solid %3; border-radius: 4px; padding: 4px; }")
        .arg(problemColor(palette).name(), quiet, rule);
}

}  // namespace

ConfigPanel::ConfigPanel(const QList<FieldSpec>& schema, QWidget* parent) : QWidget(parent)
{
    setStyleSheet(styleFor(palette()));
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
        // The picker keeps showing what the document is until the pick opens
        // (the app then calls showPreset): a cancelled or failed pick changes nothing.
        showPreset(m_shownPreset);
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
                          "<b>FLOPs per token</b>: forward matrix products at max_len tokens; in inference "
                          "fewer for a classifier read at its CLS token, whose last block computes that "
                          "token's row alone.<br>"
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
    buildForm(schema, contentLayout);
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
    m_architecture = new QGroupBox(tr("Architecture"), this);
    m_architecture->setAccessibleName(tr("Architecture"));
    auto* architectureLayout = new QVBoxLayout(m_architecture);
    architectureLayout->setContentsMargins(4, 4, 4, 4);
    m_diagram = new ArchitectureDiagram(m_architecture);
    auto* fade = new QGraphicsOpacityEffect(m_diagram);  // on while the diagram shows the last valid model
    fade->setOpacity(0.35);
    fade->setEnabled(false);
    m_diagram->setGraphicsEffect(fade);
    // A deep model's rows keep a legible height and scroll inside the diagram's
    // share of the dock instead of taking the form's.
    auto* diagramScroll = new QScrollArea(m_architecture);
    diagramScroll->setWidgetResizable(true);
    diagramScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    diagramScroll->setFrameShape(QFrame::NoFrame);
    diagramScroll->setWidget(m_diagram);
    // Beside the diagram, on a tab of its own: what each part costs.
    m_breakdown = new CostBreakdown(m_architecture);
    m_architectureTabs = new QTabWidget(m_architecture);
    m_architectureTabs->setDocumentMode(true);
    m_architectureTabs->addTab(diagramScroll, tr("&Diagram"));
    m_architectureTabs->addTab(m_breakdown, tr("Parameters and &FLOPs"));
    m_architectureTabs->setTabToolTip(1, tr("Parameters and forward FLOPs per token by part, as widelab-cli params "
                                            "prints them"));
    architectureLayout->addWidget(m_architectureTabs);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->setObjectName(QStringLiteral("widelabConfigSplit"));
    split->setChildrenCollapsible(false);
    split->addWidget(m_architecture);
    split->addWidget(m_scroll);
    // However far the diagram is enlarged, the form keeps a few fields in view:
    // the diagram scrolls within what it has, the form is where the edits are.
    m_scroll->setMinimumHeight(10 * fontMetrics().lineSpacing());
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    outer->addWidget(split, 1);

    setDocument(QJsonObject());
}

ConfigPanel::~ConfigPanel() = default;

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
        result << f->key();
    return result;
}

void ConfigPanel::setResolver(Resolver resolver)
{
    m_resolver = std::move(resolver);
    setDocument(document());
}

namespace {

QJsonValue valueIn(const QJsonObject& document, const QString& section, const QString& name)
{
    if (section.isEmpty())
        return document.value(name);
    const QJsonValue inner = document.value(section);
    return inner.isObject() ? inner.toObject().value(name) : QJsonValue(QJsonValue::Undefined);
}

void removeFrom(QJsonObject& document, const QString& section, const QString& name)
{
    QJsonValue inner = document.value(section);
    if (!inner.isObject())
        return;
    QJsonObject object = inner.toObject();
    object.remove(name);
    document.insert(section, object);
}

// Numbers compare by value: 32 and 32.0 are the same head_dim.
bool sameValue(const QJsonValue& a, const QJsonValue& b)
{
    return a.isDouble() && b.isDouble() ? a.toDouble() == b.toDouble() : a == b;
}

}  // namespace

void ConfigPanel::setDocument(const QJsonObject& document)
{
    m_loading = true;
    m_base = document;
    m_set.clear();
    QJsonObject withoutDerived = document;
    for (auto& field : m_fields) {
        Field& f = *field;
        const QJsonValue value = valueIn(document, f.section, f.name);
        if (!value.isUndefined())
            m_set.insert(f.key());
        if (!f.spec.derivedRule.isEmpty())
            removeFrom(withoutDerived, f.section, f.name);
        load(f, value);
    }
    // A derived key holding what its rule gives (a run's config.json holds every
    // key) follows its rule, so that it changes with the keys it derives from.
    if (m_resolver) {
        const QJsonObject resolved = m_resolver(withoutDerived);
        for (auto& field : m_fields) {
            const Field& f = *field;
            if (!f.spec.derivedRule.isEmpty() && m_set.contains(f.key())
                && sameValue(valueIn(document, f.section, f.name), valueIn(resolved, f.section, f.name)))
                m_set.remove(f.key());
        }
    }
    updateDerivedValues();
    m_loading = false;
    updateApplicability();
}

QJsonObject ConfigPanel::document() const
{
    QJsonObject out = m_base;
    // Each section as given, with the panel's keys written when set, removed otherwise.
    QHash<QString, QJsonObject> sections;
    for (const auto& field : m_fields)
        if (!field->section.isEmpty() && !sections.contains(field->section))
            sections.insert(field->section, m_base.value(field->section).toObject());
    for (const auto& field : m_fields) {
        const Field& f = *field;
        const bool set = m_set.contains(f.key());
        const QJsonValue value = valueOf(f);
        if (f.section.isEmpty()) {
            // name and description are written only when they say something.
            if (!set || (value.toString().isEmpty() && !m_base.contains(f.name)))
                out.remove(f.name);
            else
                out.insert(f.name, value);
        } else if (set) {
            sections[f.section].insert(f.name, value);
        } else {
            sections[f.section].remove(f.name);
        }
    }
    for (auto it = sections.cbegin(); it != sections.cend(); ++it)
        if (!it.value().isEmpty() || it.key() == QLatin1String("model") || m_base.contains(it.key()))
            out.insert(it.key(), it.value());
    return out;
}

bool ConfigPanel::isFollowing(const QString& key) const
{
    const Field* f = fieldFor(key);
    return f && !f->spec.derivedRule.isEmpty() && !m_set.contains(key);
}

void ConfigPanel::followRule(const QString& key)
{
    if (!fieldFor(key) || fieldFor(key)->spec.derivedRule.isEmpty())
        return;
    m_set.remove(key);
    updateDerivedValues();
    updateApplicability();
}

// Derived keys the user has not set show what the core computes from the keys
// they follow (model.head_dim = d_model / heads, ...), kept up to date.
void ConfigPanel::updateDerivedValues()
{
    const bool wasLoading = m_loading;
    m_loading = true;
    QJsonObject resolved;
    for (auto& field : m_fields) {
        Field& f = *field;
        if (f.spec.derivedRule.isEmpty())
            continue;
        if (!m_set.contains(f.key())) {
            if (m_resolver && resolved.isEmpty())
                resolved = m_resolver(document());
            const QJsonValue value = valueIn(resolved, f.section, f.name);
            load(f, value.isUndefined() ? f.spec.defaultValue : value);
        }
        applyDerived(f);
    }
    m_loading = wasLoading;
}

void ConfigPanel::edited(Field& f)
{
    if (m_loading)
        return;
    f.keepRaw = false;
    f.raw = QJsonValue();
    m_set.insert(f.key());
    updateDerivedValues();
    updateApplicability();
    Q_EMIT documentChanged();
}

void ConfigPanel::browseForFile(Field& f)
{
    auto* edit = static_cast<QLineEdit*>(f.editor);
    const QString current = edit->text();
    if (f.spec.type == FieldSpec::Type::RunFolder) {
        const QString chosen = QFileDialog::getExistingDirectory(
            this, tr("Choose the run whose weights this run starts from"),
            current.isEmpty() ? QString() : QFileInfo(current).absolutePath());
        if (!chosen.isEmpty())
            edit->setText(chosen);  // textChanged -> edited
        return;
    }
    const PathChoice choice = pathChoice(f.key(), [this](const QString& key) {
        const Field* other = fieldFor(key);
        return other ? valueOf(*other) : QJsonValue();
    });
    const QString chosen =
        choice.folder ? QFileDialog::getExistingDirectory(this, choice.title, current)
                      : QFileDialog::getOpenFileName(this, choice.title,
                                                     current.isEmpty() ? QString() : QFileInfo(current).absolutePath(),
                                                     choice.filter);
    if (!chosen.isEmpty())
        edit->setText(chosen);  // textChanged -> edited
}

// ---------------------------------------------------------------------------
// Presentation

void ConfigPanel::updateApplicability()
{
    const auto value = [this](const QString& key) {
        const Field* f = fieldFor(key);
        return f ? valueOf(*f) : QJsonValue();
    };
    for (auto& field : m_fields) {
        Field& f = *field;
        FieldState state = fieldState(f.key(), value);
        if (!f.familyChoice.isEmpty())
            state.visible = familyChoiceInUse(f.familyChoice, value);
        const bool visibilityChanged = state.visible != f.visible;
        f.visible = state.visible;
        f.applicable = state.applicable;
        f.notUsedBecause = state.applicable ? QString() : state.notUsedBecause;
        if (visibilityChanged)
            f.form->setRowVisible(f.frame, f.visible);
        if (f.browse != nullptr && f.key() == QLatin1String("train.probes"))
            f.browse->setVisible(value(QStringLiteral("model.input")).toString() == QLatin1String("image"));
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
    if (f.follow)
        f.follow->setEnabled(f.applicable && !m_readOnly);
}

void ConfigPanel::updateToolTip(Field& f)
{
    QString tip = QStringLiteral("<p><b>%1</b> (%2)</p><p>%3</p>").arg(f.label.toHtmlEscaped(), f.key(), f.tip.toHtmlEscaped());
    if (!f.issue.isEmpty())
        tip.prepend(QStringLiteral("<p style=\"color:%1\"><b>Problem:</b> %2</p>")
                        .arg(problemColor(palette()).name(), f.issue.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
    if (!f.spec.derivedRule.isEmpty())
        tip.append(m_set.contains(f.key())
                       ? tr("<p>Set here; by default it follows <b>%1</b>.</p>").arg(f.spec.derivedRule.toHtmlEscaped())
                       : tr("<p>Follows <b>%1</b> until you set a value.</p>").arg(f.spec.derivedRule.toHtmlEscaped()));
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
    f.editor->setAccessibleDescription(marked ? tr("Problem: %1. %2").arg(f.issue, f.tip) : f.key() + QStringLiteral(": ") + f.tip);
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
            unmatched.append({field->key(), field->issue});
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
    m_hasCost = cost.stored != 0 || cost.flopsPerToken != 0;
    const auto q = [](const std::string& text) { return QString::fromStdString(text); };
    m_costText = tr("<b>%1</b> parameters stored · %2 active · %3 applied<br>%4 FLOPs per token")
                     .arg(q(shortCount(static_cast<double>(cost.stored))), q(shortCount(static_cast<double>(cost.active))),
                          q(shortCount(static_cast<double>(cost.applied))), q(shortCount(cost.flopsPerToken)));
    if (cost.inferenceFlopsPerToken > 0 && cost.inferenceFlopsPerToken < cost.flopsPerToken)
        m_costText += tr(" (%1 in inference)").arg(q(shortCount(cost.inferenceFlopsPerToken)));
    if (cost.memoryBytes > 0)
        m_costText += tr(" · about %1 of memory to train").arg(q(formatBytes(static_cast<double>(cost.memoryBytes))));
    if (m_breakdown)
        m_breakdown->setCost(cost);
    updateModelCurrency();
}

void ConfigPanel::setArchitecture(const ArchitectureSketch& sketch) { m_diagram->setSketch(sketch); }

void ConfigPanel::setModelCurrent(bool current)
{
    m_modelCurrent = current;
    updateModelCurrency();
}

QString ConfigPanel::costText() const { return m_cost->text(); }

// While the form has problems the numbers and the diagram are those of the last
// valid model: they say so, greyed, rather than pass for the form's.
void ConfigPanel::updateModelCurrency()
{
    const bool stale = !m_modelCurrent;
    if (!stale)
        m_cost->setText(m_hasCost ? m_costText : tr("Parameters: not computed yet"));
    else if (m_hasCost)
        m_cost->setText(tr("<i>Last valid model (the form has problems):</i><br>%1").arg(m_costText));
    else
        m_cost->setText(tr("<i>No valid model yet: the form has problems.</i>"));
    m_cost->setProperty("widelabStale", stale);
    repolish(m_cost);
    if (!m_architecture)
        return;  // setCost from the constructor, before the diagram exists
    m_architecture->setTitle(stale ? tr("Architecture: last valid model (the form has problems)") : tr("Architecture"));
    m_diagram->graphicsEffect()->setEnabled(stale);
    m_breakdown->setStale(stale);
}

void ConfigPanel::setPresets(const QStringList& names)
{
    QList<PresetChoice> presets;
    for (const QString& name : names)
        presets.push_back({name, name, QString(), QString()});
    setPresetChoices(presets);
}

void ConfigPanel::setPresetChoices(const QList<PresetChoice>& presets)
{
    const QSignalBlocker blocker(m_presets);
    m_presets->clear();
    m_presets->addItem(presets.isEmpty() ? tr("(no presets)") : tr("Load a preset..."), QString());
    // Groups in the order first met, each under a heading that cannot be picked.
    QStringList groups;
    for (const PresetChoice& preset : presets)
        if (!groups.contains(preset.group))
            groups.append(preset.group);
    auto* model = qobject_cast<QStandardItemModel*>(m_presets->model());
    for (const QString& group : groups) {
        if (!group.isEmpty()) {
            m_presets->addItem(group);
            if (QStandardItem* heading = model ? model->item(m_presets->count() - 1) : nullptr) {
                heading->setFlags(heading->flags() & ~(Qt::ItemIsEnabled | Qt::ItemIsSelectable));
                QFont bold = heading->font();
                bold.setBold(true);
                heading->setFont(bold);
            }
        }
        for (const PresetChoice& preset : presets) {
            if (preset.group != group)
                continue;
            const QString title = preset.title.isEmpty() ? preset.id : preset.title;
            m_presets->addItem(title, preset.id);  // under its bold heading
            const QString tip = preset.description.isEmpty() ? preset.id : preset.description + QStringLiteral("\n(") + preset.id + QLatin1Char(')');
            m_presets->setItemData(m_presets->count() - 1, tip, Qt::ToolTipRole);
        }
    }
    showPreset(m_shownPreset);
}

void ConfigPanel::showPreset(const QString& name)
{
    const QSignalBlocker blocker(m_presets);
    const int index = name.isEmpty() ? -1 : m_presets->findData(name);
    m_shownPreset = index > 0 ? name : QString();
    m_presets->setCurrentIndex(std::max(index, 0));
}

void ConfigPanel::setDevices(const QList<DeviceChoice>& devices)
{
    QList<DeviceChoice> list = devices;
    if (list.isEmpty())
        list = {{"auto", tr("Automatic (CUDA when available)")}, {"cpu", tr("CPU")}};
    const bool wasLoading = m_loading;
    m_loading = true;
    for (auto& field : m_fields) {
        if (field->spec.type != Type::Device || !field->editor)
            continue;
        auto* combo = static_cast<QComboBox*>(field->editor);
        const QString current = combo->count() > 0 ? combo->currentData().toString() : field->spec.defaultValue.toString();
        combo->clear();
        for (const DeviceChoice& device : list)
            combo->addItem(device.label.isEmpty() ? device.id : device.label, device.id);
        selectData(combo, current);
    }
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

// The wheel scrolls the form. It changes a spin box or a combo only when the user
// works in that field: clicked into it and kept the pointer there. A field that
// has the focus from an earlier click or from Tab does not take it, so that
// scrolling the form never changes a value the user did not pick.
// A theme switch: the problem colour follows the window's lightness.
void ConfigPanel::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() != QEvent::PaletteChange)
        return;
    const QString style = styleFor(palette());
    if (style != styleSheet())
        setStyleSheet(style);
    for (auto& field : m_fields)
        updateToolTip(*field);
}

bool ConfigPanel::eventFilter(QObject* watched, QEvent* event)
{
    auto* widget = qobject_cast<QWidget*>(watched);
    if (!widget)
        return QWidget::eventFilter(watched, event);
    // A spin box's inner line edit speaks for the spin box.
    QWidget* editor = qobject_cast<QAbstractSpinBox*>(widget->parentWidget()) ? widget->parentWidget() : widget;
    switch (event->type()) {
    case QEvent::MouseButtonPress:
        m_wheelTarget = editor;
        break;
    case QEvent::FocusIn:
        if (static_cast<QFocusEvent*>(event)->reason() == Qt::MouseFocusReason)
            m_wheelTarget = editor;
        break;
    case QEvent::Leave:  // the pointer left the editor (not just its line edit for its arrows)
        if (widget == m_wheelTarget)
            m_wheelTarget = nullptr;
        break;
    case QEvent::FocusOut:
        if (editor == m_wheelTarget)
            m_wheelTarget = nullptr;
        break;
    case QEvent::Wheel:
        if (editor != m_wheelTarget || !editor->hasFocus()) {
            QCoreApplication::sendEvent(m_scroll->verticalScrollBar(), event);
            return true;
        }
        break;
    default:
        break;
    }
    return QWidget::eventFilter(watched, event);
}

QString ConfigPanel::groupOf(const QString& key) const
{
    const Field* f = fieldFor(key);
    return f && f->group ? m_groupTitles.value(f->group) : QString();
}

void ConfigPanel::applyDerived(Field& f)
{
    const bool following = !m_set.contains(f.key());
    f.editor->setProperty(kDerivedProperty, following);
    repolish(f.editor);
    f.ruleLabel->setVisible(following);
    f.follow->setVisible(!following);
    updateToolTip(f);
}

}  // namespace widelab
