// defines: ConfigPanel, the form that edits a whole run document (name, model, task,
// train) grouped as a user thinks, showing its problems, its cost and its architecture.
// Its fields come from the core's schema (FieldSpec); the panel adds only layout,
// labels and longer tooltips.
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

#include <functional>
#include <memory>
#include <vector>

class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QScrollArea;
class QTabWidget;
class QToolButton;
class QVBoxLayout;

namespace widelab {

class ArchitectureDiagram;
class CostBreakdown;
struct FieldPlacement;

class ConfigPanel : public QWidget {
    Q_OBJECT

public:
    // Gives `document` (the user's keys) back with every key resolved: the values
    // of derived keys (model.head_dim = d_model / heads, ...) as the core computes them.
    using Resolver = std::function<QJsonObject(const QJsonObject& document)>;

    // One field for every key of `schema`: in the group the panel's layout names
    // for it, or, for a key the layout does not know, in a last group "Other".
    explicit ConfigPanel(const QList<FieldSpec>& schema, QWidget* parent = nullptr);
    ~ConfigPanel() override;

    // Without a resolver a derived field shows its schema default.
    void setResolver(Resolver resolver);

    // Shows `document`; keys the panel does not edit are kept and given back by
    // document(). A derived key whose value is what its rule gives from the other
    // keys (as in a run's resolved config.json) is taken as derived: it follows.
    // Does not emit documentChanged.
    void setDocument(const QJsonObject& document);
    // The keys the user set: those of the document given (derived ones that follow
    // their rule excepted) and those edited since (ints as integers, fractions as
    // doubles, booleans, train.probes as an array of strings), plus the unknown
    // keys it was given. Always holds a "model" object.
    QJsonObject document() const;
    // Whether `key` is derived and follows its rule (the user has not set it).
    bool isFollowing(const QString& key) const;
    // Makes a derived key follow its rule again (what its reset button does).
    void followRule(const QString& key);

    // Marks each field named by an issue; issues naming no field are listed at the
    // top. An empty list clears every mark.
    void setIssues(const QList<FieldIssue>& issues);
    void setCost(const CostSummary& cost);
    void setArchitecture(const ArchitectureSketch& sketch);
    // False while the document has problems: the cost and the diagram then say
    // they show the last valid model (or that there is none), not the current one.
    void setModelCurrent(bool current);
    bool isModelCurrent() const { return m_modelCurrent; }
    QString costText() const;
    // A preset as the picker lists it: under its group's heading, by its
    // document's name, its description as the tooltip. `id` is what
    // presetChosen and showPreset name it by.
    struct PresetChoice {
        QString id;           // "widenet", "mine (yours)"
        QString title;        // the document's name: "WideNet (laptop scale)"; the id when empty
        QString description;  // the document's description
        QString group;        // "Wide Attention", "WideNet", ...: the headings, in the order first met
    };
    void setPresetChoices(const QList<PresetChoice>& presets);
    void setPresets(const QStringList& names);  // ungrouped, each titled by its id
    // The preset the document came from, shown in the picker ("widenet"); empty
    // (a file, a run, a new document): the picker invites a pick. Emits nothing.
    void showPreset(const QString& name);
    QString shownPreset() const { return m_shownPreset; }
    void setDevices(const QList<DeviceChoice>& devices);
    // While training runs: values stay visible and selectable, nothing can change.
    void setReadOnly(bool readOnly);
    bool isReadOnly() const { return m_readOnly; }

    // The editor of a dotted key ("model.experts"), or nullptr.
    QWidget* field(const QString& key) const;
    // Every dotted key the panel edits, in the order the form shows them.
    QStringList keys() const;
    ArchitectureDiagram* diagram() const { return m_diagram; }
    CostBreakdown* costBreakdown() const { return m_breakdown; }
    // The title of the group holding `key`'s field ("Experts", "Other").
    QString groupOf(const QString& key) const;

Q_SIGNALS:
    // After any edit by the user (not after setDocument); not debounced.
    void documentChanged();
    void presetChosen(const QString& name);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    struct Field;

    // Building the form.
    QFormLayout* addGroup(const QString& title, QVBoxLayout* content);
    void addField(QFormLayout* form, const FieldSpec& spec, const FieldPlacement* placement);
    QWidget* makeEditor(Field& field);
    void buildForm(const QList<FieldSpec>& schema, QVBoxLayout* content);

    // Values.
    Field* fieldFor(const QString& key) const;
    QJsonValue valueOf(const Field& field) const;
    void load(Field& field, const QJsonValue& value);
    void edited(Field& field);
    void updateDerivedValues();
    void browseForFile(Field& field);

    // Presentation.
    void updateApplicability();
    void applyEditability(Field& field);
    void applyDerived(Field& field);
    void applyIssue(Field& field);
    void updateToolTip(Field& field);
    void updateGroupTitles();
    void updateDocumentIssues(const QList<FieldIssue>& unmatched);
    void updateModelCurrency();

    std::vector<std::unique_ptr<Field>> m_fields;
    QHash<QString, Field*> m_byKey;
    QHash<QGroupBox*, QString> m_groupTitles;
    QSet<QString> m_set;      // keys the user set (given in the document or edited)
    QJsonObject m_base;       // the document given, for the keys the panel does not edit
    Resolver m_resolver;
    bool m_loading = false;
    bool m_readOnly = false;
    bool m_modelCurrent = true;
    bool m_hasCost = false;
    QWidget* m_wheelTarget = nullptr;  // the editor the user works in: it alone takes the wheel

    QComboBox* m_presets = nullptr;
    QString m_shownPreset;
    QLabel* m_readOnlyNote = nullptr;
    QLabel* m_cost = nullptr;
    QString m_costText;
    QLabel* m_documentIssues = nullptr;
    QScrollArea* m_scroll = nullptr;
    QGroupBox* m_architecture = nullptr;
    ArchitectureDiagram* m_diagram = nullptr;
    CostBreakdown* m_breakdown = nullptr;
    QTabWidget* m_architectureTabs = nullptr;
};

}  // namespace widelab
