// The small translation model tst_encoderdecoder, tst_decoding and tst_beamsearch
// build (V 19, D 16, 2 encoder and 3 decoder blocks, no dropout).
#pragma once

#include "TestSupport.h"

#include <string>

namespace widelab::test {

inline ModelConfig translationConfig(const std::string& overrides = "{}")
{
    return modelConfig(R"({"vocab_size": 19, "max_len": 12, "d_model": 16, "heads": 2, "ffn_dim": 24,
                            "layers": 2, "decoder_layers": 3, "dropout": 0.0, "head": "translation"})",
                       overrides);
}

}  // namespace widelab::test
