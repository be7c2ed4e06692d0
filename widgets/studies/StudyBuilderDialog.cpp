#include "StudyBuilderDialog.h"

#include "common/ViewExport.h"

#include <QComboBox>
#include <QCompleter>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStyledItemDelegate>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace widelab {
namespace {

enum Column { Keys, Values, Label, Solve, ColumnCount };

QJsonValue parseItem(const QString& text)
{
    const QString item = text.trimmed();
    // A bare word is text; numbers, booleans and quoted text read as JSON does.
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray("[") + item.toUtf8() + "]");
    if (document.isArray() && document.array().size() == 1)
        return document.array().at(0);
    return item;
}

// The keys column offers the schema's keys as one types (after a comma, too).
class KeysDelegate : public QStyledItemDelegate {
public:
    KeysDelegate(QStringList keys, QObject* parent) : QStyledItemDelegate(parent), m_keys(std::move(keys)) {}
    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override
    {
        auto* editor = new QLineEdit(parent);
        auto* completer = new QCompleter(m_keys, editor);
        completer->setCaseSensitivity(Qt::CaseInsensitive);
        completer->setFilterMode(Qt::MatchContains);
        editor->setCompleter(completer);
        return editor;
    }

private:
    QStringList m_keys;
};

// The layers x heads pairs of `resolved`'s total heads, deepest first: the Wide
// Attention paper's axis for this configuration.
QString aspectRatioValues(const QJsonObject& resolved)
{
    const QJsonObject model = resolved.value(QStringLiteral("model")).toObject();
    const int layers = model.value(QStringLiteral("layers")).toInt();
    const int heads = model.value(QStringLiteral("heads")).toInt();
    QStringList values;
    for (int l = layers; l >= 1; --l)
        if ((layers * heads) % l == 0)
            values << QStringLiteral("%1 %2").arg(l).arg(layers * heads / l);
    return values.join(QStringLiteral("; "));
}

}  // namespace

