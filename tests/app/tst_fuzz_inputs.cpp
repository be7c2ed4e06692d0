// Issue 15's fuzz suite, its inputs: the real widelab-cli fed generated malformed
// configurations (class 1) and data files (class 2). Every case must end with a
// clean exit and a message naming the file or key, or be accepted with correct
// results: no signal, no hang, no silently altered run.
//
// Seeded and bounded (FuzzTestSupport.h): this part takes 60 % of
// WIDELAB_FUZZ_SECONDS (default 150 s, both parts together), tst_fuzz_runs the rest.
#include "FuzzTestSupport.h"

using namespace widelab::fuzztest;

namespace {

// Numbers in `text` that no accounting can produce: negative counts, NaN, Inf.
bool hasAbsurdNumber(const QString& text)
{
    static const QRegularExpression absurd("(^|[\\s(:\"])-\\d|\\b(nan|inf|infinity)\\b",
                                           QRegularExpression::CaseInsensitiveOption);
    return absurd.match(text).hasMatch();
}

const std::string kPlaceholder = "@@WIDELAB-FUZZ-PLACEHOLDER@@";

// The document's text with the value at `path` replaced by raw text (which need
// not be JSON: that is the point).
std::string withRawValue(Json document, const KeyPath& path, const std::string& raw)
{
    valueAt(document, path) = kPlaceholder;
    std::string text = document.dump(2);
    const std::string quoted = "\"" + kPlaceholder + "\"";
    text.replace(text.find(quoted), quoted.size(), raw);
    return text;
}

std::string nested(Rng& rng, std::int64_t depth)
{
    const bool arrays = uniform(rng, 0, 1) == 0;
    std::string text;
    text.reserve(static_cast<std::size_t>(depth) * 8);
    for (std::int64_t i = 0; i < depth; ++i)
        text += arrays ? "[" : "{\"a\":";
    text += "1";
    for (std::int64_t i = 0; i < depth; ++i)
        text += arrays ? "]" : "}";
    return text;
}

}  // namespace

class TestFuzzInputs : public FuzzTestCase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { FuzzTestCase::initTestCase(); logSlice(); }
    void configurations();
    void dataFiles();
    void cleanupTestCase() { FuzzTestCase::cleanupTestCase(); }

public:
    TestFuzzInputs() : FuzzTestCase("inputs", 0.0, 0.65, 0.6) {}
};

// ------------------------------------------------------------------ class 1: configurations

