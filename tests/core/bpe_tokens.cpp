// bpe_tokens: the C++ side of tests/python/test_bpe_tokenizer.py, which checks that the Python package encodes,
// decodes and shows bpe tokens exactly as the core does.
//   bpe_tokens learn MERGES CORPUS OUT.json   learns up to MERGES merges from CORPUS's text, writes tokenizer.json
//   bpe_tokens encode TOKENIZER.json INPUTS   INPUTS holds one text a line, in hex (any bytes); prints a JSON line
//                                             a text: {"ids": [...], "tokens": [...], "decoded": "<hex>"}
#include "data/Tokenizer.h"

#include <fstream>
#include <iostream>
#include <sstream>

using namespace widelab;

namespace {

std::string readFile(const char* path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error(std::string(path) + ": cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string hex(std::string_view bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (const char c : bytes) {
        out += digits[static_cast<unsigned char>(c) >> 4];
        out += digits[static_cast<unsigned char>(c) & 15];
    }
    return out;
}

std::string unhex(const std::string& text)
{
    std::string out;
    for (std::size_t i = 0; i + 1 < text.size(); i += 2)
        out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
    return out;
}

}  // namespace

int main(int argc, char** argv)
{
    try {
        const std::string command = argc > 1 ? argv[1] : "";
        if (command == "learn" && argc == 5) {
            VocabularyBuilder builder(TokenizerKind::Bpe);
            builder.add(readFile(argv[3]));
            std::ofstream(argv[4]) << builder.buildBpe(std::stoll(argv[2])).toJson().dump() << "\n";
            return 0;
        }
        if (command == "encode" && argc == 4) {
            const Tokenizer tokenizer = Tokenizer::fromJson(nlohmann::json::parse(readFile(argv[2])));
            std::istringstream lines(readFile(argv[3]));
            for (std::string line; std::getline(lines, line);) {
                const std::vector<std::int64_t> ids = tokenizer.encode(unhex(line));
                nlohmann::json tokens = nlohmann::json::array();
                for (const std::int64_t id : ids)
                    tokens.push_back(tokenizer.tokenText(id));
                std::cout << nlohmann::json{{"ids", ids}, {"tokens", tokens}, {"decoded", hex(tokenizer.decode(ids))}}
                                 .dump()
                          << "\n";
            }
            return 0;
        }
        std::cerr << "usage: bpe_tokens learn MERGES CORPUS OUT.json | encode TOKENIZER.json INPUTS\n";
    } catch (const std::exception& error) {
        std::cerr << "bpe_tokens: " << error.what() << "\n";
    }
    return 1;
}