StudyBuilderDialog::StudyBuilderDialog(const QJsonObject& base, const QJsonObject& resolved,
                                       const QList<FieldSpec>& fields, Validator validator, QWidget* parent)
    : QDialog(parent), m_base(base), m_fields(fields), m_validator(std::move(validator))
{
    setObjectName(QStringLiteral("studyBuilder"));
    setWindowTitle(tr("New Study from Configuration"));
    const QString baseName = base.value(QStringLiteral("name")).toString();

    m_name = new QLineEdit(this);
    m_name->setObjectName(QStringLiteral("studyName"));
    m_name->setText(baseName.isEmpty() ? tr("My study") : tr("%1: aspect ratio").arg(baseName));

    m_axes = new QTableWidget(0, ColumnCount, this);
    m_axes->setObjectName(QStringLiteral("studyAxes"));
    m_axes->setHorizontalHeaderLabels({tr("keys"), tr("values"), tr("label"), tr("solve for (same parameters)")});
    m_axes->horizontalHeader()->setSectionResizeMode(Values, QHeaderView::Stretch);
    m_axes->verticalHeader()->setVisible(false);
    QStringList keys;
    for (const FieldSpec& field : fields)
        if (field.key.contains(QLatin1Char('.')))
            keys << field.key;
    m_axes->setItemDelegateForColumn(Keys, new KeysDelegate(keys, m_axes));
    m_axes->setToolTip(tr("keys: one dotted key of the configuration (model.heads), or several set together, "
                          "comma-separated.\nvalues: 4, 8, 16 for one key; for several, one group per value: "
                          "6 8; 3 16; 2 24.\nsolve for: an integer width key (model.d_model) chosen for each value "
                          "so that the stored parameter count stays the configuration's."));
    auto* addAxis = new QPushButton(tr("Add Axis"), this);
    auto* removeAxis = new QPushButton(tr("Remove Axis"), this);

    m_combine = new QComboBox(this);
    m_combine->addItem(tr("every combination (grid)"), QStringLiteral("grid"));
    m_combine->addItem(tr("side by side (paired)"), QStringLiteral("paired"));
    m_seeds = new QSpinBox(this);
    m_seeds->setObjectName(QStringLiteral("studyBuilderSeeds"));
    m_seeds->setRange(1, 100);
    m_seeds->setValue(2);
    m_steps = new QSpinBox(this);
    m_steps->setObjectName(QStringLiteral("studyBuilderSteps"));
    m_steps->setRange(1, 10'000'000);
    m_baseSteps = resolved.value(QStringLiteral("train")).toObject().value(QStringLiteral("steps")).toInt(1000);
    m_headDim = resolved.value(QStringLiteral("model")).toObject().value(QStringLiteral("head_dim")).toInt(0);
    m_steps->setValue(m_baseSteps);

    m_result = new QLabel(this);
    m_result->setObjectName(QStringLiteral("studyCheck"));
    m_result->setWordWrap(true);
    m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* buttons = new QDialogButtonBox(this);
    m_start = buttons->addButton(tr("Start Study"), QDialogButtonBox::AcceptRole);
    auto* save = buttons->addButton(tr("Save As..."), QDialogButtonBox::ActionRole);
    save->setToolTip(tr("Write the study document, to run later or with widelab-cli study"));
    buttons->addButton(QDialogButtonBox::Cancel);

    auto* form = new QFormLayout;
    form->addRow(tr("Name:"), m_name);
    form->addRow(tr("Combine the axes:"), m_combine);
    form->addRow(tr("Seeds per point:"), m_seeds);
    form->addRow(tr("Steps per member:"), m_steps);
    auto* axisButtons = new QHBoxLayout;
    axisButtons->addWidget(addAxis);
    axisButtons->addWidget(removeAxis);
    axisButtons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("Every member is the configuration with one value of each axis (docs/studies.md)."),
                                 this));
    layout->addWidget(m_axes, 1);
    layout->addLayout(axisButtons);
    layout->addLayout(form);
    layout->addWidget(m_result);
    layout->addWidget(buttons);
    m_axes->horizontalHeader()->setSectionResizeMode(Label, QHeaderView::ResizeToContents);
    m_axes->horizontalHeader()->setSectionResizeMode(Solve, QHeaderView::ResizeToContents);
    resize(900, 440);

    addAxisRow(QStringLiteral("model.layers, model.heads"), aspectRatioValues(resolved), tr("aspect ratio (layers x heads)"),
               QString());

    m_checkTimer.setSingleShot(true);
    m_checkTimer.setInterval(300);
    connect(&m_checkTimer, &QTimer::timeout, this, &StudyBuilderDialog::check);
    const auto later = [this] { m_checkTimer.start(); };
    connect(m_axes, &QTableWidget::itemChanged, this, later);
    connect(m_name, &QLineEdit::textChanged, this, later);
    connect(m_combine, &QComboBox::currentIndexChanged, this, later);
    connect(m_seeds, &QSpinBox::valueChanged, this, later);
    connect(m_steps, &QSpinBox::valueChanged, this, later);
    connect(addAxis, &QPushButton::clicked, this, [this] {
        addAxisRow(QString(), QString(), QString(), QString());
        m_axes->setCurrentCell(m_axes->rowCount() - 1, Keys);
        m_axes->editItem(m_axes->item(m_axes->rowCount() - 1, Keys));
    });
    connect(removeAxis, &QPushButton::clicked, this, [this] {
        if (m_axes->rowCount() > 0)
            m_axes->removeRow(m_axes->currentRow() >= 0 ? m_axes->currentRow() : m_axes->rowCount() - 1);
        m_checkTimer.start();
    });
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        check();
        if (m_valid)
            accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(save, &QPushButton::clicked, this, &StudyBuilderDialog::saveAs);
    check();
}

void StudyBuilderDialog::addAxisRow(const QString& keys, const QString& values, const QString& label,
                                    const QString& solve)
{
    const int row = m_axes->rowCount();
    m_axes->insertRow(row);
    const QStringList cells{keys, values, label, solve};
    for (int column = 0; column < ColumnCount; ++column)
        m_axes->setItem(row, column, new QTableWidgetItem(cells.at(column)));
    m_axes->item(row, Values)->setToolTip(tr("4, 8, 16 for one key; 6 8; 3 16; 2 24 for two keys set together"));
    m_axes->resizeColumnToContents(Keys);
}

void StudyBuilderDialog::setAxis(int row, const QString& keys, const QString& values, const QString& label,
                                 const QString& solve)
{
    while (m_axes->rowCount() <= row)
        addAxisRow(QString(), QString(), QString(), QString());
    const QStringList cells{keys, values, label, solve};
    for (int column = 0; column < ColumnCount; ++column)
        m_axes->item(row, column)->setText(cells.at(column));
}

int StudyBuilderDialog::axisCount() const
{
    return m_axes->rowCount();
}

void StudyBuilderDialog::setName(const QString& name)
{
    m_name->setText(name);
}

void StudyBuilderDialog::setSeeds(int seeds)
{
    m_seeds->setValue(seeds);
}

void StudyBuilderDialog::setSteps(int steps)
{
    m_steps->setValue(steps);
}

void StudyBuilderDialog::setPaired(bool paired)
{
    m_combine->setCurrentIndex(paired ? 1 : 0);
}

