// ConfigPanel's form: its groups and one editor a key (spin box, combo, check box,
// line or text edit, with browse, follow and issue parts), and what an editor
// holds as a document value and back. The document, the applicability and the
// presentation are ConfigPanel.cpp's.
#include "ConfigPanel.h"
#include "ConfigPanelField.h"

#include "insights/ImageProbeDialog.h"
#include "NumberSpinBox.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace widelab {

using Type = FieldSpec::Type;

namespace {

constexpr int kIntMax = std::numeric_limits<int>::max();
const QString kUnknownChoice = QStringLiteral(" (not in the list)");
constexpr int kUnknownRole = Qt::UserRole + 1;

bool isIntegral(const QJsonValue& value)
{
    if (!value.isDouble())
        return false;
    const double d = value.toDouble();
    return std::isfinite(d) && std::floor(d) == d;
}

}  // namespace

void removeUnknownItems(QComboBox* combo)
{
    for (int i = combo->count() - 1; i >= 0; --i)
        if (combo->itemData(i, kUnknownRole).toBool())
            combo->removeItem(i);
}

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

// ---------------------------------------------------------------------------
// Building the form

QFormLayout* ConfigPanel::addGroup(const QString& title, QVBoxLayout* content)
{
    auto* group = new QGroupBox(title);
    group->setAccessibleName(title);
    m_groupTitles.insert(group, title);
    auto* form = new QFormLayout(group);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setVerticalSpacing(2);
    content->addWidget(group);
    return form;
}

// The groups of the layout, each with the schema's keys it names, then "Other"
// for the schema's keys no group names.
void ConfigPanel::buildForm(const QList<FieldSpec>& schema, QVBoxLayout* content)
{
    QHash<QString, const FieldSpec*> specs;
    for (const FieldSpec& spec : schema)
        specs.insert(spec.key, &spec);
    const KeyFamily& family = attentionFamily();
    const FieldSpec* familyKey = specs.value(family.key);
    const QStringList familyChoices = familyKey ? familyKey->choices : QStringList();
    for (const FieldGroup& group : configPanelLayout()) {
        QFormLayout* form = nullptr;
        const FieldPlacement* familyPlacement = nullptr;
        for (const FieldPlacement& placement : group.fields) {
            const FieldSpec* spec = specs.value(placement.key);
            if (!spec)
                continue;
            if (!form)
                form = addGroup(group.title, content);
            addField(form, *spec, &placement);
            if (placement.key == family.key)
                familyPlacement = &placement;
        }
        // The family's members after the group that holds its key, in schema order.
        for (const FieldSpec& spec : schema) {
            const QString choice = familyPlacement ? familyChoiceOf(spec.key, familyChoices) : QString();
            if (choice.isEmpty() || m_byKey.contains(spec.key))
                continue;
            addField(form, spec, nullptr);
            Field& f = *m_byKey.value(spec.key);
            f.familyChoice = choice;
            QString choiceText = choice;
            for (const auto& [value, text] : familyPlacement->choiceTexts)
                if (value == choice)
                    choiceText = text.section(QStringLiteral(" ("), 0, 0);
            f.label = choiceText + QStringLiteral(": ") + f.name.mid(choice.size() + 1).replace(QLatin1Char('_'), QLatin1Char(' '));
            if (f.labelWidget)
                f.labelWidget->setText(f.label);
            f.editor->setAccessibleName(f.label);
        }
    }
    QFormLayout* other = nullptr;
    for (const FieldSpec& spec : schema) {
        if (m_byKey.contains(spec.key))
            continue;
        if (!other)
            other = addGroup(tr("Other"), content);
        addField(other, spec, nullptr);
    }
}

// `placement` null: a key the layout does not know, labelled by its key.
void ConfigPanel::addField(QFormLayout* form, const FieldSpec& spec, const FieldPlacement* placement)
{
    auto field = std::make_unique<Field>();
    Field& f = *field;
    f.spec = spec;
    const int dot = static_cast<int>(spec.key.indexOf(QLatin1Char('.')));
    f.section = dot < 0 ? QString() : spec.key.left(dot);
    f.name = dot < 0 ? spec.key : spec.key.mid(dot + 1);
    f.placement = placement;
    f.label = placement ? placement->label : spec.key;
    f.tip = placement && !placement->tip.isEmpty() ? placement->tip : spec.description;
    f.form = form;
    f.group = qobject_cast<QGroupBox*>(form->parentWidget());
    m_byKey.insert(spec.key, &f);
    m_fields.push_back(std::move(field));
    makeEditor(f);
}