void TestFuzzInputs::configurations()
{
    ClassStats& stats = m_stats[Configurations];
    stats.name = "configurations";
    enum Kind { Delete, Null, WrongType, ExtremeNumber, UnknownKey, DuplicateKey, Deep, NanText, Truncated,
                RandomBytes, InvalidUtf8, Empty, Bom, AbsurdSize, Kinds };
    static const char* const kindNames[] = {"delete a key", "null", "wrong type", "extreme number", "unknown key",
                                            "duplicate key", "deep nesting", "NaN-like text", "truncated",
                                            "random bytes", "invalid UTF-8", "empty file", "BOM", "absurd size"};
    std::map<std::string, QString> baseCheck;  // check's output for each unmutated document

    for (int index = 0; index < Kinds || timeLeft(0.45); ++index) {
        Rng rng = caseRng(m_seed, Configurations, index);
        const auto kind = static_cast<Kind>(index % Kinds);
        // The tiny run documents most of the time, a shipped preset otherwise (never trained).
        const int base = static_cast<int>(uniform(rng, 0, 4));
        const bool preset = base >= 3;
        Json document = base == 0 ? m_listops : base == 1 ? m_classification : base == 2 ? m_languageModel
                                                                                           : pick(rng, m_presets).second;
        const QString baseName = base == 0 ? "listops" : base == 1 ? "classification" : base == 2 ? "language_model"
                                                                                                 : "preset";
        const std::vector<KeyPath> paths = keyPaths(document);
        KeyPath key = pick(rng, paths);
        QString description = QString("%1 on %2").arg(kindNames[kind], baseName);
        std::string text;
        // What a refusal must name: the mutated key, or the file (parse errors).
        QStringList names;
        bool mustRefuse = false, anyKey = false, sameAsBase = false;

        const std::vector<Json> numbers = {1e308, -1, 0, -1e308, 1e17, 9223372036854775807LL, 1.5, 1000000,
                                           -0.0, 4294967297LL};
        switch (kind) {
        case Delete: {
            Json& parent = key.size() == 1 ? document : valueAt(document, KeyPath(key.begin(), key.end() - 1));
            parent.erase(key.back());
            text = document.dump(2);
            names << dotted(key);
            anyKey = true;
            break;
        }
        case Null:
            valueAt(document, key) = nullptr;
            text = document.dump(2);
            names << dotted(key);
            break;
        case WrongType: {
            const Json original = valueAt(document, key);
            std::vector<Json> others;
            if (!original.is_string())
                others.push_back("12");
            if (!original.is_array())
                others.push_back(Json::array({1, 2}));
            if (!original.is_object())
                others.push_back(Json::object({{"x", 1}}));
            if (!original.is_boolean())
                others.push_back(true);
            if (!original.is_number())
                others.push_back(3);
            valueAt(document, key) = pick(rng, others);
            text = document.dump(2);
            description += " (" + QString::fromStdString(valueAt(document, key).dump()) + ")";
            names << dotted(key);
            mustRefuse = true;
            break;
        }
        case ExtremeNumber: {
            // At a number of the document (every document has some).
            std::vector<KeyPath> numeric;
            for (const auto& p : paths)
                if (valueAt(document, p).is_number())
                    numeric.push_back(p);
            key = pick(rng, numeric);
            valueAt(document, key) = pick(rng, numbers);
            text = document.dump(2);
            description += " (" + QString::fromStdString(valueAt(document, key).dump()) + ")";
            names << dotted(key);
            anyKey = true;
            break;
        }
        case UnknownKey: {
            const std::vector<std::string> unknown = {"zork", "head_dims", "lerning_rate", "layer", "steps ",
                                                      "Model", "tokeniser"};
            std::vector<KeyPath> objects = {KeyPath{}};
            for (const auto& p : paths)
                if (valueAt(document, p).is_object())
                    objects.push_back(p);
            const KeyPath parent = pick(rng, objects);
            const std::string name = pick(rng, unknown);
            (parent.empty() ? document : valueAt(document, parent))[name] = 1;
            KeyPath full = parent;
            full.push_back(name);
            text = document.dump(2);
            names << dotted(full);
            description += " (" + dotted(full) + ")";
            mustRefuse = true;
            break;
        }
        case DuplicateKey: {
            // The key twice, with another value the second time: which one counts is
            // nowhere said, so the document must be refused.
            Json original = valueAt(document, key);
            Json other = original.is_number() ? Json(original.get<double>() + 1)
                         : original.is_string() ? Json(original.get<std::string>() + "x")
                                                : Json(123);
            if (uniform(rng, 0, 1))
                std::swap(other, original);
            text = withRawValue(document, key, original.dump() + ", \"" + key.back() + "\": " + other.dump());
            names << dotted(key) << ("\"" + QString::fromStdString(key.back()) + "\"");
            description += " (" + dotted(key) + ": " + QString::fromStdString(original.dump()) + ", then "
                           + QString::fromStdString(other.dump()) + ")";
            mustRefuse = true;
            break;
        }
        case Deep: {
            static const std::vector<std::int64_t> depths = {10, 100, 1000, 10000, 100000};
            const std::int64_t depth = pick(rng, depths);
            text = withRawValue(document, key, nested(rng, depth));
            description += QString(" (depth %1 at %2)").arg(depth).arg(dotted(key));
            names << dotted(key);
            mustRefuse = true;
            anyKey = true;
            break;
        }
        case NanText: {
            const std::vector<std::string> nans = {"NaN", "nan", "Infinity", "-Infinity", "inf", "1e999", "0x10",
                                                   "+1", ".5", "01"};
            const std::string raw = pick(rng, nans);
            text = withRawValue(document, key, raw);
            description += " (" + QString::fromStdString(raw) + " at " + dotted(key) + ")";
            mustRefuse = raw != "1e999";  // a JSON number, if an absurd one
            anyKey = true;
            names << dotted(key);
            break;
        }
        case Truncated: {
            const std::string full = document.dump(2);
            text = full.substr(0, static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(full.size()) - 2)));
            description += QString(" (%1 of %2 bytes)").arg(text.size()).arg(full.size());
            mustRefuse = true;
            break;
        }
        case RandomBytes:
            text = randomBytes(rng, uniform(rng, 1, 3000)).toStdString();
            mustRefuse = true;
            break;
        case InvalidUtf8: {
            const std::vector<std::string> bad = {"\xff", "\xc3\x28", "\xe2\x82", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80",
                                                  "\xc0\xaf"};
            const std::string raw = "\"a" + pick(rng, bad) + "b\"";
            if (uniform(rng, 0, 1)) {
                text = withRawValue(document, key, raw);
                description += " (in the value of " + dotted(key) + ")";
            } else {
                document[kPlaceholder] = 1;
                text = document.dump(2);
                const std::string quoted = "\"" + kPlaceholder + "\"";
                text.replace(text.find(quoted), quoted.size(), raw);
                description += " (in a key)";
            }
            mustRefuse = true;
            break;
        }
        case Empty:
            text = uniform(rng, 0, 1) ? "" : "  \n\t ";
            mustRefuse = true;
            break;
        case Bom:
            text = "\xEF\xBB\xBF" + document.dump(2);
            sameAsBase = true;
            break;
        case AbsurdSize: {
            const std::vector<std::pair<std::string, Json>> sizes = {
                {"layers", 1000000}, {"d_model", 1000000000}, {"experts", 1000000}, {"vocab_size", 1000000000000LL},
                {"max_len", 1000000000}, {"heads", 100000000}, {"ffn_dim", 100000000000000000LL},
                {"paths", 100000}, {"head_dim", 1000000000}};
            const auto& [name, value] = pick(rng, sizes);
            document["model"][name] = value;
            if (name == "experts" || uniform(rng, 0, 2) == 0)
                document["model"]["top_k"] = 2;
            text = document.dump(2);
            description += QString(" (model.%1 = %2)").arg(QString::fromStdString(name), QString::fromStdString(value.dump()));
            names << "model." + QString::fromStdString(name);
            anyKey = true;
            break;
        }
        case Kinds:
            break;
        }
        if (kind == Delete || kind == Null || kind == WrongType || kind == ExtremeNumber)
            description += " at " + dotted(key);

        const QString file = path(QString("config-%1.json").arg(index));
        writeBytes(file, QByteArray::fromStdString(text));
        // Every configuration message starts with the file: a refusal of a document
        // whose key was changed must name the key too; one that is not JSON, the file.
        const bool aboutTheText = kind == Deep || kind == NanText || kind == Truncated || kind == RandomBytes
                                  || kind == InvalidUtf8 || kind == Empty || kind == Bom;
        QStringList refusalNames = names;
        if (aboutTheText)
            refusalNames << file << fileName(file);
        QString failure;
        const Proc check = runCli({"check", file});
        failure = cleanEnd(check, refusalNames, anyKey);
        if (failure.isEmpty() && mustRefuse && check.code == 0) {
            failure = "check accepted it";
            if (!preset) {  // and train: is it check alone, or both?
                const Proc trained = train(file, path(QString("config-run-%1").arg(index)), {"--steps", "2"});
                if (const QString trainFailure = cleanEnd(trained, refusalNames, anyKey); !trainFailure.isEmpty())
                    failure += "; train: " + trainFailure;
                else
                    failure += trained.code == 0 ? ", and so did train"
                                                 : "; train refuses it: " + excerpt(trained.err, 200);
            }
        }
        if (failure.isEmpty() && sameAsBase && check.code == 0) {
            const std::string baseKey = preset ? "preset" : baseName.toStdString();
            if (!preset) {
                if (!baseCheck.count(baseKey)) {
                    const QString plain = path(QString("config-%1-plain.json").arg(index));
                    writeBytes(plain, QByteArray::fromStdString(document.dump(2)));
                    baseCheck[baseKey] = runCli({"check", plain}).out;
                }
                if (check.out != baseCheck[baseKey])
                    failure = "check accepted it with another result than without the BOM";
            }
        }
        if (failure.isEmpty()) {
            const Proc params = runCli({"params", file});
            failure = cleanEnd(params, refusalNames, anyKey);
            if (failure.isEmpty() && params.code == 0 && hasAbsurdNumber(params.out))
                failure = "params printed an impossible number: " + excerpt(params.out, 1500);
        }
        // A sample is trained: what check accepts, train must accept.
        const bool trainIt = !preset && (uniform(rng, 0, 3) == 0 || (check.code == 0 && uniform(rng, 0, 1) == 0));
        bool accepted = check.code == 0;
        if (failure.isEmpty() && trainIt) {
            const QString out = path(QString("config-run-%1").arg(index));
            const Proc trained = train(file, out, {"--steps", "2"});
            description += " (trained)";
            failure = cleanEnd(trained, refusalNames, anyKey);
            const bool resourceRefusal = trained.err.contains("memory") || trained.err.contains("not finite");
            if (failure.isEmpty() && check.code == 0 && trained.code != 0 && !resourceRefusal)
                failure = "check accepts it but train refuses it: " + excerpt(trained.err);
            if (failure.isEmpty() && check.code != 0 && trained.code == 0)
                failure = "check refuses it but train accepts it: " + excerpt(check.err);
            if (failure.isEmpty() && trained.code == 0 && trainLines(out).isEmpty())
                failure = "train exited 0 but wrote no train line to metrics.jsonl";
            accepted = trained.code == 0;
            if (failure.isEmpty())
                removePath(out);
        }
        record(stats, index, description, accepted, failure, {file});
    }
    finishClass(stats);
}