QJsonArray StudyBuilderDialog::parseValues(const QString& text, int keyCount)
{
    QJsonArray values;
    const bool groups = keyCount > 1;
    static const QRegularExpression groupSeparator(QStringLiteral("\\s*;\\s*"));
    static const QRegularExpression itemSeparator(QStringLiteral("\\s*,\\s*"));
    static const QRegularExpression groupItemSeparator(QStringLiteral("[\\s,]+"));
    const QStringList parts = text.trimmed().split(groups || text.contains(QLatin1Char(';')) ? groupSeparator : itemSeparator,
                                                   Qt::SkipEmptyParts);
    for (const QString& part : parts) {
        if (!groups) {
            values.append(parseItem(part));
            continue;
        }
        QJsonArray group;
        for (const QString& item : part.trimmed().split(groupItemSeparator, Qt::SkipEmptyParts))
            group.append(parseItem(item));
        values.append(group);
    }
    return values;
}

QJsonObject StudyBuilderDialog::study() const
{
    QJsonObject document;
    document.insert(QStringLiteral("name"), m_name->text().trimmed());
    const QString baseName = m_base.value(QStringLiteral("name")).toString();
    document.insert(QStringLiteral("description"),
                    tr("Built in the desktop app from the configuration \"%1\".").arg(baseName));
    document.insert(QStringLiteral("base"), m_base);
    QJsonObject set;
    if (m_steps->value() != m_baseSteps)
        set.insert(QStringLiteral("train.steps"), m_steps->value());
    QJsonArray axes;
    for (int row = 0; row < m_axes->rowCount(); ++row) {
        static const QRegularExpression keySeparator(QStringLiteral("[\\s,]+"));
        const QStringList keys = m_axes->item(row, Keys)->text().split(keySeparator, Qt::SkipEmptyParts);
        QJsonObject axis;
        if (keys.size() == 1)
            axis.insert(QStringLiteral("key"), keys.front());
        else
            axis.insert(QStringLiteral("keys"), QJsonArray::fromStringList(keys));
        axis.insert(QStringLiteral("values"), parseValues(m_axes->item(row, Values)->text(), int(keys.size())));
        if (const QString label = m_axes->item(row, Label)->text().trimmed(); !label.isEmpty())
            axis.insert(QStringLiteral("label"), label);
        if (const QString solve = m_axes->item(row, Solve)->text().trimmed(); !solve.isEmpty()) {
            axis.insert(QStringLiteral("solve"), solve);
            axis.insert(QStringLiteral("keep"), QStringLiteral("parameters"));
        }
        axes.append(axis);
    }
    document.insert(QStringLiteral("axes"), axes);
    // Heads keep their width as their number changes (the Wide Attention paper's
    // shapes): a head_dim the configuration leaves to d_model / heads is fixed at
    // what it is now.
    const bool variesHeads = std::any_of(axes.begin(), axes.end(), [](const QJsonValue& axis) {
        return axis[QStringLiteral("key")] == QStringLiteral("model.heads")
               || axis[QStringLiteral("keys")].toArray().contains(QStringLiteral("model.heads"));
    });
    if (variesHeads && !m_base.value(QStringLiteral("model")).toObject().contains(QStringLiteral("head_dim"))
        && m_headDim > 0)
        set.insert(QStringLiteral("model.head_dim"), m_headDim);
    if (!set.isEmpty())
        document.insert(QStringLiteral("set"), set);
    document.insert(QStringLiteral("combine"), m_combine->currentData().toString());
    document.insert(QStringLiteral("seeds"), m_seeds->value());
    return document;
}

void StudyBuilderDialog::check()
{
    m_checkTimer.stop();
    int members = 0;
    m_problems = m_validator ? m_validator(study(), &members) : QString();
    m_valid = m_problems.isEmpty();
    if (m_valid) {
        QString text = tr("%n member(s): every point of the axes at each seed.", nullptr, members);
        const QJsonValue headDim = study()[QStringLiteral("set")][QStringLiteral("model.head_dim")];
        if (headDim.isDouble())
            text += tr(" The heads keep their width: model.head_dim is %1 in every member.").arg(headDim.toInt());
        m_result->setText(text);
    } else {
        m_result->setText(m_problems);
    }
    m_result->setStyleSheet(m_valid ? QString() : QStringLiteral("color: #d55e00;"));
    m_start->setEnabled(m_valid);
}

QString StudyBuilderDialog::problems() const
{
    return m_problems;
}

void StudyBuilderDialog::saveAs()
{
    static QString directory = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    QString path = QFileDialog::getSaveFileName(this, tr("Save Study"),
                                                QDir(directory).filePath(QStringLiteral("study.json")),
                                                tr("Study documents (*.json)"));
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".json");
    directory = QFileInfo(path).absolutePath();
    QString error;
    if (!viewexport::writeFile(path, QJsonDocument(study()).toJson(QJsonDocument::Indented), &error))
        QMessageBox::warning(this, tr("Save failed"), error);
}

}  // namespace widelab
