// defines: widelab::TranslationView, a translation model's probe: its
// translation at the shown step beside the compared run's, every translation
// of it so far (the text improving over training), and the decoder's
// cross-attention over the source (what each target token is written from:
// the alignment) for a chosen decoder block and head or the mean over heads
#pragma once

#include "InsightPage.h"

class QComboBox;
class QLabel;
class QListWidget;

namespace widelab {

class MatrixView;

class TranslationView : public InsightPage {
    Q_OBJECT
public:
    explicit TranslationView(QWidget* parent = nullptr);

    void refresh() override;
    QString exportTitle() const override;
    QWidget* exportArea() override { return m_body; }
    QByteArray csv() const override;

    void setBlock(int block);  // 0-based decoder block
    void setHead(int head);    // -1: the mean over heads

    // What each decoder position of `probe` writes: the next target token, and
    // at the last position the prediction's most likely token (normally "</s>").
    static QStringList writtenTokens(const ProbeResult& probe);
    // A decoder block's cross-attention for `head` (-1: the mean over heads),
    // target positions x source tokens, row-major; empty outside the maps or for
    // a map of another size than its tokens (a damaged line).
    static QVector<float> crossMap(const ProbeResult& probe, int block, int head);

    QLabel* translation() const { return m_current; }
    QListWidget* history() const { return m_history; }
    MatrixView* map() const { return m_map; }
    QComboBox* blockBox() const { return m_block; }
    QComboBox* headBox() const { return m_head; }

private:
    const ProbeResult* shownCapture(const InsightSource& source) const;
    void showHistory(const ProbeResult& shown);
    void showMap(const ProbeResult& shown);

    QLabel* m_empty = nullptr;
    QWidget* m_body = nullptr;
    QLabel* m_source = nullptr;
    QLabel* m_current = nullptr;
    QLabel* m_compared = nullptr;
    QListWidget* m_history = nullptr;
    QComboBox* m_block = nullptr;
    QComboBox* m_head = nullptr;
    MatrixView* m_map = nullptr;
};

}  // namespace widelab
