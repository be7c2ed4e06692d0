#include "ConfigDocument.h"

#include "ConfigAssessment.h"
#include "SchemaFields.h"
#include "configuration/ConfigPanel.h"
#include "config/Presets.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSaveFile>
#include <QWidget>

#include <algorithm>
#include <filesystem>

namespace widelab {

QJsonObject readJsonObject(const QString& file, QString* error)
{
    QFile in(file);
    if (!in.open(QIODevice::ReadOnly)) {
        *error = QObject::tr("%1 cannot be read: %2").arg(QDir::toNativeSeparators(file), in.errorString());
        return {};
    }
    QJsonParseError parse{};
    const QJsonDocument document = QJsonDocument::fromJson(in.readAll(), &parse);
    if (parse.error != QJsonParseError::NoError || !document.isObject()) {
        *error = QObject::tr("%1 is not a JSON object: %2 at byte %3")
                     .arg(QDir::toNativeSeparators(file), parse.errorString())
                     .arg(parse.offset);
        return {};
    }
    return document.object();
}

QString slug(const QString& text)
{
    QString s = text.toLower();
    s.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    // Short enough to read in a legend: whole words up to 24 characters.
    constexpr int kLongest = 24;
    if (s.size() > kLongest) {
        const int cut = static_cast<int>(s.left(kLongest + 1).lastIndexOf(QLatin1Char('-')));
        s = s.left(cut > 0 ? cut : kLongest);
    }
    while (s.startsWith(QLatin1Char('-')))
        s.remove(0, 1);
    while (s.endsWith(QLatin1Char('-')))
        s.chop(1);
    return s.isEmpty() ? QStringLiteral("run") : s;
}

ConfigDocument::ConfigDocument(ConfigPanel* panel, QWidget* window) : QObject(window), m_panel(panel), m_window(window)
{
    m_assessTimer.setSingleShot(true);
    m_assessTimer.setInterval(150);
    connect(&m_assessTimer, &QTimer::timeout, this, &ConfigDocument::assess);
    connect(m_panel, &ConfigPanel::documentChanged, this, [this] {
        m_modified = true;
        updateTitle();
        m_assessTimer.start();
    });
}

void ConfigDocument::setDocument(const QJsonObject& document, bool modified)
{
    m_panel->setDocument(document);
    m_modified = modified;
    assess();
    updateTitle();
}

void ConfigDocument::setModified(bool modified)
{
    m_modified = modified;
    updateTitle();
}

QString ConfigDocument::resolve(const QString& fileOrPreset)
{
    if (QFileInfo::exists(fileOrPreset))
        return fileOrPreset;
    try {
        return QString::fromStdString(resolveConfigPath(fileOrPreset.toStdString()).string());
    } catch (const std::exception& error) {
        Q_EMIT problem(tr("Cannot Open Configuration"), QString::fromStdString(error.what()));
        return QString();
    }
}

bool ConfigDocument::open(const QString& file)
{
    QString error;
    const QJsonObject document = readJsonObject(file, &error);
    if (!error.isEmpty()) {
        Q_EMIT problem(tr("Cannot Open Configuration"), error);
        return false;
    }
    m_file = file;
    m_run.clear();
    setDocument(document, false);  // as written: derived keys it leaves out follow their rule
    return true;
}

void ConfigDocument::showRun(const QString& directory, const QJsonObject& config)
{
    m_file.clear();
    setDocument(config, false);
    m_run = directory;
}

bool ConfigDocument::configurationIsReadOnly() const
{
    return m_file.isEmpty() || m_file.startsWith(QLatin1Char(':')) || isShippedPreset(m_file.toStdString());
}

bool ConfigDocument::save()
{
    return configurationIsReadOnly() ? saveAs() : saveConfiguration(m_file);
}

bool ConfigDocument::saveAs()
{
    // A shipped preset (or a document of no file) is saved among the user's
    // presets by default, where the picker and `widelab-cli train NAME` find it.
    QString folder = QFileInfo(m_file).absolutePath();
    QString base = QFileInfo(m_file).completeBaseName();
    if (configurationIsReadOnly()) {
        folder = QString::fromStdString(userPresetDirectory().string());
        if (folder.isEmpty() || !QDir().mkpath(folder))
            folder = QDir::homePath();
        // Named after the document, not the preset: a file named like a shipped
        // preset would be found after it by name.
        const QString name = m_panel->document().value(QStringLiteral("name")).toString();
        base = slug(name.isEmpty() ? base : name);
    }
    const QString file = QFileDialog::getSaveFileName(m_window, tr("Save Configuration"),
                                                      QDir(folder).filePath(base + QStringLiteral(".json")),
                                                      tr("WideLab configurations (*.json)"));
    return !file.isEmpty() && saveConfiguration(file);
}

void ConfigDocument::afterUnsavedEdits(const std::function<void()>& then)
{
    if (!m_modified) {
        then();
        return;
    }
    // Window-modal and asynchronous, like the other questions of the window.
    auto* box = new QMessageBox(QMessageBox::Question, tr("Unsaved Changes"),
                                tr("The configuration has changes that are not saved. Save them first?"),
                                QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, m_window);
    box->setObjectName(QStringLiteral("unsavedQuestion"));
    box->setDefaultButton(QMessageBox::Save);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [this, box, then] {
        box->deleteLater();  // answered by a button, the box is hidden, not closed
        const QMessageBox::StandardButton answer = box->standardButton(box->clickedButton());
        if (answer == QMessageBox::Discard || (answer == QMessageBox::Save && save()))
            then();
    });
    box->open();
}

