#!/usr/bin/env python3
"""The Python package's bpe tokenizer (python/widelab/tokenizer.py) against the core's.

The core (tests/core/bpe_tokens.cpp, over core/data/Bpe.cpp) learns merges from a small
English and Spanish corpus and writes tokenizer.json; the package reads it, and both
encode the same texts: English, Spanish, punctuation of both, digits, runs of spaces and
newlines, pieces longer than 64 bytes, emoji, and bytes that are not UTF-8. The ids, the
tokens as shown (token_text) and the decoded bytes must be equal, and decoding must give
every text back. Then the package's own checks: pieces worked out by hand, and malformed
tokenizer.json refused with the core's reasons.

Usage:
    python3 tests/python/test_bpe_tokenizer.py --tool build/tests/core/bpe_tokens

PYTHONPATH must reach python/ (ctest sets it), or the package be installed.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import widelab
from widelab.errors import WideLabError
from widelab.tokenizer import split_bpe_pieces

CORPUS = [
    "In the beginning, God created the heavens and the earth.",
    "The earth was formless and empty. Darkness was on the surface of the deep.",
    "God said, \u201cLet there be light,\u201d and there was light.",
    "En el principio cri\u00f3 Dios los cielos y la tierra.",
    "Y la tierra estaba desordenada y vac\u00eda, y las tinieblas estaban sobre la haz del abismo.",
    "Y dijo Dios: Sea la luz: y fu\u00e9 la luz. \u00bfQui\u00e9n es \u00e9ste? \u00a1Jehov\u00e1!",
    "Chapter 12, verse 3:  the 144,000 were sealed.\n\n\tAnd 7\u00d77 is 49 \u2014 so it is.",
]

SAMPLES = [
    "In the beginning God created",
    "Y dijo Dios: \u00bfSea la luz? \u00a1S\u00ed!",
    "   spaces   everywhere  \n\n\t tabs\r\n",
    "numbers 1234567890 and 3.14, 144,000",
    "\u201cquoted,\u201d \u2018single\u2019 \u2026 \u00ab\u00bb \u00d7\u00f7 \u3001\u3002",
    "emoji \U0001F600 and \u65e5\u672c\u8a9e",
    "a" * 70 + " " + "\u2014" * 25 + " " * 70 + "x",
    "",
]
RAW_SAMPLES = [
    b"\xff\xfe\x00 binary \x80\x81",
    b"cut \xc3 inside \xe2\x80 a dash \xe2\x80\x9c",
    b"\xc2 \xc2\xa0 \xc3\x97\xc3 \xe3\x80\x81 \xe2\x81\xaf \xe2\x81\xb0",
    b"\xed\xa0\x80 surrogate, \xf4\x90\x80\x80 too high, \xc0\xaf overlong",
]


def check_agreement(tool, folder):
    corpus_path = os.path.join(folder, "corpus.txt")
    with open(corpus_path, "w", encoding="utf-8") as f:
        f.write("\n".join(CORPUS * 3) + "\n")
    tokenizer_path = os.path.join(folder, "tokenizer.json")
    subprocess.run([tool, "learn", "300", corpus_path, tokenizer_path], check=True)
    tokenizer = widelab.Tokenizer.read(tokenizer_path)
    assert tokenizer.kind == "bpe" and len(tokenizer.merges) > 100, tokenizer
    assert (tokenizer.start_id, tokenizer.end_id) == (2, 3)

    rng = random.Random(5)
    texts = [s.encode("utf-8") for s in CORPUS + SAMPLES] + RAW_SAMPLES
    texts += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))) for _ in range(200)]
    words = ["the", " the", "Dios", " y", "\u00e9", ",", ".", " ", "\n", "12", "\u201c", "\xc3", "\xe2\x80"]
    texts += ["".join(rng.choice(words) for _ in range(30)).encode("utf-8") for _ in range(200)]
    inputs_path = os.path.join(folder, "inputs.hex")
    with open(inputs_path, "w") as f:
        f.write("".join(t.hex() + "\n" for t in texts))
    result = subprocess.run([tool, "encode", tokenizer_path, inputs_path], check=True, stdout=subprocess.PIPE)
    lines = result.stdout.decode("utf-8").splitlines()
    assert len(lines) == len(texts), (len(lines), len(texts))
    for text, line in zip(texts, lines):
        core = json.loads(line)
        ids = tokenizer.encode_list(text)
        assert ids == core["ids"], "ids of %r: package %s, core %s" % (text, ids, core["ids"])
        assert tokenizer.tokens(ids) == core["tokens"], (text, tokenizer.tokens(ids), core["tokens"])
        assert tokenizer.decode_bytes(ids) == bytes.fromhex(core["decoded"]) == text, text
    assert tokenizer.encode_list(CORPUS[0]) == tokenizer.encode_list(CORPUS[0].encode("utf-8"))
    assert tokenizer.decode(tokenizer.encode_list(SAMPLES[1])) == SAMPLES[1]
    print("agreement: %d texts, %d merges: ids, tokens and decoded bytes equal" % (len(texts), len(tokenizer.merges)))


def check_by_hand():
    # The pieces of tests/core/tst_bpe.cpp's piecesFollowTheRule.
    cases = {
        "Hello,  world!": ["Hello", ",", " ", " world", "!"],
        "in 42x 7": ["in", " 42", "x", " 7"],
        "a\n\nb \n c\t\td": ["a", "\n\n", "b", " \n", " c", "\t\t", "d"],
        "\u00bfQu\u00e9? \u201cLuz,\u201d dijo \u2014 3\u00d74": ["\u00bf", "Qu\u00e9", "?", " \u201c", "Luz", ",\u201d",
                                                               " dijo", " \u2014", " 3", "\u00d7", "4"],
        "a  ": ["a", "  "],
        "x (!?) y": ["x", " (!?)", " y"],
    }
    for text, pieces in cases.items():
        got = [p.decode("utf-8") for p in split_bpe_pieces(text.encode("utf-8"))]
        assert got == pieces, (text, got, pieces)
    assert split_bpe_pieces(b" " + b"a" * 70) == [b" " + b"a" * 63, b"a" * 7]
    # "low lower lowest newer wider", worked out in tst_bpe.cpp's handWorkedMerges.
    low = widelab.Tokenizer.from_json({"kind": "bpe", "merges": [[105, 118], [112, 115], [261, 123], [36, 262]],
                                       "vocab_size": 264})
    assert low.encode_list(" lowest") == [263, 105, 119, 120]
    assert low.encode_list("slower") == [119, 262, 260]
    assert low.tokens([2, 3, 263, 4 + 0xC3, 4 + 10]) == ["<s>", "</s>", " low", "\\xc3", "\\x0a"]
    assert low.decode([2, 263, 3, 0]) == " low"
    assert widelab.Tokenizer("byte").start_id is None
    print("by hand: pieces, merges, special ids: ok")


def check_malformed():
    cases = [
        ({"kind": "bpe"}, "\"merges\" must be an array"),
        ({"kind": "bpe", "merges": [[4, 5, 6]]}, "merge 0: expected [left id, right id]"),
        ({"kind": "bpe", "merges": [[3, 5]]}, "merge 0: id 3 is neither a byte (4..259) nor an earlier merge"),
        ({"kind": "bpe", "merges": [[4, 5], [261, 5]]}, "merge 1: id 261 is neither a byte (4..259) nor an earlier "
                                                        "merge (260..260)"),
        ({"kind": "bpe", "merges": [[4, 5], [6, 7], [4, 5]]}, "merge 2 repeats merge 0 [4, 5]"),
        ({"kind": "bpe", "merges": [[4, True]]}, "merge 0: expected"),
        ({"kind": "bpe", "merges": [], "tokens": ["a"]}, "a bpe tokenizer has no \"tokens\""),
        ({"kind": "word", "tokens": ["a"], "merges": []}, "a word tokenizer has no \"merges\""),
        ({"kind": "bpe", "merges": [[4, 5]], "vocab_size": 260}, "does not match the 261 ids of the merges"),
    ]
    for document, reason in cases:
        try:
            widelab.Tokenizer.from_json(document)
        except WideLabError as error:
            assert reason in str(error), (document, str(error))
        else:
            raise AssertionError("accepted %s" % document)
    print("malformed tokenizer.json: %d refused with the core's reasons" % len(cases))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, help="tests/core/bpe_tokens from the build")
    args = parser.parse_args()
    check_by_hand()
    check_malformed()
    with tempfile.TemporaryDirectory(prefix="widelab-bpe-") as folder:
        check_agreement(args.tool, folder)


if __name__ == "__main__":
    sys.exit(main())
