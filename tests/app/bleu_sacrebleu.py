#!/usr/bin/env python3
"""`widelab-cli bleu` against PyPI's sacreBLEU (issue 35; docs: README, "Scoring translations").

Writes hypothesis and reference files, hand-made edge cases and a few hundred
generated lines (punctuation, numbers with commas and periods, dashes, HTML
entities, Unicode letters and spaces, empty lines, lengths from 0 to 60 words;
deterministic, from a fixed seed), runs the real widelab-cli on each pair, and
compares its corpus BLEU and chrF with sacrebleu.corpus_bleu and
sacrebleu.corpus_chrf with their defaults: the scores to 0.01, the n-gram
counts and lengths exactly, and the printed lines with sacreBLEU's own str() of
its scores. Then the errors: files of unequal line counts, a missing file, bytes
that are not UTF-8 (a message naming the file, line and counts; exit status 1).

usage: bleu_sacrebleu.py WIDELAB_CLI
Fails (exit 1), saying so, when this Python has no sacrebleu package:
packaging/install-test-venv.sh installs it.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

try:
    import sacrebleu
except ImportError as error:
    sys.exit(f"FAIL: this Python ({sys.executable}) cannot import sacrebleu ({error}); "
             "packaging/install-test-venv.sh installs it (set WIDELAB_TENSORBOARD_PYTHON to that venv's python)")

CLI = sys.argv[1]
TOLERANCE = 0.01
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def cli(*args):
    return subprocess.run([CLI, "bleu", *args], capture_output=True, text=True)


def write(folder, name, lines, raw=None):
    path = os.path.join(folder, name)
    with open(path, "wb") as file:
        file.write(raw if raw is not None else "".join(line + "\n" for line in lines).encode("utf-8"))
    return path


def compare(folder, name, hypotheses, references, plain=False):
    """One case: widelab-cli's BLEU and chrF against sacreBLEU's on the same lines; with `plain`, its
    printed lines too (each run of widelab-cli costs a second or two: it loads LibTorch)."""
    assert len(hypotheses) == len(references)
    hyp = write(folder, name + ".hyp", hypotheses)
    ref = write(folder, name + ".ref", references)
    want_bleu = sacrebleu.corpus_bleu(hypotheses, [references])
    want_chrf = sacrebleu.corpus_chrf(hypotheses, [references])

    done = cli("--hyp", hyp, "--ref", ref, "--json")
    if done.returncode != 0:
        failures.append(f"{name}: exit {done.returncode}: {done.stderr.strip()}")
        return None
    got = json.loads(done.stdout)
    bleu, chrf = got["bleu"], got["chrf"]
    check(got["lines"] == len(hypotheses), f"{name}: {got['lines']} lines, expected {len(hypotheses)}")
    check(abs(bleu["score"] - want_bleu.score) <= TOLERANCE,
          f"{name}: BLEU {bleu['score']:.6f}, sacreBLEU {want_bleu.score:.6f}")
    check(bleu["counts"] == list(want_bleu.counts), f"{name}: matched n-grams {bleu['counts']}, sacreBLEU {want_bleu.counts}")
    check(bleu["totals"] == list(want_bleu.totals), f"{name}: hypothesis n-grams {bleu['totals']}, sacreBLEU {want_bleu.totals}")
    check((bleu["sys_len"], bleu["ref_len"]) == (want_bleu.sys_len, want_bleu.ref_len),
          f"{name}: lengths {bleu['sys_len']}/{bleu['ref_len']}, sacreBLEU {want_bleu.sys_len}/{want_bleu.ref_len}")
    check(all(abs(a - b) <= TOLERANCE for a, b in zip(bleu["precisions"], want_bleu.precisions)),
          f"{name}: precisions {bleu['precisions']}, sacreBLEU {want_bleu.precisions}")
    check(abs(bleu["bp"] - want_bleu.bp) <= 1e-6, f"{name}: BP {bleu['bp']}, sacreBLEU {want_bleu.bp}")
    check(abs(chrf["score"] - want_chrf.score) <= TOLERANCE,
          f"{name}: chrF {chrf['score']:.6f}, sacreBLEU {want_chrf.score:.6f}")
    want_lines = [str(want_bleu), str(want_chrf)]
    check([bleu["text"], chrf["text"]] == want_lines, f"{name}: {[bleu['text'], chrf['text']]}, sacreBLEU prints {want_lines}")
    if plain:
        text = cli("--hyp", hyp, "--ref", ref)
        check(text.returncode == 0 and text.stdout.splitlines() == want_lines,
              f"{name}: printed {text.stdout.splitlines()}, sacreBLEU prints {want_lines}")
    return bleu["score"], chrf["score"]


# ---------------------------------------------------------------- generated text

WORDS = ("the a of to and in is was it that for on with as by at from this be are not or have an "
         "cat dog house river mountain teacher letter garden window morning evening city road "
         "said went came gave took made found saw knew thought wrote asked answered").split()
UNICODE_WORDS = ["café", "naïve", "Straße", "über", "Ærø", "señor", "año", "München", "Zürich", "façade",
                 "東京", "北京", "日本語", "한국어", "Москва", "привет", "αβγ", "ελληνικά", "שלום", "مرحبا",
                 "😀", "👍🏽", "e\u0301", "ﬁne", "Ⅻ", "½", "٣", "１２３"]
PUNCTUATION = list(".,;:!?\"'()[]{}<>/\\|@#$%^&*+=~`_-")
# Whitespace as Python's str.split() knows it, the rare kinds included; U+200B is not whitespace.
SPACES = [" ", " ", " ", "  ", "\t", "\u00a0", "\u3000", "\u2009", "\u202f", "\x1f", "\x85", "\u2028", "\u200b"]
ENTITIES = ["&quot;", "&amp;", "&lt;", "&gt;", "&amp;quot;", "&apos;", "&", "<skipped>"]


def number(rng):
    kind = rng.randrange(8)
    if kind == 0:
        return str(rng.randrange(10000))
    if kind == 1:
        return f"{rng.randrange(1, 999)},{rng.randrange(1000):03d}"            # 1,000
    if kind == 2:
        return f"{rng.randrange(100)}.{rng.randrange(100):02d}"               # 3.14
    if kind == 3:
        return f"{rng.randrange(1, 99)},{rng.randrange(1000):03d}.{rng.randrange(10)}"
    if kind == 4:
        return f"{rng.randrange(1900, 2030)}-{rng.randrange(1, 13):02d}"      # a dash after a digit
    if kind == 5:
        return f"{rng.randrange(100)}."                                       # a period after a digit
    if kind == 6:
        return f"{rng.randrange(100)},"                                       # a comma after a digit
    return f".{rng.randrange(100)}"                                           # a period before a digit


def token(rng):
    roll = rng.random()
    if roll < 0.55:
        word = rng.choice(WORDS)
        return word.capitalize() if rng.random() < 0.1 else word
    if roll < 0.68:
        return rng.choice(UNICODE_WORDS)
    if roll < 0.80:
        return number(rng)
    if roll < 0.92:
        return rng.choice(PUNCTUATION) * rng.choice([1, 1, 1, 2, 3])
    if roll < 0.96:
        return rng.choice(ENTITIES)
    # glued: a word with punctuation inside or at its ends ("U.S.", "don't", "e-mail", "a,b")
    return rng.choice(WORDS) + rng.choice(".,'-/:") + rng.choice(WORDS + ["", "s"])


def sentence(rng, length):
    text = ""
    for i in range(length):
        if i > 0:
            text += rng.choice(SPACES) if rng.random() < 0.9 else ""
        text += token(rng)
    if length and rng.random() < 0.5:
        text += rng.choice([".", "!", "?", " .", "...", ".\r", " "])
    return text


def perturb(rng, tokens):
    """A hypothesis made from a reference's tokens: words dropped, swapped, replaced or added."""
    out = list(tokens)
    for _ in range(rng.randrange(0, 5)):
        if not out:
            break
        i = rng.randrange(len(out))
        op = rng.randrange(4)
        if op == 0:
            del out[i]
        elif op == 1:
            j = rng.randrange(len(out))
            out[i], out[j] = out[j], out[i]
        elif op == 2:
            out[i] = token(rng)
        else:
            out.insert(i, token(rng))
    return out


