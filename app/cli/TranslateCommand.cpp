#include "TranslateCommand.h"

#include "RunCommands.h"
#include "measure/Bleu.h"
#include "model/BatchDecoding.h"
#include "run/RunDirectory.h"
#include "vocab/ByteText.h"
#include "vocab/Utf8.h"

#include <nlohmann/json.hpp>

namespace widelab {

namespace {

std::string lineOf(std::string text)
{
    for (char& c : text)
        if (c == '\n' || c == '\r')
            c = ' ';
    return text;
}

}  // namespace

int translateCommand(const TranslateArguments& a, std::ostream& out, std::ostream& err)
{
    if (a.positional.size() != 1 || a.text.empty() == a.file.empty())
        throw RunUsageError("usage: widelab-cli translate RUN_DIR --text \"...\" | --file FILE [--checkpoint "
                            "latest|best|FILE] [--beam N] [--length-penalty A] [--batch N] [--json]");
    OpenedRun opened = openRun(a.positional.front(), a.checkpoint);
    for (const std::string& warning : opened.warnings)
        err << "warning: " << warning << "\n";
    if (!opened.document.model.isTranslation())
        throw RunUsageError(a.positional.front() + " is not a translation run (its model.head is \""
                            + opened.document.model.toJson().value("head", std::string()) + "\")");
    const Tokenizer& tokenizer = opened.tokenizer;
    DecodeOptions options = decodingFor(tokenizer);  // refuses a tokenizer without start and end tokens
    options.beamSize = a.beam;
    options.lengthPenalty = a.lengthPenalty;

    const std::vector<std::string> texts =
        a.file.empty() ? std::vector<std::string>{a.text} : readScoringLines(a.file);
    // The sources the model can read: cut to its positions; empty lines translate to nothing.
    const std::int64_t longest = opened.document.model.maxLen;
    std::vector<std::vector<std::int64_t>> sources;
    std::vector<std::size_t> sourceLine;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        std::vector<std::int64_t> ids = tokenizer.encode(texts[i]);
        if (ids.empty())
            continue;
        if (static_cast<std::int64_t>(ids.size()) > longest) {
            err << "warning: " << (a.file.empty() ? std::string("the text") : a.file + ":" + std::to_string(i + 1))
                << " has " << ids.size() << " tokens; the model reads " << longest << ", the rest is not translated\n";
            ids.resize(static_cast<std::size_t>(longest));
        }
        sources.push_back(std::move(ids));
        sourceLine.push_back(i);
    }
    const std::vector<std::vector<std::int64_t>> translated = decodeAll(*opened.model, sources, options, a.batch);
    std::vector<std::string> translations(texts.size());
    for (std::size_t k = 0; k < translated.size(); ++k)
        // A byte-level vocabulary can end a translation inside a character: printed as U+FFFD, as UTF-8 always.
        translations[sourceLine[k]] = replaceInvalidUtf8(tokenizer.decode(translated[k]));

    for (std::size_t i = 0; i < texts.size(); ++i) {
        if (a.json)
            out << nlohmann::json({{"source", legibleBytes(texts[i])}, {"translation", legibleBytes(translations[i])}})
                       .dump()
                << "\n";
        else  // a line each: a line break the model writes would misalign them
            out << lineOf(translations[i]) << "\n";
    }
    return 0;
}

}  // namespace widelab
