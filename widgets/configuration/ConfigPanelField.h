// defines: ConfigPanel::Field (one key's editor and state) and what ConfigPanel.cpp and
// ConfigPanelForm.cpp share about it: for those two files only
#pragma once

#include "ConfigPanel.h"
#include "ConfigPanelLayout.h"

#include <QFormLayout>
#include <QFrame>
#include <QGroupBox>
#include <QJsonValue>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>

class QComboBox;

namespace widelab {

struct ConfigPanel::Field {
    FieldSpec spec;    // spec.key is dotted: "model.experts"; top-level keys have no dot
    QString section;   // "model", "task", "train"; empty for top-level keys
    QString name;      // the key inside its section
    QString label;
    QString tip;
    const FieldPlacement* placement = nullptr;  // null: a key the layout does not know
    QString familyChoice;  // a family member (a mechanism's key): the choice it belongs to

    QWidget* editor = nullptr;
    QLabel* labelWidget = nullptr;
    QFrame* frame = nullptr;        // editor (and browse button) and the issue text below them
    QLabel* issueLabel = nullptr;
    QPushButton* browse = nullptr;
    QLabel* ruleLabel = nullptr;    // derived keys: "= d_model / heads" while the value follows
    QToolButton* follow = nullptr;  // derived keys the user set: make the value follow again
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

    const QString& key() const { return spec.key; }
};

// The property that marks a field with a problem (the style sheet draws its frame).
inline constexpr char kIssueProperty[] = "widelabIssue";

// A combo's items added for values not in its list (selectData), removed.
void removeUnknownItems(QComboBox* combo);
// Selects the item whose data is `value`, adding one for a value not in the list.
void selectData(QComboBox* combo, const QString& value);

}  // namespace widelab