def generated(seed, count):
    rng = random.Random(seed)
    hypotheses, references = [], []
    for _ in range(count):
        length = rng.choice([0, 1, 2, 3, 5, 8, 12, 20, 30, 60]) if rng.random() < 0.3 else rng.randrange(4, 25)
        words = [token(rng) for _ in range(length)]
        reference = rng.choice(SPACES[:4]).join(words) + (rng.choice([".", "!", "?"]) if words else "")
        style = rng.random()
        if style < 0.1:
            hypothesis = reference
        elif style < 0.2:
            hypothesis = sentence(rng, rng.randrange(0, 20))        # unrelated
        elif style < 0.25:
            hypothesis = ""
        else:
            hypothesis = rng.choice(SPACES).join(perturb(rng, words)) + (rng.choice([".", "", "!"]) if words else "")
        hypotheses.append(hypothesis)
        references.append(reference)
    return hypotheses, references


# ---------------------------------------------------------------- the cases

HAND = {
    "identical": (["The cat sat on the mat.", "It was a good day, 1,000.50 dollars & more."],
                  ["The cat sat on the mat.", "It was a good day, 1,000.50 dollars & more."]),
    "empty-hypothesis": (["", ""], ["The cat sat on the mat .", "A second line here"]),
    "empty-both": ([""], [""]),
    "no-4gram-match": (["the cat sat upon the red mat"], ["the cat lay on the red mat"]),
    "no-bigram-match": (["mat the on sat cat"], ["cat sat the mat on"]),
    "hypothesis-longer": (["the cat sat on the mat today in the warm morning sun"], ["the cat sat on the mat"]),
    "hypothesis-shorter": (["the cat sat"], ["the cat sat on the mat in the sun"]),
    "under-four-tokens": (["a b c", "d e"], ["a b c", "d e"]),
    "13a-punctuation": (['He said: "Hi!" (twice) [ok] {x} a/b a|b 50% #1 @home $5 a+b a=b a~b a^b a_b a`b'],
                        ['He said : " Hi ! " ( twice ) [ ok ] { x } a / b a | b 50 % # 1 @ home $ 5 a + b a = b']),
    "13a-numbers": (["It costs 1,000.50 or 3.14, not 7. Call 555-1234 at 10.30, or .5 of 2,"],
                    ["It costs 1,000.50 or 3.14 , not 7 . Call 555 - 1234 at 10.30 , or .5 of 2 ,"]),
    "13a-entities": (["Tom &amp; Jerry &quot;quoted&quot; 1 &lt; 2 &gt; 0 &amp;quot; <skipped> end"],
                     ['Tom & Jerry " quoted " 1 < 2 > 0 &quot; end']),
    "unicode": (["Café über Straße — naïve 東京 😀 price: 5 €", "tab\tand\u00a0nbsp\u3000ideographic"],
                ["Café uber Strasse - naive 東京 😀 price 5€", "tab and nbsp ideographic"]),
    "carriage-returns": (["line one\r", "a\rb c"], ["line one", "a b c"]),
}