// ------------------------------------------------------------------ class 2: data files

void TestFuzzInputs::dataFiles()
{
    ClassStats& stats = m_stats[DataFiles];
    stats.name = "data files";
    enum Kind { RandomBytes, InvalidUtf8, Unicode, LineEnds, Empty, HeaderOnly, NoSeparator, UnclosedQuote,
                HugeLine, NulBytes, TextLabels, OneLabel, Bom, TooShort, NotAFile, Kinds };
    static const char* const kindNames[] = {"random bytes", "invalid UTF-8", "accents/CJK/emoji", "line endings",
                                            "empty file", "only a header", "no separator", "unclosed quote",
                                            "huge line", "NUL bytes", "text labels", "one label", "BOM",
                                            "too short", "not a file"};
    const std::vector<std::string> tokenizers = {"byte", "character", "word"};
    const std::vector<std::string> unicode = {"caf\xc3\xa9", "na\xc3\xafve", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
                                              "\xf0\x9f\x98\x80", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
                                              "\xce\xb1\xce\xb2\xce\xb3", "\xd8\xb3\xd9\x84\xd8\xa7\xd9\x85", "plain"};

    for (int index = 0; index < Kinds || timeLeft(0.65); ++index) {
        Rng rng = caseRng(m_seed, DataFiles, index);
        const auto kind = static_cast<Kind>(index % Kinds);
        const bool languageModel = kind != HeaderOnly && kind != NoSeparator && kind != UnclosedQuote
                                   && kind != TextLabels && kind != OneLabel && kind != LineEnds
                                   && uniform(rng, 0, 2) == 0;
        const bool csv = !languageModel && (kind == UnclosedQuote || uniform(rng, 0, 2) == 0);
        std::string tokenizer = pick(rng, tokenizers);
        if (kind == InvalidUtf8)
            tokenizer = uniform(rng, 0, 1) ? "character" : "word";
        Json document = languageModel ? m_languageModel : m_classification;
        document["task"]["tokenizer"] = tokenizer;
        const QString data = path(QString("data-%1.%2").arg(index).arg(languageModel ? "txt" : csv ? "csv" : "tsv"));
        QString description = QString("%1, %2 %3 tokenizer")
                                  .arg(kindNames[kind], languageModel ? "language model" : csv ? "CSV" : "TSV")
                                  .arg(QString::fromStdString(tokenizer));

        // A valid file of this kind, to start from.
        auto validRows = [&](const std::vector<std::string>& extra, int rows, const std::string& lineEnd) {
            const std::vector<std::string> words = {"good", "bad", "fine", "awful", "great", "plot", "actor"};
            std::string text;
            for (int row = 0; row < rows; ++row) {
                std::string line;
                for (std::int64_t w = uniform(rng, 2, 8); w > 0; --w)
                    line += (line.empty() ? "" : " ") + (extra.empty() || uniform(rng, 0, 1) ? pick(rng, words)
                                                                                           : pick(rng, extra));
                const std::string label = std::vector<std::string>{"pos", "neg", "mixed"}[static_cast<std::size_t>(row % 3)];
                if (languageModel)
                    text += line + lineEnd;
                else
                    text += label + (csv ? "," : "\t") + line + lineEnd;
            }
            return text;
        };
        QByteArray bytes;
        bool mustAccept = false, mustRefuse = false, sameAsLf = false;
        std::string lf;
        switch (kind) {
        case RandomBytes:
            bytes = randomBytes(rng, uniform(rng, 1, 5000));
            break;
        case InvalidUtf8: {
            std::string text = validRows({}, 40, "\n");
            const std::vector<std::string> bad = {"\xff", "\xc3\x28", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\x80"};
            const std::string cut = pick(rng, bad);
            // Into a text, not a label: after the separator of some row.
            std::size_t at = text.find(languageModel ? ' ' : csv ? ',' : '\t',
                                       static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(text.size()) / 2)));
            text.insert(at == std::string::npos ? 0 : at + 1, cut + "x");
            bytes = QByteArray::fromStdString(text);
            mustRefuse = true;
            break;
        }
        case Unicode:
            // A language model needs a window of 33 tokens for each split: with the
            // word tokenizer, 40 rows of 2-8 words can be too few (seed 77, case 17).
            bytes = QByteArray::fromStdString(validRows(unicode, languageModel ? 200 : 40, "\n"));
            mustAccept = true;
            break;
        case LineEnds: {
            lf = validRows({}, 45, "\n");
            const int style = static_cast<int>(uniform(rng, 0, 2));
            std::string text;
            for (const char c : lf) {
                if (c != '\n')
                    text += c;
                else if (style == 0 || (style == 2 && uniform(rng, 0, 2) == 0))
                    text += "\r\n";
                else if (style == 1 || uniform(rng, 0, 1) == 0)
                    text += "\r";
                else
                    text += "\n";
            }
            description += style == 0 ? " (CRLF)" : style == 1 ? " (CR only)" : " (mixed)";
            bytes = QByteArray::fromStdString(text);
            sameAsLf = true;
            mustAccept = true;
            break;
        }
        case Empty:
            bytes = uniform(rng, 0, 1) ? QByteArray() : QByteArray("\n\n\r\n");
            mustRefuse = true;
            break;
        case HeaderOnly:
            bytes = csv ? "label,text\n" : "label\ttext\n";
            break;
        case NoSeparator: {
            std::string text = validRows({}, 30, "\n");
            text.insert(static_cast<std::size_t>(uniform(rng, 0, 1) ? 0 : text.size()), "just some words without a separator\n");
            bytes = QByteArray::fromStdString(text);
            mustRefuse = true;
            break;
        }
        case UnclosedQuote: {
            std::string text = validRows({}, 30, "\n");
            text += "pos,\"an unclosed quoted text\nneg,more\n";
            bytes = QByteArray::fromStdString(text);
            mustRefuse = true;
            break;
        }
        case HugeLine: {
            std::string text = validRows({}, 30, "\n");
            std::string huge(static_cast<std::size_t>(uniform(rng, 1, 4) * 1000000), 'a');
            for (std::size_t i = 7; i < huge.size(); i += 7)
                huge[i] = ' ';
            text += languageModel ? huge + "\n" : std::string("pos") + (csv ? "," : "\t") + huge + "\n";
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case NulBytes: {
            std::string text = validRows({}, 40, "\n");
            for (std::int64_t n = uniform(rng, 1, 5); n > 0; --n)
                text.insert(static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(text.size()))), 1, '\0');
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case TextLabels: {
            std::string text;
            const std::vector<std::string> labels = {"1.5", "yes", "-3", "caf\xc3\xa9", "\"quoted\"", "a b",
                                                     "0", "2", "999999", "00", "1", "7"};
            const std::int64_t set = uniform(rng, 0, 3);  // names, names, numbers, numbers
            for (int row = 0; row < 40; ++row)
                text += labels[static_cast<std::size_t>(set * 3 + row % 3)] + (csv ? "," : "\t") + "some text "
                        + std::to_string(row) + "\n";
            description += " (" + QString::fromStdString(labels[static_cast<std::size_t>(set * 3)]) + ", ...)";
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case OneLabel: {
            std::string text;
            for (int row = 0; row < 30; ++row)
                text += std::string("only") + (csv ? "," : "\t") + "text number " + std::to_string(row) + "\n";
            bytes = QByteArray::fromStdString(text);
            break;
        }
        case Bom:
            bytes = "\xEF\xBB\xBF" + QByteArray::fromStdString(validRows({}, 40, "\n"));
            mustAccept = true;
            break;
        case TooShort:
            bytes = languageModel ? QByteArray("ab") : QByteArray(csv ? "pos,a\n" : "pos\ta\n");
            break;
        case NotAFile:
            QDir().mkpath(data);
            break;
        case Kinds:
            break;
        }
        if (kind != NotAFile)
            writeBytes(data, bytes);
        document["task"]["path"] = data.toStdString();
        const QString config = writeDocument(QString("data-%1.json").arg(index), document);
        const QString out = path(QString("data-run-%1").arg(index));
        const Proc trained = train(config, out, {"--steps", "2"});
        QString failure = cleanEnd(trained, {data, fileName(data)}, /*anyKey=*/kind == OneLabel || kind == HeaderOnly || kind == TextLabels || kind == TooShort);
        if (failure.isEmpty() && mustAccept && trained.code != 0)
            failure = "refused a valid file: " + excerpt(trained.err);
        if (failure.isEmpty() && mustRefuse && trained.code == 0)
            failure = "accepted it";
        if (failure.isEmpty() && trained.code == 0 && trainLines(out).isEmpty())
            failure = "train exited 0 but wrote no train line";
        if (failure.isEmpty() && sameAsLf) {
            // The same rows with "\n" line ends must train exactly alike.
            const QString lfData = path(QString("data-%1-lf.%2").arg(index).arg(csv ? "csv" : "tsv"));
            writeBytes(lfData, QByteArray::fromStdString(lf));
            document["task"]["path"] = lfData.toStdString();
            const QString lfOut = path(QString("data-run-%1-lf").arg(index));
            const Proc reference = train(writeDocument(QString("data-%1-lf.json").arg(index), document), lfOut,
                                         {"--steps", "2"});
            if (reference.code != 0)
                failure = "the LF file itself is refused: " + excerpt(reference.err);
            else if (const QString difference = compareLines(trainLines(out), trainLines(lfOut)); !difference.isEmpty())
                failure = "trains differently from the same rows with LF line ends: " + difference;
        }
        record(stats, index, description, trained.code == 0, failure, {data, config});
        if (failure.isEmpty())
            removePath(out);
    }
    finishClass(stats);
}

QTEST_GUILESS_MAIN(TestFuzzInputs)
#include "tst_fuzz_inputs.moc"
