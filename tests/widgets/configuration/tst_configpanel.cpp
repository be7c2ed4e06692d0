// Tests ConfigPanel built from the core's schema as the app builds it: fields from
// the schema, derived values that follow, round trip of a document, typing into
// fields, the wheel, issues, applicability, read-only, cost, presets, devices.
#include "configuration/ArchitectureDiagram.h"
#include "ConfigAssessment.h"
#include "configuration/ConfigPanel.h"
#include "configuration/ConfigPanelLayout.h"
#include "configuration/CostBreakdown.h"
#include "configuration/NumberSpinBox.h"
#include "insights/ImageProbeDialog.h"
#include "SchemaFields.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QStandardItemModel>
#include <QFile>
#include <QFrame>
#include <QGroupBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>
#include <QTimer>
#include <QToolButton>
#include <QWheelEvent>

#include <algorithm>

using namespace widelab;

namespace {

// resources/presets/widenet.json with every default filled in, as RunDocument::toJson
// writes it (values worked out by hand from docs/model.md and docs/training.md), plus a
// learning rate and probes of our own.
CostSummary costOf(qint64 stored, qint64 active, qint64 applied, double flops, qint64 memory)
{
    CostSummary cost;
    cost.stored = stored;
    cost.active = active;
    cost.applied = applied;
    cost.flopsPerToken = flops;
    cost.memoryBytes = memory;
    return cost;
}

QJsonObject completeWideNet()
{
    QJsonObject model{
        {"vocab_size", 32}, {"max_len", 512}, {"d_model", 256}, {"embedding_dim", 0}, {"layers", 6},
        {"heads", 8}, {"head_dim", 32}, {"ffn_dim", 1024}, {"activation", "gelu"}, {"dropout", 0.1},
        {"head", "classification"}, {"pooling", "mean"}, {"pooler", false}, {"num_classes", 10},
        {"experts", 4}, {"top_k", 2}, {"capacity_factor", 1.2}, {"eval_capacity_factor", 2.0},
        {"router_noise_std", 0.25}, {"balance_loss_weight", 0.01}, {"routing_groups", 6},
        {"routing_priority", "position"}, {"renormalize_gates", false}, {"share_router", true},
        {"share_attention", true}, {"share_ffn", true}, {"share_layernorm", false},
        {"paths", 1}, {"path_norm", false}, {"learnable_path_weights", false}, {"path_extra_features", false},
    };
    QJsonObject task{
        {"kind", "listops"}, {"path", ""}, {"tokenizer", "byte"}, {"vocab_limit", 8000},
        {"sequence_length", 0}, {"validation_fraction", 0.05}, {"test_fraction", 0.05},
        {"min_length", 16}, {"max_length", 128}, {"train_size", 20000}, {"validation_size", 1000},
        {"test_size", 1000}, {"seed", 0},
    };
    QJsonObject train{
        {"optimizer", "adamw"}, {"learning_rate", 3e-4}, {"weight_decay", 0.01}, {"beta1", 0.9},
        {"beta2", 0.999}, {"epsilon", 1e-8}, {"momentum", 0.9}, {"schedule", "warmup_cosine"},
        {"warmup_steps", 100}, {"min_learning_rate_ratio", 0.0}, {"steps", 2000}, {"batch_size", 32},
        {"gradient_clip", 1.0}, {"label_smoothing", 0.0}, {"device", "auto"}, {"bf16", true},
        {"threads", 0}, {"seed", 0}, {"log_every", 10}, {"eval_every", 200}, {"eval_batches", 20},
        {"checkpoint_every", 200}, {"keep_last", 3}, {"probe_every", 0},
        {"probes", QJsonArray{"[MAX 2 9 [MIN 4 7 ] 0 ]", "[SM 1 2 3 ]"}},
    };
    return QJsonObject{
        {"name", "WideNet (laptop scale)"},
        {"description", "One attention and one MoE layer shared by all 6 blocks."},
        {"model", model},
        {"task", task},
        {"train", train},
    };
}

// The derived keys of completeWideNet hold what their rules give (head_dim 256 / 8,
// ffn_dim 4 x 256, top_k min(2, 4), router_noise_std 1 / 4, routing_groups 6):
// the panel takes them as following, and its document leaves them out.
const QStringList kDerivedKeys = {"head_dim", "ffn_dim", "top_k", "router_noise_std", "routing_groups", "eval_capacity_factor"};

QJsonObject withoutDerived(QJsonObject document)
{
    QJsonObject model = document.value("model").toObject();
    for (const QString& key : kDerivedKeys)
        model.remove(key);
    document.insert("model", model);
    return document;
}

// The panel as the app makes it: the core's schema, the core's resolver.
class AppPanel : public ConfigPanel {
public:
    AppPanel() : ConfigPanel(schemaFields()) { setResolver(resolveDocument); }
};

void wheelOver(QWidget* widget, int delta)
{
    const QPointF at(widget->width() / 2.0, widget->height() / 2.0);
    QWheelEvent wheel(at, widget->mapToGlobal(at), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(widget, &wheel);
}

QJsonObject withValue(QJsonObject document, const QString& section, const QString& key, const QJsonValue& value)
{
    QJsonObject inner = document.value(section).toObject();
    inner.insert(key, value);
    document.insert(section, inner);
    return document;
}

QJsonValue valueAt(const QJsonObject& document, const QString& section, const QString& key)
{
    return document.value(section).toObject().value(key);
}

// Integer or floating point, as the JSON value stores it.
bool storedAsInteger(const QJsonValue& value) { return value.toVariant().typeId() == QMetaType::LongLong; }

// Answers the ImageProbeDialog that opens next with validation example `example`.
void answerImageProbeDialog(int example, int triesLeft = 200)
{
    QTimer::singleShot(10, [example, triesLeft] {
        for (QWidget* widget : QApplication::topLevelWidgets())
            if (auto* dialog = qobject_cast<ImageProbeDialog*>(widget); dialog != nullptr && dialog->isVisible()) {
                dialog->example()->setValue(example);
                dialog->accept();
                return;
            }
        if (triesLeft > 0)
            answerImageProbeDialog(example, triesLeft - 1);
        else if (QWidget* modal = QApplication::activeModalWidget())
            modal->close();  // never leave the test hanging in exec()
    });
}

QFrame* frameOf(QWidget* editor)
{
    for (QWidget* w = editor; w; w = w->parentWidget())
        if (w->objectName() == QLatin1String("widelabField"))
            return qobject_cast<QFrame*>(w);
    return nullptr;
}

QLabel* issueTextOf(QWidget* editor)
{
    QFrame* frame = frameOf(editor);
    return frame ? frame->findChild<QLabel*>(QStringLiteral("widelabIssueText")) : nullptr;
}

void replaceText(QWidget* editor, const QString& text)
{
    editor->setFocus();
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(editor))
        spin->selectAll();
    else if (auto* line = qobject_cast<QLineEdit*>(editor))
        line->selectAll();
    QTest::keyClicks(editor, text);
}

}  // namespace

class TestConfigPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aNarrowPanelNeverCutsOffItsFields()
    {
        // The form does not scroll sideways: squeezed, the panel keeps the width
        // its fields need instead of clipping them at the right.
        AppPanel panel;
        panel.setDocument(completeWideNet());
        panel.resize(120, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        auto* scroll = panel.findChild<QScrollArea*>();
        QVERIFY(scroll);
        const int visibleWidth = scroll->viewport()->width();
        for (const QString& key : {QStringLiteral("name"), QStringLiteral("model.experts"), QStringLiteral("task.kind"),
                                   QStringLiteral("train.device")}) {
            QWidget* editor = panel.field(key);
            QVERIFY2(editor, qPrintable(key));
            const int right = editor->mapTo(scroll->viewport(), QPoint(editor->width(), 0)).x();
            QVERIFY2(right <= visibleWidth, qPrintable(QStringLiteral("%1 ends at %2 of %3").arg(key).arg(right).arg(visibleWidth)));
        }
        // ...and that width leaves room for the curves on a 1366-pixel laptop
        // screen: no label (a derived key's rule, say) asks for half of it.
        QVERIFY2(panel.width() <= 560, qPrintable(QString::number(panel.width())));
    }

    void everyKeyOfTheDocumentHasAnEditor()
    {
        AppPanel panel;
        const QJsonObject document = completeWideNet();
        for (const QString section : {"model", "task", "train"}) {
            const QJsonObject inner = document.value(section).toObject();
            for (auto it = inner.begin(); it != inner.end(); ++it)
                QVERIFY2(panel.field(section + "." + it.key()) != nullptr, qPrintable(section + "." + it.key()));
        }
        QVERIFY(panel.field("name"));
        QVERIFY(panel.field("description"));
        QCOMPARE(panel.field("model.not_a_key"), nullptr);
        // model: 33, the 4 image keys (input, image_size, patch_size, channels),
        // the 2 attention keys, the 16 keys of the ten mechanisms and the 3 of
        // translation and path weights; task: 13, bpe_merges, the 2 augmentation
        // keys, skip_bad_inputs and the 2 of translation; train: 30 and batch_tokens
        // and bleu_sentences, and init_from; mixup, crop_scale and the 2 of RandAugment; model.segments;
        // train.cuda_graph.
        QCOMPARE(panel.keys().size(), 33 + 4 + 2 + 16 + 3 + 13 + 1 + 2 + 1 + 2 + 30 + 2 + 2 + 1 + 4 + 1 + 1);
    }

    void completeDocumentRoundTrips()
    {
        AppPanel panel;
        QSignalSpy changed(&panel, &ConfigPanel::documentChanged);
        const QJsonObject document = completeWideNet();
        panel.setDocument(document);
        QCOMPARE(changed.count(), 0);
        const QJsonObject back = panel.document();
        QCOMPARE(back, withoutDerived(document));
        for (const QString& key : kDerivedKeys)
            QVERIFY2(panel.isFollowing("model." + key), qPrintable(key));

        // Integers stay integers, fractions stay doubles, probes an array of strings.
        QVERIFY(storedAsInteger(valueAt(back, "model", "layers")));
        QVERIFY(storedAsInteger(valueAt(back, "train", "steps")));
        QVERIFY(!storedAsInteger(valueAt(back, "model", "capacity_factor")));
        QVERIFY(!storedAsInteger(valueAt(back, "train", "learning_rate")));
        QCOMPARE(valueAt(back, "train", "learning_rate").toDouble(), 3e-4);
        QCOMPARE(valueAt(back, "model", "share_attention"), QJsonValue(true));
        QCOMPARE(valueAt(back, "train", "probes").toArray(),
                 (QJsonArray{"[MAX 2 9 [MIN 4 7 ] 0 ]", "[SM 1 2 3 ]"}));
        QCOMPARE(qobject_cast<QPlainTextEdit*>(panel.field("train.probes"))->toPlainText(),
                 QStringLiteral("[MAX 2 9 [MIN 4 7 ] 0 ]\n[SM 1 2 3 ]"));
    }

    void shippedPresetKeepsOnlyWhatItSets()
    {
        QFile file(QStringLiteral(WIDELAB_PRESETS_DIR "/widenet.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject preset = QJsonDocument::fromJson(file.readAll()).object();
        QVERIFY(!preset.isEmpty());
        AppPanel panel;
        panel.setDocument(preset);
        // The preset's top_k (2 = min(2, 4)), ffn_dim (1024 = 4 x 256) and
        // eval_capacity_factor (2, a classifier's) are what their rules give:
        // they follow, and the document leaves them out.
        QJsonObject expected = preset;
        QJsonObject model = expected.value("model").toObject();
        model.remove("top_k");
        model.remove("ffn_dim");
        model.remove("eval_capacity_factor");
        expected.insert("model", model);
        QCOMPARE(panel.document(), expected);
        // Absent keys show their defaults.
        QCOMPARE(qobject_cast<QSpinBox*>(panel.field("train.steps"))->value(), 2000);
        QCOMPARE(qobject_cast<QSpinBox*>(panel.field("model.head_dim"))->value(), 32);
    }

    void derivedValuesFollowTheirInputs()
    {
        QFile file(QStringLiteral(WIDELAB_PRESETS_DIR "/widenet.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        AppPanel panel;
        panel.setDocument(QJsonDocument::fromJson(file.readAll()).object());
        auto* routingGroups = qobject_cast<QSpinBox*>(panel.field("model.routing_groups"));
        auto* noise = qobject_cast<QDoubleSpinBox*>(panel.field("model.router_noise_std"));
        QCOMPARE(routingGroups->value(), 6);

        // 6 blocks to 4: valid at once (routing_groups is not left at 6).
        replaceText(panel.field("model.layers"), "4");
        QCOMPARE(routingGroups->value(), 4);
        QVERIFY(assessDocument(panel.document()).valid);
        // 4 to 12: every block routes.
        replaceText(panel.field("model.layers"), "12");
        QCOMPARE(routingGroups->value(), 12);
        // 4 experts to 8: router noise 1/8.
        replaceText(panel.field("model.experts"), "8");
        QCOMPARE(noise->value(), 0.125);
        const ConfigAssessment assessed = assessDocument(panel.document());
        QVERIFY(assessed.valid);
        QCOMPARE(valueAt(assessed.complete, "model", "routing_groups"), QJsonValue(12));
        QCOMPARE(valueAt(assessed.complete, "model", "router_noise_std").toDouble(), 0.125);
        // Shown as derived, and not written.
        QCOMPARE(routingGroups->property("widelabDerived").toBool(), true);
        const QLabel* rule = frameOf(routingGroups)->findChild<QLabel*>("widelabRule");
        QVERIFY(rule && !rule->isHidden());
        QCOMPARE(rule->text(), QStringLiteral("= layers"));
        const QJsonObject model = panel.document().value("model").toObject();
        for (const QString& key : kDerivedKeys)
            QVERIFY2(!model.contains(key), qPrintable(key));
        QCOMPARE(model.value("layers"), QJsonValue(12));
        QCOMPARE(model.value("experts"), QJsonValue(8));
    }

    void aDerivedValueTheUserSetStays()
    {
        AppPanel panel;
        panel.setDocument(completeWideNet());
        auto* headDim = qobject_cast<QSpinBox*>(panel.field("model.head_dim"));
        replaceText(panel.field("model.d_model"), "512");
        QCOMPARE(headDim->value(), 64);  // d_model / heads
        replaceText(headDim, "40");
        QVERIFY(!panel.isFollowing("model.head_dim"));
        QCOMPARE(headDim->property("widelabDerived").toBool(), false);
        replaceText(panel.field("model.d_model"), "256");
        QCOMPARE(headDim->value(), 40);
        QCOMPARE(valueAt(panel.document(), "model", "head_dim"), QJsonValue(40));

        // Its button makes it follow again.
        QSignalSpy changed(&panel, &ConfigPanel::documentChanged);
        auto* follow = frameOf(headDim)->findChild<QToolButton*>();
        QVERIFY(follow && !follow->isHidden());
        QTest::mouseClick(follow, Qt::LeftButton);
        QCOMPARE(changed.count(), 1);
        QVERIFY(panel.isFollowing("model.head_dim"));
        QCOMPARE(headDim->value(), 32);
        QVERIFY(!panel.document().value("model").toObject().contains("head_dim"));

        // A loaded value other than the rule's is the user's.
        panel.setDocument(withValue(completeWideNet(), "model", "routing_groups", 3));
        QVERIFY(!panel.isFollowing("model.routing_groups"));
        QVERIFY(panel.isFollowing("model.head_dim"));
        replaceText(panel.field("model.layers"), "12");
        QCOMPARE(valueAt(panel.document(), "model", "routing_groups"), QJsonValue(3));
    }

    void theSchemaDrivesThePanel()
    {
        // A key added to the core's schema gets a field without the panel knowing it.
        QList<FieldSpec> schema = schemaFields();
        FieldSpec knob;
        knob.key = "model.future_knob";
        knob.type = FieldSpec::Type::Integer;
        knob.min = 1;
        knob.max = 9;
        knob.defaultValue = 3;
        knob.description = "a knob the core grew";
        schema.append(knob);
        // A key dropped from the schema loses its field.
        schema.erase(std::remove_if(schema.begin(), schema.end(), [](const FieldSpec& f) { return f.key == "model.pooler"; }),
                     schema.end());
        ConfigPanel panel(schema);
        auto* spin = qobject_cast<QSpinBox*>(panel.field("model.future_knob"));
        QVERIFY(spin);
        QCOMPARE(spin->value(), 3);
        QCOMPARE(spin->maximum(), 9);
        QCOMPARE(panel.groupOf("model.future_knob"), QStringLiteral("Other"));
        QVERIFY(spin->toolTip().contains("a knob the core grew"));
        QCOMPARE(panel.field("model.pooler"), nullptr);
        QVERIFY(!panel.document().value("model").toObject().contains("future_knob"));
        replaceText(spin, "7");
        QCOMPARE(valueAt(panel.document(), "model", "future_knob"), QJsonValue(7));
    }

    void theLayoutPlacesEveryKeyOfTheSchema()
    {
        AppPanel panel;
        QStringList schemaKeys;
        for (const FieldSpec& spec : schemaFields())
            schemaKeys << spec.key;
        QStringList keys = panel.keys();
        std::sort(keys.begin(), keys.end());
        std::sort(schemaKeys.begin(), schemaKeys.end());
        QCOMPARE(keys, schemaKeys);
        for (const QString& key : std::as_const(keys))
            QVERIFY2(panel.groupOf(key) != "Other", qPrintable(key));
        QCOMPARE(panel.groupOf("model.experts"), QStringLiteral("Experts"));
    }

    void theWheelScrollsUnlessTheUserWorksInTheField()
    {
        AppPanel panel;
        panel.setDocument(completeWideNet());
        panel.resize(420, 500);
        panel.show();
        QApplication::setActiveWindow(&panel);
        QVERIFY(QTest::qWaitForWindowActive(&panel));
        auto* scroll = panel.findChild<QScrollArea*>()->verticalScrollBar();
        auto* layers = qobject_cast<QSpinBox*>(panel.field("model.layers"));
        auto* activation = qobject_cast<QComboBox*>(panel.field("model.activation"));

        // Focused from the keyboard (Tab), then scrolled over: the form scrolls.
        layers->setFocus(Qt::TabFocusReason);
        QVERIFY(layers->hasFocus());
        wheelOver(layers, -120);
        QCOMPARE(layers->value(), 6);
        QVERIFY(scroll->value() > 0);
        activation->setFocus(Qt::TabFocusReason);
        wheelOver(activation, -120);
        QCOMPARE(activation->currentData().toString(), QStringLiteral("gelu"));

        // Clicked into, with the pointer still there: the wheel steps the value.
        QTest::mouseClick(layers->findChild<QLineEdit*>(), Qt::LeftButton);
        QVERIFY(layers->hasFocus());
        wheelOver(layers, 120);
        QCOMPARE(layers->value(), 7);
        // Once the pointer has left it, the field keeps its focus but not the wheel.
        QEvent leave(QEvent::Leave);
        QApplication::sendEvent(layers, &leave);
        QVERIFY(layers->hasFocus());
        wheelOver(layers, 120);
        QCOMPARE(layers->value(), 7);
    }

    void staleCostAndDiagramSaySo()
    {
        AppPanel panel;
        panel.setCost(costOf(26'225'674, 9'800'000, 54'100'000, 52.3e6, 0));
        QVERIFY(panel.isModelCurrent());
        QVERIFY(!panel.costText().contains("Last valid"));
        QGroupBox* architecture = nullptr;
        for (QWidget* w = panel.diagram(); w && !architecture; w = w->parentWidget())
            architecture = qobject_cast<QGroupBox*>(w);
        QVERIFY(architecture);
        panel.setModelCurrent(false);
        QVERIFY2(panel.costText().contains("Last valid model"), qPrintable(panel.costText()));
        QVERIFY(panel.costText().contains("26.2M"));
        QVERIFY(architecture->title().contains("last valid model"));
        QVERIFY(panel.costBreakdown()->isStale());
        panel.setModelCurrent(true);
        QVERIFY(!panel.costText().contains("Last valid"));
        QCOMPARE(architecture->title(), QStringLiteral("Architecture"));
        QVERIFY(!panel.costBreakdown()->isStale());

        // Never valid: nothing to show, and it says so.
        AppPanel fresh;
        fresh.setModelCurrent(false);
        QVERIFY2(fresh.costText().contains("No valid model"), qPrintable(fresh.costText()));
    }

    void inferenceFlopsShowWhereFewer()
    {
        // A classifier read at its CLS token computes less in inference: both
        // figures; where inference computes as much, one.
        AppPanel panel;
        CostSummary cost = costOf(599'000, 599'000, 599'000, 2.62e6, 0);
        cost.inferenceFlopsPerToken = 0.71e6;
        panel.setCost(cost);
        QVERIFY2(panel.costText().contains("2.62M FLOPs per token (710k in inference)"), qPrintable(panel.costText()));
        cost.inferenceFlopsPerToken = cost.flopsPerToken;
        panel.setCost(cost);
        QVERIFY2(!panel.costText().contains("inference"), qPrintable(panel.costText()));
    }

    // In a dark theme the greyed texts (stale numbers, derived values) are still
    // light enough to read: some of the stale cost's pixels are far lighter than
    // the window behind them.
    void greyedTextsReadInADarkTheme()
    {
        QPalette dark;
        dark.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x30));
        dark.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1f, 0x22));
        dark.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
        dark.setColor(QPalette::Button, QColor(0x35, 0x37, 0x3b));
        dark.setColor(QPalette::Mid, QColor(0x2a, 0x2c, 0x2f));
        AppPanel panel;
        panel.setPalette(dark);
        panel.resize(460, 800);
        panel.setCost(costOf(26'225'674, 9'800'000, 54'100'000, 52.3e6, 0));
        panel.setModelCurrent(false);
        auto* cost = panel.findChild<QLabel*>("widelabCost");
        QVERIFY(cost);
        const QImage image = cost->grab().toImage();
        int lightest = 0;
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x)
                lightest = std::max(lightest, image.pixelColor(x, y).lightness());
        QVERIFY2(lightest > QColor(0x2b, 0x2d, 0x30).lightness() + 80, qPrintable(QString::number(lightest)));
    }

    // Beside the diagram, the parts of the assessed model, as `widelab-cli
    // params widenet` prints them (the numbers written out by hand in tst_cli).
    void theBreakdownShowsThePartsOfTheModel()
    {
        QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates));
        AppPanel panel;
        const ConfigAssessment assessment = assessDocument(completeWideNet());
        QVERIFY(assessment.valid);
        panel.setCost(assessment.cost);
        const QStringList lines = panel.costBreakdown()->toTsv().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QVERIFY2(lines.size() == 8, qPrintable(lines.join('\n')));  // header, 6 parts with parameters, total
        QVERIFY2(lines.contains(QStringLiteral("experts\t2,102,272\t1,051,136\t6,306,816\t12.6M\t66.6%")),
                 qPrintable(lines.join('\n')));
        QVERIFY(lines.last().startsWith(QStringLiteral("total\t2,514,954\t1,463,818\t8,040,458\t18.9M\t100.0%")));
    }

    void unknownKeysArePreserved()
    {
        QJsonObject document = completeWideNet();
        document = withValue(document, "model", "future_knob", 5);
        document = withValue(document, "train", "notes", "kept");
        document.insert("extra", QJsonObject{{"a", 1}});
        AppPanel panel;
        panel.setDocument(document);
        replaceText(panel.field("model.layers"), "12");
        const QJsonObject back = panel.document();
        QCOMPARE(valueAt(back, "model", "future_knob"), QJsonValue(5));
        QCOMPARE(valueAt(back, "train", "notes"), QJsonValue("kept"));
        QCOMPARE(back.value("extra").toObject(), (QJsonObject{{"a", 1}}));
        QCOMPARE(valueAt(back, "model", "layers"), QJsonValue(12));
    }

    void valuesTheEditorCannotShowArePreserved()
    {
        QJsonObject document = withValue(completeWideNet(), "model", "layers", "six");
        document = withValue(document, "model", "activation", "tanh");
        AppPanel panel;
        panel.setDocument(document);
        QCOMPARE(valueAt(panel.document(), "model", "layers"), QJsonValue("six"));
        QCOMPARE(valueAt(panel.document(), "model", "activation"), QJsonValue("tanh"));
        QVERIFY(qobject_cast<QComboBox*>(panel.field("model.activation"))->currentText().contains("tanh"));
        replaceText(panel.field("model.layers"), "4");
        QCOMPARE(valueAt(panel.document(), "model", "layers"), QJsonValue(4));
    }

    void typingExpertsChangesExactlyThatKey()
    {
        AppPanel panel;
        const QJsonObject document = completeWideNet();
        panel.setDocument(document);
        QSignalSpy changed(&panel, &ConfigPanel::documentChanged);
        auto* experts = qobject_cast<QSpinBox*>(panel.field("model.experts"));
        QVERIFY(experts);
        QCOMPARE(experts->accessibleName(), QStringLiteral("Experts"));
        replaceText(experts, "16");
        QVERIFY(changed.count() >= 1);
        QCOMPARE(experts->value(), 16);
        QCOMPARE(panel.document(), withValue(withoutDerived(document), "model", "experts", 16));
    }

    void learningRateTakesScientificNotation()
    {
        AppPanel panel;
        const QJsonObject document = completeWideNet();
        panel.setDocument(document);
        QSignalSpy changed(&panel, &ConfigPanel::documentChanged);
        replaceText(panel.field("train.learning_rate"), "2e-5");
        QVERIFY(changed.count() >= 1);
        QCOMPARE(panel.document(), withValue(withoutDerived(document), "train", "learning_rate", 2e-5));
        // The arrows step the leading digit within a decade.
        auto* spin = qobject_cast<QAbstractSpinBox*>(panel.field("train.learning_rate"));
        spin->stepBy(1);
        QCOMPARE(valueAt(panel.document(), "train", "learning_rate").toDouble(), 3e-5);
        spin->stepBy(-3);
        QCOMPARE(valueAt(panel.document(), "train", "learning_rate").toDouble(), 9e-6);
    }

    void probesAreOneLineEach()
    {
        AppPanel panel;
        panel.setDocument(completeWideNet());
        auto* probes = qobject_cast<QPlainTextEdit*>(panel.field("train.probes"));
        probes->moveCursor(QTextCursor::End);
        probes->setFocus();
        QTest::keyClick(probes, Qt::Key_Return);
        QTest::keyClicks(probes, "[MED 3 5 ]");
        QTest::keyClick(probes, Qt::Key_Return);  // a trailing empty line is no probe
        QCOMPARE(valueAt(panel.document(), "train", "probes").toArray(),
                 (QJsonArray{"[MAX 2 9 [MIN 4 7 ] 0 ]", "[SM 1 2 3 ]", "[MED 3 5 ]"}));
    }

    // With image input the probe list offers a picker for "validation:N" or an
    // image file; the image keys appear with it.
    void imageModelsPickImageProbes()
    {
        AppPanel panel;
        panel.setDocument(completeWideNet());
        panel.show();
        QPushButton* add = nullptr;
        for (QPushButton* button : frameOf(panel.field("train.probes"))->findChildren<QPushButton*>())
            if (button->text() == QStringLiteral("Add image..."))
                add = button;
        QVERIFY(add);
        QVERIFY(!add->isVisibleTo(&panel));
        QVERIFY(!panel.field("model.patch_size")->isVisibleTo(&panel));

        auto* input = qobject_cast<QComboBox*>(panel.field("model.input"));
        QVERIFY(input);
        input->setFocus();
        QTest::keyClick(input, Qt::Key_Down);
        QCOMPARE(valueAt(panel.document(), "model", "input"), QJsonValue("image"));
        QVERIFY(add->isVisibleTo(&panel));
        QVERIFY(panel.field("model.patch_size")->isVisibleTo(&panel));

        answerImageProbeDialog(4);
        add->click();
        QCOMPARE(valueAt(panel.document(), "train", "probes").toArray(),
                 (QJsonArray{"[MAX 2 9 [MIN 4 7 ] 0 ]", "[SM 1 2 3 ]", "validation:4"}));
    }

    void issuesMarkTheirField()
    {
        AppPanel panel;
        panel.setDocument(completeWideNet());
        const QString reason = QStringLiteral("3 exceeds model.experts: 2");
        panel.setIssues({{"model.top_k", reason}});

        QWidget* topK = panel.field("model.top_k");
        QCOMPARE(topK->property("widelabIssue").toString(), reason);
        QVERIFY(topK->toolTip().contains(reason));
        QCOMPARE(frameOf(topK)->property("widelabIssue").toBool(), true);
        QCOMPARE(issueTextOf(topK)->text(), reason);
        QVERIFY(!issueTextOf(topK)->isHidden());
        // Only that field.
        QWidget* experts = panel.field("model.experts");
        QCOMPARE(experts->property("widelabIssue").toString(), QString());
        QCOMPARE(frameOf(experts)->property("widelabIssue").toBool(), false);
        QVERIFY(!experts->toolTip().contains(reason));
        auto* documentIssues = panel.findChild<QLabel*>("widelabDocumentIssues");
        QVERIFY(documentIssues->isHidden());

        panel.setIssues({});
        QCOMPARE(topK->property("widelabIssue").toString(), QString());
        QCOMPARE(frameOf(topK)->property("widelabIssue").toBool(), false);
        QVERIFY(!topK->toolTip().contains(reason));
        QVERIFY(issueTextOf(topK)->isHidden());
    }

    void issuesWithoutAFieldAreListedAtTheTop()
    {
        AppPanel panel;
        panel.setDocument(completeWideNet());
        panel.setIssues({{"model.share_attn", "unknown key (did you mean \"share_attention\"?)"},
                         {"", "widenet.json: invalid configuration"},
                         {"model.layers", "exceeds 1024"}});
        auto* documentIssues = panel.findChild<QLabel*>("widelabDocumentIssues");
        QVERIFY(documentIssues);
        QVERIFY(!documentIssues->isHidden());
        QVERIFY(documentIssues->text().contains("model.share_attn"));
        QVERIFY(documentIssues->text().contains("invalid configuration"));
        QVERIFY(!documentIssues->text().contains("exceeds 1024"));  // that one has its field
        QVERIFY(panel.field("model.layers")->toolTip().contains("exceeds 1024"));

        // An issue on a field hidden for this task (task.path under ListOps) is listed too.
        panel.setIssues({{"task.path", "missing: \"classification\" reads its data from a file"}});
        QVERIFY(documentIssues->text().contains("task.path"));
        panel.setIssues({});
        QVERIFY(documentIssues->isHidden());
    }

    void expertFieldsApplyOnlyWithExperts()
    {
        AppPanel panel;
        QJsonObject document = withValue(completeWideNet(), "model", "experts", 1);
        document = withValue(document, "model", "top_k", 1);
        panel.setDocument(document);
        const QStringList expertKeys = {"model.top_k", "model.capacity_factor", "model.eval_capacity_factor",
                                        "model.balance_loss_weight", "model.router_noise_std",
                                        "model.routing_groups", "model.routing_priority",
                                        "model.renormalize_gates", "model.share_router"};
        for (const QString& key : expertKeys)
            QVERIFY2(!panel.field(key)->isEnabled(), qPrintable(key));
        QVERIFY(panel.field("model.experts")->isEnabled());
        // Their values stay in the document.
        QCOMPARE(valueAt(panel.document(), "model", "capacity_factor").toDouble(), 1.2);

        replaceText(panel.field("model.experts"), "2");
        for (const QString& key : expertKeys)
            QVERIFY2(panel.field(key)->isEnabled(), qPrintable(key));
        replaceText(panel.field("model.experts"), "1");
        QVERIFY(!panel.field("model.top_k")->isEnabled());
    }

    void taskFieldsFollowTheTaskKind()
    {
        AppPanel panel;
        panel.setDocument(completeWideNet());
        QVERIFY(!panel.field("task.path")->isVisibleTo(&panel));
        QVERIFY(!panel.field("task.tokenizer")->isVisibleTo(&panel));
        QVERIFY(panel.field("task.min_length")->isVisibleTo(&panel));

        auto* kind = qobject_cast<QComboBox*>(panel.field("task.kind"));
        kind->setFocus();
        QTest::keyClick(kind, Qt::Key_Down);
        QCOMPARE(valueAt(panel.document(), "task", "kind"), QJsonValue("classification"));
        QVERIFY(panel.field("task.path")->isVisibleTo(&panel));
        QVERIFY(!panel.field("task.min_length")->isVisibleTo(&panel));
        // ListOps values are kept while hidden.
        QCOMPARE(valueAt(panel.document(), "task", "min_length"), QJsonValue(16));
        auto* browse = frameOf(panel.field("task.path"))->findChild<QPushButton*>();
        QVERIFY(browse);
        QCOMPARE(browse->text(), QStringLiteral("Browse..."));

        replaceText(panel.field("task.path"), "data/sst2.tsv");
        QCOMPARE(valueAt(panel.document(), "task", "path"), QJsonValue("data/sst2.tsv"));
        // vocab_limit only matters for the character and word tokenizers.
        QVERIFY(!panel.field("task.vocab_limit")->isEnabled());
    }

    // The image keys show only with image input, augmentation only for image
    // tasks, the file keys neither for ListOps nor for generated shapes; the
    // path of an image folder or of CIFAR-10 is picked as a folder.
    void imageFieldsFollowTheInputAndTheTask()
    {
        QHash<QString, QJsonValue> document{{"model.input", "tokens"}, {"task.kind", "listops"}};
        const auto value = [&document](const QString& key) { return document.value(key); };
        const auto visible = [&value](const char* key) { return fieldState(QLatin1String(key), value).visible; };
        for (const char* key : {"model.image_size", "model.patch_size", "model.channels", "task.crop_padding", "task.flip"})
            QVERIFY2(!visible(key), key);
        document["model.input"] = "image";
        for (const char* key : {"model.image_size", "model.patch_size", "model.channels"})
            QVERIFY2(visible(key), key);
        QVERIFY(!visible("task.crop_padding"));

        document["task.kind"] = "shapes";
        QVERIFY(visible("task.crop_padding") && visible("task.flip") && visible("task.train_size"));
        QVERIFY(!visible("task.path") && !visible("task.tokenizer") && !visible("task.min_length"));
        QVERIFY(!pathChoice("task.path", value).folder);

        for (const char* kind : {"image_folder", "cifar10", "fashion_mnist"}) {
            document["task.kind"] = kind;
            QVERIFY2(visible("task.path") && visible("task.crop_padding") && visible("task.validation_fraction"), kind);
            QVERIFY2(!visible("task.tokenizer") && !visible("task.vocab_limit") && !visible("task.train_size"), kind);
            QVERIFY2(pathChoice("task.path", value).folder, kind);
        }
        document["task.kind"] = "classification";
        QVERIFY(visible("task.tokenizer") && !visible("task.crop_padding"));
        QVERIFY(!pathChoice("task.path", value).folder);
        QVERIFY(pathChoice("task.path", value).filter.contains(QStringLiteral("*.tsv")));

        // Every new task kind reads as words in the Task box.
        const FieldPlacement* kind = nullptr;
        for (const FieldGroup& group : configPanelLayout())
            for (const FieldPlacement& field : group.fields)
                if (field.key == QStringLiteral("task.kind"))
                    kind = &field;
        QVERIFY(kind != nullptr);
        QStringList named;
        for (const auto& choice : kind->choiceTexts)
            named << choice.first;
        for (const char* k : {"image_folder", "cifar10", "shapes", "fashion_mnist"})
            QVERIFY2(named.contains(QLatin1String(k)), k);
    }

    void optimizerFieldsFollowTheOptimizer()
    {
        AppPanel panel;
        panel.setDocument(withValue(completeWideNet(), "train", "optimizer", "sgd"));
        QVERIFY(panel.field("train.momentum")->isEnabled());
        QVERIFY(!panel.field("train.beta1")->isEnabled());
        panel.setDocument(completeWideNet());
        QVERIFY(!panel.field("train.momentum")->isEnabled());
        QVERIFY(panel.field("train.beta2")->isEnabled());
    }

    void readOnlyStopsEdits()
    {
        AppPanel panel;
        const QJsonObject document = completeWideNet();
        panel.setDocument(document);
        QSignalSpy changed(&panel, &ConfigPanel::documentChanged);
        panel.setReadOnly(true);
        QVERIFY(panel.isReadOnly());
        replaceText(panel.field("model.experts"), "9");
        replaceText(panel.field("name"), "changed");
        auto* share = qobject_cast<QCheckBox*>(panel.field("model.share_attention"));
        QTest::mouseClick(share, Qt::LeftButton);
        auto* kind = qobject_cast<QComboBox*>(panel.field("task.kind"));
        QTest::keyClick(kind, Qt::Key_Down);
        QCOMPARE(changed.count(), 0);
        QCOMPARE(panel.document(), withoutDerived(document));

        panel.setReadOnly(false);
        replaceText(panel.field("model.experts"), "9");
        QVERIFY(changed.count() >= 1);
        QCOMPARE(valueAt(panel.document(), "model", "experts"), QJsonValue(9));
    }

    void costIsShownInHumanUnits()
    {
        AppPanel panel;
        panel.setCost(costOf(26'225'674, 9'800'000, 54'100'000, 52.3e6, qint64{1288490189}));
        auto* cost = panel.findChild<QLabel*>("widelabCost");
        QVERIFY(cost);
        const QString text = cost->text();
        QVERIFY2(text.contains("26.2M"), qPrintable(text));
        QVERIFY(text.contains("9.8M"));
        QVERIFY(text.contains("54.1M"));
        QVERIFY(text.contains("52.3M FLOPs"));
        QVERIFY(text.contains("1.2 GiB"));
        panel.setCost(costOf(812, 812, 812, 1500, 0));
        QVERIFY2(cost->text().contains("812") && cost->text().contains("1.5k"), qPrintable(cost->text()));
    }

    void anOutOfRangeNumberStaysForTheChecksToName()
    {
        // Typed past its range, a value is kept as typed and the checks say
        // what is wrong, instead of the old value coming back without a word.
        AppPanel panel;
        panel.setDocument(completeWideNet());
        auto* dropout = qobject_cast<NumberSpinBox*>(panel.field("model.dropout"));
        QVERIFY(dropout);
        const double top = dropout->advisedMaximum();
        replaceText(dropout, "1.5");
        dropout->clearFocus();  // editing finished
        QCOMPARE(dropout->value(), 1.5);
        QCOMPARE(valueAt(panel.document(), "model", "dropout").toDouble(), 1.5);
        const ConfigAssessment assessed = assessDocument(panel.document());
        QVERIFY(!assessed.valid);
        bool named = false;
        for (const FieldIssue& issue : assessed.issues)
            named = named || issue.key == QStringLiteral("model.dropout");
        QVERIFY(named);
        // The arrows bring it back within the range and stop at its edge.
        dropout->stepBy(1);
        QCOMPARE(dropout->value(), top);
        dropout->stepBy(1);
        QCOMPARE(dropout->value(), top);
    }

    void presetsEmitTheirName()
    {
        AppPanel panel;
        panel.setPresets({"widenet", "albert"});
        auto* combo = panel.findChild<QComboBox*>();  // the first combo: the preset picker
        QVERIFY(combo);
        QCOMPARE(combo->count(), 3);
        QSignalSpy chosen(&panel, &ConfigPanel::presetChosen);
        combo->setFocus();
        QTest::keyClick(combo, Qt::Key_Down);
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen.at(0).at(0).toString(), QStringLiteral("widenet"));
        // Until the app says the pick opened, the picker shows what the document is.
        QCOMPARE(combo->currentIndex(), 0);
        panel.showPreset(QStringLiteral("widenet"));
        QCOMPARE(combo->currentText(), QStringLiteral("widenet"));
        QCOMPARE(panel.shownPreset(), QStringLiteral("widenet"));
        QCOMPARE(chosen.count(), 1);  // showing is not choosing
        // The list refreshed (a preset saved) keeps it; a file that is no preset shows the invitation.
        panel.setPresets({"albert", "widenet", "mine (yours)"});
        QCOMPARE(combo->currentText(), QStringLiteral("widenet"));
        panel.showPreset(QString());
        QCOMPARE(combo->currentIndex(), 0);
        panel.showPreset(QStringLiteral("no such preset"));
        QCOMPARE(combo->currentIndex(), 0);
        QCOMPARE(panel.shownPreset(), QString());
    }

    void presetsAreListedByNameUnderTheirGroup()
    {
        AppPanel panel;
        panel.setPresetChoices({
            {"transformer-6x8", "Transformer 6x8", "Six layers of eight heads.", "Wide Attention"},
            {"transformer-1x48", "Transformer 1x48", "One layer of 48 heads.", "Wide Attention"},
            {"widenet", "WideNet (laptop scale)", "Shared attention and MoE.", "WideNet"},
            {"mine (yours)", "", "", "Yours"}});
        auto* combo = panel.findChild<QComboBox*>();
        QVERIFY(combo);
        // The invitation, three headings, four presets.
        QCOMPARE(combo->count(), 8);
        QCOMPARE(combo->itemText(1), QStringLiteral("Wide Attention"));
        QCOMPARE(combo->itemText(4), QStringLiteral("WideNet"));
        QCOMPARE(combo->itemText(6), QStringLiteral("Yours"));
        QCOMPARE(combo->itemText(7).trimmed(), QStringLiteral("mine (yours)"));  // no name: its id
        const auto* model = qobject_cast<QStandardItemModel*>(combo->model());
        QVERIFY(model);
        QVERIFY(!(model->item(1)->flags() & Qt::ItemIsEnabled));  // a heading cannot be picked
        QVERIFY(model->item(2)->flags() & Qt::ItemIsEnabled);
        QCOMPARE(combo->itemData(5, Qt::ToolTipRole).toString(), QStringLiteral("Shared attention and MoE.\n(widenet)"));
        // Down from the invitation skips the heading to the first preset.
        QSignalSpy chosen(&panel, &ConfigPanel::presetChosen);
        combo->setFocus();
        QTest::keyClick(combo, Qt::Key_Down);
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen.at(0).at(0).toString(), QStringLiteral("transformer-6x8"));
        // Shown by its document's name, not its file's.
        panel.showPreset(QStringLiteral("widenet"));
        QCOMPARE(combo->currentText().trimmed(), QStringLiteral("WideNet (laptop scale)"));
    }

    void devicesComeFromTheApp()
    {
        AppPanel panel;
        panel.setDevices({{"auto", "Automatic"}, {"cpu", "CPU"}, {"cuda:0", "NVIDIA H100 (80 GB)"}});
        panel.setDocument(withValue(completeWideNet(), "train", "device", "cuda:0"));
        auto* device = qobject_cast<QComboBox*>(panel.field("train.device"));
        QCOMPARE(device->currentText(), QStringLiteral("NVIDIA H100 (80 GB)"));
        QCOMPARE(valueAt(panel.document(), "train", "device"), QJsonValue("cuda:0"));
        QVERIFY(panel.field("train.bf16")->isEnabled());

        // A device this machine lacks is kept, not replaced.
        panel.setDocument(withValue(completeWideNet(), "train", "device", "cuda:3"));
        QCOMPARE(valueAt(panel.document(), "train", "device"), QJsonValue("cuda:3"));
        // Choosing the CPU turns bf16 off as inapplicable.
        panel.setDocument(withValue(completeWideNet(), "train", "device", "cpu"));
        QVERIFY(!panel.field("train.bf16")->isEnabled());
        QCOMPARE(valueAt(panel.document(), "train", "bf16"), QJsonValue(true));
    }

    void architectureGoesToTheDiagram()
    {
        AppPanel panel;
        ArchitectureSketch sketch;
        sketch.layers = 6;
        sketch.shareAttention = true;
        sketch.experts = 4;
        sketch.topK = 2;
        sketch.heads = 8;
        panel.setArchitecture(sketch);
        QCOMPARE(panel.diagram()->sketch().layers, 6);
        QVERIFY(panel.diagram()->accessibleDescription().startsWith("6 blocks, attention shared"));
    }
};

QTEST_MAIN(TestConfigPanel)
#include "tst_configpanel.moc"
