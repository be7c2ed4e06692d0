#include "ImageProbeDialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>

namespace widelab {

ImageProbeDialog::ImageProbeDialog(QWidget* parent) : QDialog(parent)
{
    setWindowTitle(tr("Add image probe"));
    m_validation = new QRadioButton(tr("A &validation example, number"), this);
    m_example = new QSpinBox(this);
    m_example->setRange(0, 1 << 30);
    m_example->setAccessibleName(tr("Validation example"));
    m_example->setToolTip(tr("The example's index in the validation split"));
    m_file = new QRadioButton(tr("An image &file (PNG or JPEG)"), this);
    m_path = new QLineEdit(this);
    m_path->setAccessibleName(tr("Image file"));
    m_path->setPlaceholderText(tr("path of a .png or .jpg file"));
    m_browse = new QPushButton(tr("Browse..."), this);
    m_browse->setAccessibleName(tr("Browse for an image file"));
    m_validation->setChecked(true);

    auto* note = new QLabel(tr("The image is drawn as the model sees it (before normalisation), with its "
                               "attention and routing over it at every probe. Validation examples count from 0."),
                            this);
    note->setWordWrap(true);
    auto* exampleRow = new QHBoxLayout;
    exampleRow->addWidget(m_validation);
    exampleRow->addWidget(m_example);
    exampleRow->addStretch(1);
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(m_path, 1);
    fileRow->addWidget(m_browse);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_ok = buttons->button(QDialogButtonBox::Ok);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(note);
    layout->addLayout(exampleRow);
    layout->addWidget(m_file);
    layout->addLayout(fileRow);
    layout->addWidget(buttons);

    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_browse, &QPushButton::clicked, this, &ImageProbeDialog::browse);
    connect(m_validation, &QRadioButton::toggled, this, &ImageProbeDialog::update);
    connect(m_path, &QLineEdit::textChanged, this, [this] {
        if (!m_path->text().isEmpty())
            m_file->setChecked(true);
        update();
    });
    connect(m_example, &QSpinBox::valueChanged, this, [this] { m_validation->setChecked(true); });
    update();
}

QString ImageProbeDialog::probe() const
{
    if (m_validation->isChecked())
        return QStringLiteral("validation:%1").arg(m_example->value());
    return m_path->text().trimmed();
}

void ImageProbeDialog::browse()
{
    const QString current = m_path->text().trimmed();
    const QString chosen = QFileDialog::getOpenFileName(this, tr("Choose an image to probe"),
                                                        current.isEmpty() ? QString() : QFileInfo(current).absolutePath(),
                                                        tr("Images (*.png *.jpg *.jpeg *.PNG *.JPG *.JPEG)"));
    if (!chosen.isEmpty())
        m_path->setText(chosen);  // and chooses the file
}

// OK needs a probe: a file chosen with no path named is none.
void ImageProbeDialog::update() { m_ok->setEnabled(!probe().isEmpty()); }

QString imageProbeName(const QString& probe)
{
    static const QRegularExpression validation(QStringLiteral("^validation:(\\d+)$"));
    const QRegularExpressionMatch match = validation.match(probe.trimmed());
    if (match.hasMatch())
        return QObject::tr("validation #%1").arg(match.captured(1));
    static const QRegularExpression image(QStringLiteral("\\.(png|jpe?g)$"), QRegularExpression::CaseInsensitiveOption);
    if (image.match(probe.trimmed()).hasMatch())
        return QFileInfo(probe.trimmed()).fileName();
    return probe;
}

}  // namespace widelab