// A preset's entry in the picker: its document's name and description, under
// its family (or `group`); a file that cannot be read is listed by its name.
static ConfigPanel::PresetChoice presetEntry(const QString& id, const QString& file, const QString& group)
{
    QString unreadable;  // listed by its name all the same; opening it says why it cannot be
    const QJsonObject document = readJsonObject(file, &unreadable);
    return {id, document.value(QStringLiteral("name")).toString(), document.value(QStringLiteral("description")).toString(),
            group.isEmpty() ? modelFamily(document) : group};
}

void ConfigDocument::refreshPresets()
{
    m_presetChoices.clear();
    m_presetFiles.clear();
    QList<ConfigPanel::PresetChoice> entries;
    for (const std::string& name : listPresets()) {
        const QString choice = QString::fromStdString(name);
        m_presetChoices.append(choice);
        // The shipped file itself, never the name: a file or a run folder of that name in the
        // working folder would be opened instead (resolve() takes a file first, as the CLI does).
        const QString file = QString::fromStdString(resolveConfigPath(name).string());
        m_presetFiles.insert(choice, file);
        entries.push_back(presetEntry(choice, file, QString()));
    }
    // Shipped presets by family, in the papers' order, then by name within each.
    const QStringList families = modelFamilies();
    std::stable_sort(entries.begin(), entries.end(), [&families](const auto& a, const auto& b) {
        const qsizetype familyA = families.indexOf(a.group), familyB = families.indexOf(b.group);
        return familyA != familyB ? familyA < familyB : a.title.localeAwareCompare(b.title) < 0;
    });
    const std::filesystem::path mine = userPresetDirectory();
    for (const std::string& name : listUserPresets()) {
        const QString choice = tr("%1 (yours)").arg(QString::fromStdString(name));
        const QString file = QString::fromStdString((mine / (name + ".json")).string());
        m_presetChoices.append(choice);
        m_presetFiles.insert(choice, file);
        entries.push_back(presetEntry(choice, file, tr("Yours")));
    }
    m_panel->setPresetChoices(entries);
    m_panel->showPreset(presetChoice());
}

bool ConfigDocument::saveConfiguration(const QString& file)
{
    if (isShippedPreset(file.toStdString())) {
        Q_EMIT problem(tr("Cannot Save Configuration"),
                       tr("%1 is among the shipped presets, which stay as shipped; save the configuration elsewhere "
                          "(Save Configuration As), for example in your presets folder %2.")
                           .arg(QDir::toNativeSeparators(file),
                                QDir::toNativeSeparators(QString::fromStdString(userPresetDirectory().string()))));
        return false;
    }
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly)
        || out.write(QJsonDocument(m_panel->document()).toJson(QJsonDocument::Indented)) < 0 || !out.commit()) {
        Q_EMIT problem(tr("Cannot Save Configuration"),
                       tr("%1 cannot be written: %2").arg(QDir::toNativeSeparators(file), out.errorString()));
        return false;
    }
    m_file = file;
    m_modified = false;
    updateTitle();
    Q_EMIT saved(file);
    std::error_code error;
    if (std::filesystem::equivalent(QFileInfo(file).absolutePath().toStdString(), userPresetDirectory(), error))
        refreshPresets();
    Q_EMIT statusMessage(tr("Saved %1").arg(QDir::toNativeSeparators(file)), 5000);
    return true;
}

void ConfigDocument::assess()
{
    m_assessTimer.stop();
    const ConfigAssessment assessment = assessDocument(m_panel->document());
    m_panel->setIssues(assessment.issues);
    if (assessment.valid) {
        m_complete = assessment.complete;
        m_storedParameters = assessment.cost.stored;
        m_sketch = assessment.sketch;
        m_panel->setCost(assessment.cost);
        m_panel->setArchitecture(assessment.sketch);
        m_panel->setModelCurrent(true);
        m_firstProblem.clear();
    } else {
        m_complete = QJsonObject();
        m_panel->setModelCurrent(false);
        const FieldIssue& first = assessment.issues.first();
        m_firstProblem = (first.key.isEmpty() ? first.reason : first.key + QStringLiteral(": ") + first.reason);
        if (assessment.issues.size() > 1)
            m_firstProblem += tr(" (and %n more)", nullptr, static_cast<int>(assessment.issues.size() - 1));
    }
    Q_EMIT assessed();
}

void ConfigDocument::assessPending()
{
    if (m_assessTimer.isActive())
        assess();
}

void ConfigDocument::updateTitle()
{
    QString name = m_complete.value(QStringLiteral("name")).toString();
    if (name.isEmpty())
        name = m_file.isEmpty() ? tr("Untitled") : QFileInfo(m_file).completeBaseName();
    m_window->setWindowTitle(QStringLiteral("%1[*] - WideLab").arg(name));
    m_window->setWindowModified(m_modified);
    m_panel->showPreset(presetChoice());
}

QString ConfigDocument::presetChoice() const
{
    if (m_file.isEmpty())
        return QString();
    const QFileInfo opened(m_file);
    for (auto it = m_presetFiles.constBegin(); it != m_presetFiles.constEnd(); ++it)
        if (QFileInfo(it.value()) == opened)
            return it.key();
    return QString();
}

}  // namespace widelab
