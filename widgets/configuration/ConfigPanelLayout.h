// defines: FieldPlacement, FieldGroup, configPanelLayout, FieldState, fieldState,
// PathChoice, pathChoice:
// where the configuration panel puts the schema's keys, with what the schema cannot
// say (labels a user reads, longer tooltips, special-value texts, stepping, choice
// texts), and when a field is shown and has an effect
#pragma once

#include <QJsonValue>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

#include <functional>
#include <utility>

namespace widelab {

struct FieldPlacement {
    using ChoiceTexts = QList<QPair<QString, QString>>;
    FieldPlacement(QString key, QString label, QString tip, QString special = {}, double step = 0.1,
                   bool logarithmic = false, ChoiceTexts choiceTexts = {})
        : key(std::move(key)), label(std::move(label)), tip(std::move(tip)), special(std::move(special)),
          step(step), logarithmic(logarithmic), choiceTexts(std::move(choiceTexts))
    {
    }

    QString key;              // dotted, as in the schema
    QString label;
    QString tip;              // longer than the schema's description; empty: that description
    QString special;          // Integer: the text shown at the minimum ("not factorised")
    double step;              // Number: what the arrows add
    bool logarithmic;         // Number: the arrows step 1, 2, ... 9 within a decade
    ChoiceTexts choiceTexts;  // Choice: value -> the text shown
};

struct FieldGroup {
    QString title;
    QList<FieldPlacement> fields;
};

// The groups in the order the panel shows them. A key of the schema none of them
// names goes to a last group, "Other"; a key here the schema lacks is not shown.
const QList<FieldGroup>& configPanelLayout();

// A family of keys: "model.<choice>_...", <choice> one of the choices of
// `key` (each attention mechanism's own keys, which the schema declares and the
// layout cannot list). The panel places them in the group that holds `key`, after
// its fields, labelled "<choice's text>: <rest>", and shows one only while its
// choice is in use: `key`'s value, or with `key` at "mixed" an entry of `mixKey`.
struct KeyFamily {
    QString key;
    QString mixKey;
    QString mixedChoice;
};
const KeyFamily& attentionFamily();
// The choice a key belongs to ("linformer" for model.linformer_k) among `choices`; empty when none.
QString familyChoiceOf(const QString& key, const QStringList& choices);
bool familyChoiceInUse(const QString& choice, const std::function<QJsonValue(const QString& key)>& value);

// A field hidden (it belongs to another task kind) or without effect with the
// document's other values, which `value` gives by dotted key: the rules of
// vocab/KeyRules, which the core's "has no effect" warnings read too.
struct FieldState {
    bool visible = true;
    bool applicable = true;
    QString notUsedBecause;  // when not applicable: "without a mixture of experts (model.experts is 1)"
};
FieldState fieldState(const QString& key, const std::function<QJsonValue(const QString& key)>& value);

// What a path field's Browse button picks, given the document's other values: a
// folder for the image folder and CIFAR-10 tasks, else a file.
struct PathChoice {
    bool folder = false;
    QString title;   // of the dialog
    QString filter;  // files only
};
PathChoice pathChoice(const QString& key, const std::function<QJsonValue(const QString& key)>& value);

}  // namespace widelab
