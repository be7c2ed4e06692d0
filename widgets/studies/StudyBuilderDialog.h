// defines: widelab::StudyBuilderDialog: a study of the configuration being edited:
// its axes (keys of the schema, their values), how they combine, seeds and steps,
// checked as it is typed; gives the study document (docs/studies.md)
#pragma once

#include "configuration/ConfigTypes.h"

#include <QDialog>
#include <QJsonObject>
#include <QTimer>

#include <functional>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace widelab {

class StudyBuilderDialog : public QDialog {
    Q_OBJECT

public:
    // Checks a study document: empty when it is valid (`members` then says how many
    // it expands to), else every problem, one per line.
    using Validator = std::function<QString(const QJsonObject& study, int* members)>;

    // `base`: the configuration (as edited); `resolved`: the same with every key's
    // value (for the suggested axis and the steps).
    StudyBuilderDialog(const QJsonObject& base, const QJsonObject& resolved, const QList<FieldSpec>& fields,
                       Validator validator, QWidget* parent = nullptr);

    // The study document as the dialog stands.
    QJsonObject study() const;
    bool valid() const { return m_valid; }
    QString problems() const;  // what the check said last

    // For tests and automation: the axes as typed (keys comma-separated; values
    // as the placeholder shows); the row is added when missing.
    void setAxis(int row, const QString& keys, const QString& values, const QString& label = QString(),
                 const QString& solve = QString());
    int axisCount() const;
    void setName(const QString& name);
    void setSeeds(int seeds);
    void setSteps(int steps);
    void setPaired(bool paired);
    void check();  // now, instead of after the typing pause

    // A value list as typed: "4, 8, 16", or for an axis of several keys "6 8; 3 16".
    // Items are read as JSON (numbers, true, false, "text") or else as text.
    static QJsonArray parseValues(const QString& text, int keyCount);

private:
    void addAxisRow(const QString& keys, const QString& values, const QString& label, const QString& solve);
    void saveAs();

    QJsonObject m_base;
    QList<FieldSpec> m_fields;
    Validator m_validator;
    QLineEdit* m_name = nullptr;
    QTableWidget* m_axes = nullptr;
    QComboBox* m_combine = nullptr;
    QSpinBox* m_seeds = nullptr;
    QSpinBox* m_steps = nullptr;
    int m_baseSteps = 0;
    int m_headDim = 0;  // the configuration's (resolved) head width
    QLabel* m_result = nullptr;
    QPushButton* m_start = nullptr;
    QTimer m_checkTimer;
    bool m_valid = false;
    QString m_problems;
};

}  // namespace widelab