def main():
    with tempfile.TemporaryDirectory(prefix="widelab-bleu-") as folder:
        scores = {}
        for name, (hypotheses, references) in HAND.items():
            # The plain lines come from the same code as the JSON's "text": three cases suffice.
            scores[name] = compare(folder, name, hypotheses, references,
                                   plain=name in ("identical", "no-4gram-match", "unicode"))
        check(scores["identical"] and all(abs(s - 100) < 1e-9 for s in scores["identical"]),
              f"identical: {scores['identical']}, expected 100 and 100")
        check(scores["empty-hypothesis"] == (0.0, 0.0), f"empty-hypothesis: {scores['empty-hypothesis']}")
        for seed, count in ((1, 300), (2, 200), (3, 50)):
            compare(folder, f"generated-{seed}", *generated(seed, count))
        # Line by line too, where one line's oddity is not averaged away.
        hypotheses, references = generated(4, 20)
        for i, (h, r) in enumerate(zip(hypotheses, references)):
            compare(folder, f"line-{i}", [h], [r])

        # Errors: a message naming the files and the counts, exit status 1, never a crash.
        hyp = write(folder, "three.hyp", ["a", "b", "c"])
        ref = write(folder, "two.ref", ["a", "b"])
        done = cli("--hyp", hyp, "--ref", ref)
        check(done.returncode == 1 and hyp in done.stderr and ref in done.stderr and "3" in done.stderr
              and "2" in done.stderr, f"unequal counts: exit {done.returncode}: {done.stderr.strip()}")
        missing = os.path.join(folder, "missing.hyp")
        done = cli("--hyp", missing, "--ref", ref)
        check(done.returncode == 1 and missing in done.stderr, f"missing file: exit {done.returncode}: {done.stderr.strip()}")
        bad = write(folder, "latin1.hyp", None, raw="a\ncaf\xe9\n".encode("latin-1"))
        done = cli("--hyp", bad, "--ref", ref)
        check(done.returncode == 1 and bad in done.stderr and "line 2" in done.stderr and "UTF-8" in done.stderr,
              f"not UTF-8: exit {done.returncode}: {done.stderr.strip()}")
        empty = write(folder, "empty.hyp", [])
        done = cli("--hyp", empty, "--ref", empty)
        check(done.returncode == 1 and "no lines" in done.stderr, f"no lines: exit {done.returncode}: {done.stderr.strip()}")
        done = cli("--hyp", hyp)
        check(done.returncode == 2 and "--ref" in done.stderr, f"no --ref: exit {done.returncode}: {done.stderr.strip()}")

    for failure in failures[:40]:
        print("FAIL:", failure)
    if failures:
        sys.exit(f"{len(failures)} differences from sacreBLEU {sacrebleu.__version__}")
    print(f"widelab-cli bleu equals sacreBLEU {sacrebleu.__version__} (BLEU and chrF2, defaults) on "
          f"{len(HAND)} hand-made cases, 3 generated corpora and 20 single lines")


if __name__ == "__main__":
    main()