QWidget* ConfigPanel::makeEditor(Field& f)
{
    const FieldPlacement* place = f.placement;
    QWidget* editor = nullptr;
    switch (f.spec.type) {
    case Type::Integer: {
        auto* spin = new QSpinBox;
        spin->setRange(static_cast<int>(f.spec.min), static_cast<int>(std::min<double>(f.spec.max, kIntMax)));
        spin->setGroupSeparatorShown(f.spec.max >= 100000);
        if (place && !place->special.isEmpty())
            spin->setSpecialValueText(place->special);
        connect(spin, &QSpinBox::valueChanged, this, [this, &f] { edited(f); });
        editor = spin;
        break;
    }
    case Type::Number: {
        auto* spin = new NumberSpinBox;
        spin->setAdvisedRange(f.spec.min, f.spec.max);
        spin->setSingleStep(place ? place->step : 0.1);
        spin->setLogarithmic(place && place->logarithmic);
        connect(spin, &QDoubleSpinBox::valueChanged, this, [this, &f] { edited(f); });
        editor = spin;
        break;
    }
    case Type::Boolean: {
        auto* box = new QCheckBox;
        connect(box, &QCheckBox::toggled, this, [this, &f] { edited(f); });
        editor = box;
        break;
    }
    case Type::Choice:
    case Type::Device: {
        auto* combo = new QComboBox;
        for (const QString& value : f.spec.choices) {
            QString text = value;
            for (const auto& [choice, shown] : place ? place->choiceTexts : FieldPlacement::ChoiceTexts())
                if (choice == value)
                    text = shown;
            combo->addItem(text, value);
        }
        connect(combo, &QComboBox::currentIndexChanged, this, [this, &f] { edited(f); });
        editor = combo;
        break;
    }
    case Type::Text:
    case Type::FilePath:
    case Type::RunFolder: {
        auto* edit = new QLineEdit;
        edit->setClearButtonEnabled(f.spec.type == Type::Text);
        if (f.spec.type == Type::FilePath)
            edit->setPlaceholderText(tr("path to a text file"));
        else if (f.spec.type == Type::RunFolder)
            edit->setPlaceholderText(tr("none, or a run folder (RUN or RUN:STEP)"));
        connect(edit, &QLineEdit::textChanged, this, [this, &f] { edited(f); });
        editor = edit;
        break;
    }
    case Type::TextList: {
        auto* edit = new QPlainTextEdit;
        edit->setTabChangesFocus(true);
        edit->setLineWrapMode(QPlainTextEdit::NoWrap);
        edit->setPlaceholderText(f.key() == attentionFamily().mixKey ? tr("one mechanism per line") : tr("one text per line"));
        edit->setFixedHeight(edit->fontMetrics().lineSpacing() * 4 + 12);
        connect(edit, &QPlainTextEdit::textChanged, this, [this, &f] { edited(f); });
        editor = edit;
        break;
    }
    }
    f.editor = editor;
    editor->setObjectName(f.key());
    editor->setAccessibleName(f.label);
    editor->setAccessibleDescription(f.key() + QStringLiteral(": ") + f.tip);

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
    if (f.spec.type == Type::FilePath || f.spec.type == Type::RunFolder) {
        f.browse = new QPushButton(tr("Browse..."), f.frame);
        f.browse->setAccessibleName(tr("Browse for %1").arg(f.label));
        f.browse->setToolTip(f.spec.type == Type::RunFolder ? tr("Choose the run to start from")
                                                            : tr("Choose the data file"));
        row->addWidget(f.browse);
        connect(f.browse, &QPushButton::clicked, this, [this, &f] { browseForFile(f); });
    } else if (f.key() == QLatin1String("train.probes")) {
        // Image models: a probe is "validation:N" or an image file, picked in a dialog.
        f.browse = new QPushButton(tr("Add image..."), f.frame);
        f.browse->setAccessibleName(tr("Add an image probe"));
        f.browse->setToolTip(tr("Add a validation example by number, or a PNG or JPEG file"));
        f.browse->setVisible(false);
        row->addWidget(f.browse, 0, Qt::AlignTop);
        connect(f.browse, &QPushButton::clicked, this, [this, &f] {
            ImageProbeDialog dialog(this);
            if (dialog.exec() == QDialog::Accepted && !dialog.probe().isEmpty())
                static_cast<QPlainTextEdit*>(f.editor)->appendPlainText(dialog.probe());  // textChanged -> edited
        });
    }
    if (!f.spec.derivedRule.isEmpty()) {
        f.ruleLabel = new QLabel(QStringLiteral("= ") + f.spec.derivedRule, f.frame);
        f.ruleLabel->setObjectName(QStringLiteral("widelabRule"));
        f.ruleLabel->setToolTip(tr("Follows %1 until you set a value").arg(f.spec.derivedRule));
        row->addWidget(f.ruleLabel);
        f.follow = new QToolButton(f.frame);
        f.follow->setText(QStringLiteral("\u21BA"));
        f.follow->setAccessibleName(tr("Follow %1 again").arg(f.spec.derivedRule));
        f.follow->setToolTip(tr("Forget the value set here: follow %1 again").arg(f.spec.derivedRule));
        row->addWidget(f.follow);
        connect(f.follow, &QToolButton::clicked, this, [this, &f] {
            followRule(f.key());
            Q_EMIT documentChanged();
        });
    }
    f.issueLabel = new QLabel(f.frame);
    f.issueLabel->setObjectName(QStringLiteral("widelabIssueText"));
    f.issueLabel->setWordWrap(true);
    f.issueLabel->setVisible(false);
    column->addWidget(f.issueLabel);

    f.labelWidget = new QLabel(f.label);
    f.labelWidget->setBuddy(editor);
    f.form->addRow(f.labelWidget, f.frame);

    // Spin boxes and combos inside a scroll area must not take the wheel while
    // the user scrolls past them (eventFilter); the line edit inside a spin box
    // says when the user clicks or types in it.
    if (qobject_cast<QAbstractSpinBox*>(editor) || qobject_cast<QComboBox*>(editor)) {
        editor->setFocusPolicy(Qt::StrongFocus);
        editor->installEventFilter(this);
        if (auto* inner = editor->findChild<QLineEdit*>())
            inner->installEventFilter(this);
    }
    if (f.spec.type == Type::Device)
        setDevices({});
    updateToolTip(f);
    return editor;
}

