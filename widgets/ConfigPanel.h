// defines: ConfigPanel, the form that edits a whole run document (name, model, task,
// train) grouped as a user thinks, showing its problems, its cost and its architecture
#pragma once

#include "ArchitectureSketch.h"
#include "ConfigTypes.h"

#include <QHash>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QSet>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <vector>

class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QScrollArea;
class QVBoxLayout;

namespace widelab {

class ArchitectureDiagram;

class ConfigPanel : public QWidget {
    Q_OBJECT

public:
    explicit ConfigPanel(QWidget* parent = nullptr);
    ~ConfigPanel() override;

    // Shows `document`; keys the panel does not edit are kept and given back by
    // document(). Does not emit documentChanged.
    void setDocument(const QJsonObject& document);
    // Every key the panel edits (ints as integers, fractions as doubles, booleans,
    // train.probes as an array of strings), plus the unknown keys it was given.
    QJsonObject document() const;

    // Marks each field named by an issue; issues naming no field are listed at the
    // top. An empty list clears every mark.
    void setIssues(const QList<FieldIssue>& issues);
    void setCost(const CostSummary& cost);
    void setArchitecture(const ArchitectureSketch& sketch);
    void setPresets(const QStringList& names);
    void setDevices(const QList<DeviceChoice>& devices);
    // While training runs: values stay visible and selectable, nothing can change.
    void setReadOnly(bool readOnly);
    bool isReadOnly() const { return m_readOnly; }

    // The editor of a dotted key ("model.experts"), or nullptr.
    QWidget* field(const QString& key) const;
    // Every dotted key the panel edits, in the order the form shows them.
    QStringList keys() const;
    ArchitectureDiagram* diagram() const { return m_diagram; }

Q_SIGNALS:
    // After any edit by the user (not after setDocument); not debounced.
    void documentChanged();
    void presetChosen(const QString& name);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    enum class Kind : int;
    struct Field;

    // Building the form.
    QFormLayout* addGroup(const QString& title);
    Field& addField(QFormLayout* form, const QString& key, const QString& label, Kind kind, QWidget* editor,
                    const QJsonValue& defaultValue, const QString& tip);
    void addInt(QFormLayout* form, const QString& key, const QString& label, qint64 min, qint64 max,
                qint64 defaultValue, const QString& tip, const QString& special = {});
    void addNumber(QFormLayout* form, const QString& key, const QString& label, double min, double max,
                   double defaultValue, double step, const QString& tip, bool logarithmic = false);
    void addBool(QFormLayout* form, const QString& key, const QString& label, bool defaultValue, const QString& tip);
    void addChoice(QFormLayout* form, const QString& key, const QString& label,
                   const QList<QPair<QString, QString>>& choices, const QString& defaultValue, const QString& tip);
    void addText(QFormLayout* form, const QString& key, const QString& label, const QString& tip);
    void addFile(QFormLayout* form, const QString& key, const QString& label, const QString& tip);
    void addLines(QFormLayout* form, const QString& key, const QString& label, const QString& tip);
    void addDevice(QFormLayout* form, const QString& key, const QString& label, const QString& tip);
    void buildForm(QVBoxLayout* content);

    // Values.
    Field* fieldFor(const QString& key) const;
    QJsonValue valueOf(const Field& field) const;
    void load(Field& field, const QJsonValue& value);
    qint64 intValue(const QString& key) const;
    QString choiceValue(const QString& key) const;
    void edited(Field& field);
    void updateDerivedDefaults();
    void browseForFile(Field& field);

    // Presentation.
    void updateApplicability();
    void applyEditability(Field& field);
    void applyIssue(Field& field);
    void updateToolTip(Field& field);
    void updateGroupTitles();
    void updateDocumentIssues(const QList<FieldIssue>& unmatched);

    std::vector<std::unique_ptr<Field>> m_fields;
    QHash<QString, Field*> m_byKey;
    QHash<QGroupBox*, QString> m_groupTitles;
    QSet<QString> m_derived;  // keys absent from the document, showing a default computed from others
    QJsonObject m_base;       // the document given, for the keys the panel does not edit
    bool m_loading = false;
    bool m_readOnly = false;

    QComboBox* m_presets = nullptr;
    QLabel* m_readOnlyNote = nullptr;
    QLabel* m_cost = nullptr;
    QLabel* m_documentIssues = nullptr;
    QScrollArea* m_scroll = nullptr;
    ArchitectureDiagram* m_diagram = nullptr;
};

}  // namespace widelab
