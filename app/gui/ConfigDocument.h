// defines: ConfigDocument, readJsonObject, slug: the configuration the window
// edits: where it came from (a file, a preset, a run), whether it has unsaved
// edits, what the panel's document assesses to, saving it, and the presets to
// pick from
#pragma once

#include "configuration/ArchitectureSketch.h"

#include <QJsonObject>
#include <QHash>
#include <QObject>
#include <QStringList>
#include <QTimer>

#include <functional>

class QWidget;

namespace widelab {

class ConfigPanel;

// A JSON file's object; empty with `error` set (naming the file) when it cannot
// be read or is not a JSON object.
QJsonObject readJsonObject(const QString& file, QString* error);

// `text` as a name for a file or a run folder: lower case, words joined by
// '-', whole words up to 24 characters; "run" when nothing is left.
QString slug(const QString& text);

// Shows its document in the ConfigPanel and keeps the window's title (the
// document's name, [*] while modified) up to date; asks its questions
// window-modal on `window`.
class ConfigDocument : public QObject {
    Q_OBJECT
public:
    ConfigDocument(ConfigPanel* panel, QWidget* window);

    // Reads `file` into the panel, as written: derived keys it leaves out
    // follow their rule. False, after saying why (problem()), when it cannot.
    bool open(const QString& file);
    // A path for `fileOrPreset` (a file, or a preset's name); empty, after
    // saying why, when it names neither.
    QString resolve(const QString& fileOrPreset);
    // Shows a run's configuration: a document of no file, that Start continues
    // the run in `directory` with while it is unchanged.
    void showRun(const QString& directory, const QJsonObject& config);

    // Refuses (with a message) to write over a shipped preset.
    bool saveConfiguration(const QString& file);
    // Ctrl+S: saves where the configuration came from, or asks where when it
    // has no file or is a shipped preset (read-only; the dialog starts in the
    // user's presets folder). False when nothing was saved.
    bool save();
    bool saveAs();
    // The configuration is one that Save must not write over: none, or a shipped preset.
    bool configurationIsReadOnly() const;
    // Runs `then` at once when the configuration has no unsaved edits; else asks
    // first (Save, Discard or Cancel; window-modal) and runs it unless cancelled.
    void afterUnsavedEdits(const std::function<void()>& then);

    // Fills the panel's preset picker: the shipped presets, then the user's,
    // marked "(yours)".
    void refreshPresets();
    QStringList presetChoices() const { return m_presetChoices; }
    QString presetFile(const QString& choice) const { return m_presetFiles.value(choice, choice); }
    // The picker entry of the open file when it is a preset (shipped or the user's); else empty.
    QString presetChoice() const;

    QString file() const { return m_file; }   // where it was opened from or saved to
    bool isModified() const { return m_modified; }
    void setModified(bool modified);
    // The run directory Start continues, when the document is its own (else empty).
    QString run() const { return m_run; }
    void setRun(const QString& directory) { m_run = directory; }

    // The assessment of the panel's document, made 150 ms after the last edit.
    void assess();
    void assessPending();  // at once, when an edit waits for its assessment
    // The document with every default written out; empty while it has problems.
    QJsonObject complete() const { return m_complete; }
    ArchitectureSketch sketch() const { return m_sketch; }
    qint64 storedParameters() const { return m_storedParameters; }
    QString firstProblem() const { return m_firstProblem; }  // and how many more; empty when valid
    void updateTitle();

Q_SIGNALS:
    void assessed();                         // complete() and problem() are new
    void saved(const QString& file);
    void problem(const QString& title, const QString& text);
    void statusMessage(const QString& text, int milliseconds);

private:
    void setDocument(const QJsonObject& document, bool modified);

    ConfigPanel* m_panel;
    QWidget* m_window;
    QTimer m_assessTimer;
    QJsonObject m_complete;        // the panel's document with defaults, when valid
    ArchitectureSketch m_sketch;   // of m_complete
    qint64 m_storedParameters = 0;
    QString m_firstProblem;
    QString m_file;                // where the configuration was opened from or saved to
    QStringList m_presetChoices;   // the picker's entries, shipped first
    QHash<QString, QString> m_presetFiles;  // picker entry -> the file it opens
    bool m_modified = false;
    QString m_run;                 // a run directory that Start continues, if the document is its own
};

}  // namespace widelab
