// defines: widelab::ImageProbeDialog, imageProbeName: how the user adds an image
// probe (a validation example by number, or a PNG/JPEG file) and how a probe
// string is named in lists
#pragma once

#include <QDialog>

class QLineEdit;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace widelab {

// A probe of an image task is a string of `train.probes`: "validation:N" (the
// N-th validation example) or the path of a PNG or JPEG file.
class ImageProbeDialog : public QDialog {
    Q_OBJECT
public:
    explicit ImageProbeDialog(QWidget* parent = nullptr);

    // "validation:N" or the file's path; empty when a file is chosen but none named.
    QString probe() const;

    QRadioButton* validationChoice() const { return m_validation; }
    QRadioButton* fileChoice() const { return m_file; }
    QSpinBox* example() const { return m_example; }
    QLineEdit* path() const { return m_path; }

private:
    void browse();
    void update();

    QRadioButton* m_validation = nullptr;
    QRadioButton* m_file = nullptr;
    QSpinBox* m_example = nullptr;
    QLineEdit* m_path = nullptr;
    QPushButton* m_browse = nullptr;
    QPushButton* m_ok = nullptr;
};

// What a list shows for a probe: "validation #N" for "validation:N", the file
// name for the path of a PNG or JPEG file, the text itself otherwise.
QString imageProbeName(const QString& probe);

}  // namespace widelab
