// The small translation model tst_encoderdecoder and tst_decoding build (V 19,
// D 16, 2 encoder and 3 decoder blocks, no dropout), and the message of what a call throws.
#pragma once

#include "TestSupport.h"

#include <QString>

#include <functional>
#include <string>

namespace widelab::test {

inline ModelConfig translationConfig(const std::string& overrides = "{}")
{
    return modelConfig(R"({"vocab_size": 19, "max_len": 12, "d_model": 16, "heads": 2, "ffn_dim": 24,
                            "layers": 2, "decoder_layers": 3, "dropout": 0.0, "head": "translation"})",
                       overrides);
}

// The message of the std::exception `call` throws, or "" when it throws none.
inline QString thrownMessage(const std::function<void()>& call)
{
    try {
        call();
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return QString();
}

}  // namespace widelab::test