// ---------------------------------------------------------------------------
// What an editor holds

QJsonValue ConfigPanel::valueOf(const Field& f) const
{
    if (f.keepRaw)
        return f.raw;
    switch (f.spec.type) {
    case Type::Integer:
        return QJsonValue(static_cast<qint64>(static_cast<QSpinBox*>(f.editor)->value()));
    case Type::Number:
        return QJsonValue(static_cast<NumberSpinBox*>(f.editor)->value());
    case Type::Boolean:
        return QJsonValue(static_cast<QCheckBox*>(f.editor)->isChecked());
    case Type::Choice:
    case Type::Device:
        return QJsonValue(static_cast<QComboBox*>(f.editor)->currentData().toString());
    case Type::Text:
    case Type::FilePath:
    case Type::RunFolder:
        return QJsonValue(static_cast<QLineEdit*>(f.editor)->text());
    case Type::TextList: {
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
    const QJsonValue value = given.isUndefined() ? f.spec.defaultValue : given;
    f.keepRaw = false;
    f.raw = QJsonValue();
    bool shown = false;
    switch (f.spec.type) {
    case Type::Integer: {
        auto* spin = static_cast<QSpinBox*>(f.editor);
        // The core's range, widened to show an out-of-range value the checks will report.
        const double v = value.toDouble();
        if (isIntegral(value) && v >= std::numeric_limits<int>::min() && v <= kIntMax) {
            spin->setRange(static_cast<int>(std::min(f.spec.min, v)),
                           static_cast<int>(std::min(std::max(f.spec.max, v), double(kIntMax))));
            spin->setValue(static_cast<int>(v));
            shown = true;
        }
        break;
    }
    case Type::Number: {
        auto* spin = static_cast<NumberSpinBox*>(f.editor);
        if (value.isDouble() && std::isfinite(value.toDouble())) {
            spin->setValue(value.toDouble());  // outside the key's range too: the checks report it
            shown = true;
        }
        break;
    }
    case Type::Boolean:
        if (value.isBool()) {
            static_cast<QCheckBox*>(f.editor)->setChecked(value.toBool());
            shown = true;
        }
        break;
    case Type::Choice:
    case Type::Device: {
        auto* combo = static_cast<QComboBox*>(f.editor);
        removeUnknownItems(combo);
        if (value.isString()) {
            selectData(combo, value.toString());
            shown = true;
        }
        break;
    }
    case Type::Text:
    case Type::FilePath:
    case Type::RunFolder:
        if (value.isString()) {
            static_cast<QLineEdit*>(f.editor)->setText(value.toString());
            static_cast<QLineEdit*>(f.editor)->setCursorPosition(0);  // show the start of a long text
            shown = true;
        }
        break;
    case Type::TextList:
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
        if (f.spec.defaultValue != value)
            load(f, f.spec.defaultValue);
        f.keepRaw = true;
        f.raw = value;
    }
}

}  // namespace widelab
