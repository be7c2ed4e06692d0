#!/usr/bin/env python3
"""The widelab package's translation (encoder-decoder) models against widelab-cli.

Tiny translation runs (model.head "translation", task.kind "translation", a bpe
tokenizer) are trained once with `widelab-cli train` on letter-shift pairs the test
writes ("abc de" -> "bcd ef"), exported with `widelab-cli export`, and loaded with
`widelab.load`. For each run:

- the package's greedy translations (`model.translate`) equal what `widelab-cli
  translate` prints, text by text (--text) and as one batch (--file: padded sources,
  an empty line, a text cut to model.max_len);
- for `widelab-cli inspect --text T --json`: the package's greedy translation equals its
  `translation`, and the model run teacher-forced on <s> + that translation gives its
  `prediction` (the softmax of the next token's logits), its logit lens (the decoder's,
  after every sublayer), the encoder's attention maps and expert choices;
- decoding with cached keys and values gives what recomputing the prefix gives.

The runs cover a plain decoder under a multi-path encoder (the Multi-Path paper's
systems), a decoder with a mixture of experts that drops tokens in evaluation, and
multi-path decoders (decoder_paths 2 and 3, extra features, shared modules, a
non-full encoder attention). Other tests check the package's refusals for
translation models.

Usage:
    python3 tests/python/test_translation.py [--cli build/app/cli/widelab-cli] [--only SUBSTRING] [--keep DIR]

or with pytest (WIDELAB_CLI names widelab-cli; without it, build/app/cli/widelab-cli of
the source tree). PYTHONPATH must reach python/ (ctest sets it).

Tolerance: 1e-5, absolute, on probabilities, as tests/python/test_package.py's: both
sides compute in float32 with the same operations.
"""

import argparse
import atexit
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import torch
from harness import run_tests

import widelab
from widelab import WideLabError
from widelab.loading import build_model
from widelab.safetensors_reader import read_safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOLERANCE = 1e-5

# Source texts: words of the pairs' letters, unseen combinations, a non-ASCII word (byte
# tokens), and one longer than model.max_len (32) tokens, which both sides cut.
TEXTS = ["abc de", "hgf", "ab cd ef", "fed cba hh", "café ab", " ".join(["abc", "fgh", "de"] * 8)]
PROBES = ["abc de", "ab cd ef", "gh a"]

TRAIN = {"steps": 150, "eval_every": 150, "checkpoint_every": 150, "log_every": 50, "warmup_steps": 10,
         "learning_rate": 0.005, "batch_size": 16, "threads": 1, "device": "cpu", "probes": [],
         # No BLEU in training: an early model's greedy output may hold bytes that are not
         # UTF-8, which the CLI's BLEU refuses (ending the run before its checkpoint).
         "bleu_sentences": 0}
MODEL = {"head": "translation", "vocab_size": 300, "max_len": 32, "d_model": 32, "layers": 1, "decoder_layers": 1,
         "heads": 4, "ffn_dim": 64, "dropout": 0.0}


def runs():
    """name -> the model section of each run (over MODEL)."""
    return {
        # The brief's model: a multi-path encoder, a plain decoder.
        "multi-path encoder, plain decoder": dict(paths=2, decoder_paths=1, path_norm=True,
                                                  learnable_path_weights=True),
        # Experts on both sides, dropping in evaluation (capacity over each pass's tokens;
        # a cached decoding step routes its B tokens), two routing groups of two blocks.
        "mixture of experts, drops": dict(layers=2, decoder_layers=2, experts=4, top_k=2, eval_capacity_factor=0.75,
                                          routing_groups=2, share_router=False, renormalize_gates=True),
        # Multi-path decoders: 3 paths with extra features; 2 paths under a linear-attention
        # encoder, with shared attention (one cross-attention too), FFN and LayerNorms.
        "decoder_paths 3, extra features": dict(paths=3, decoder_paths=3, decoder_layers=2, path_norm=True,
                                                path_extra_features=True, path_weight="inverse_n",
                                                activation="silu"),
        "decoder_paths 2, shared, linear encoder": dict(attention="linear", decoder_paths=2, decoder_layers=2,
                                                        layers=2, share_attention=True, share_ffn=True,
                                                        share_layernorm=True, path_norm=True),
    }


# ---------------------------------------------------------------- the fixture

CLI = None
WORK = None
EXPORTS = {}  # name -> (run directory, export's weights)


def find_cli():
    return os.environ.get("WIDELAB_CLI") or os.path.join(ROOT, "build", "app", "cli", "widelab-cli")


def cli(*arguments, binary=False):
    result = subprocess.run([CLI] + list(arguments), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode != 0:
        raise AssertionError("widelab-cli %s failed (%d): %s" % (" ".join(arguments), result.returncode,
                                                                 result.stderr.decode(errors="replace")[-2000:]))
    return result.stdout if binary else result.stdout.decode()


def shift(word):
    return "".join(chr((ord(ch) - ord("a") + 1) % 26 + ord("a")) for ch in word)


def write_pairs(path):
    """300 "source TAB target" lines: words of a..h, each letter shifted by one in the target."""
    generator = random.Random(35)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(300):
            words = ["".join(generator.choice("abcdefgh") for _ in range(generator.randint(1, 4)))
                     for _ in range(generator.randint(1, 3))]
            f.write("%s\t%s\n" % (" ".join(words), " ".join(shift(w) for w in words)))


def make_export(name, model):
    folder = os.path.join(WORK, "run-%d" % sorted(runs()).index(name))
    os.makedirs(folder)
    document = {"model": dict(MODEL, **model),
                "task": {"kind": "translation", "path": os.path.join(WORK, "pairs.tsv"), "tokenizer": "bpe",
                         "bpe_merges": 20, "max_subwords": 31},
                "train": dict(TRAIN)}
    config = os.path.join(folder, "config.json")
    with open(config, "w") as f:
        json.dump(document, f)
    run = os.path.join(folder, "run")
    cli("train", config, "--out", run)
    weights = os.path.join(folder, "export", "model.safetensors")
    os.makedirs(os.path.dirname(weights))
    cli("export", run, "--out", weights)
    EXPORTS[name] = (run, weights)


def prepare(base=None):
    """Trains and exports every run once (the first test to need them does it)."""
    global CLI, WORK
    if EXPORTS:
        return
    CLI = CLI or find_cli()
    if not os.path.exists(CLI):
        message = "give --cli PATH (or WIDELAB_CLI): widelab-cli to train, export and translate with (%s)" % CLI
        if "pytest" in sys.modules:
            import pytest
            pytest.skip(message)
        sys.exit("test_translation: " + message)
    torch.set_num_threads(1)
    if base is None:  # under pytest: removed when the process ends
        base = tempfile.mkdtemp(prefix="widelab-translation-")
        atexit.register(shutil.rmtree, base, True)
    WORK = base
    os.makedirs(WORK, exist_ok=True)
    write_pairs(os.path.join(WORK, "pairs.tsv"))
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(make_export, name, model) for name, model in runs().items()]:
            done.result()


def loaded(name):
    prepare()
    run, weights = EXPORTS[name]
    model, tokenizer = widelab.load(weights)
    return run, model, tokenizer


def max_difference(a, b):
    return 0.0 if a.numel() == 0 else float((a - b).abs().max())


def as_printed(text):
    """A translation as `widelab-cli translate` prints it: one line each."""
    return text.replace("\n", " ").replace("\r", " ")


# ---------------------------------------------------------------- translations


def check_translations_equal_the_clis(name):
    run, model, tokenizer = loaded(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mine = model.translate(TEXTS + [""])
    assert any("the rest is not translated" in str(w.message) for w in caught), "the long text was not cut"
    # One batch: padded sources, the empty line translates to an empty line.
    listing = os.path.join(WORK, "texts-%d.txt" % sorted(runs()).index(name))
    with open(listing, "w", encoding="utf-8") as f:
        f.write("\n".join(TEXTS + [""]) + "\n")
    # The package decodes greedily: the CLI's --beam 1 (its default is beam search).
    printed = cli("translate", run, "--file", listing, "--beam", "1", binary=True).split(b"\n")
    assert printed[-1] == b"", "no line break after the last translation"
    theirs = [line.decode("utf-8", errors="replace") for line in printed[:-1]]
    assert len(theirs) == len(TEXTS) + 1, "the CLI printed %d lines for %d texts" % (len(theirs), len(TEXTS) + 1)
    assert [as_printed(t) for t in mine] == theirs, "batch: package %s, CLI %s" % (mine, theirs)
    assert mine[-1] == ""
    # Text by text (its own batch of one, no padding).
    for text in TEXTS[:3]:
        alone = cli("translate", run, "--text", text, "--beam", "1", binary=True).decode("utf-8", errors="replace")
        assert as_printed(model.translate(text)) + "\n" == alone, (text, model.translate(text), alone)
    assert any(t for t in mine), "every translation is empty: the run learned too little to test with"
    return mine


def test_translations_equal_the_clis_multi_path_encoder():
    check_translations_equal_the_clis("multi-path encoder, plain decoder")


def test_translations_equal_the_clis_mixture_of_experts():
    check_translations_equal_the_clis("mixture of experts, drops")


def test_translations_equal_the_clis_decoder_paths_3():
    check_translations_equal_the_clis("decoder_paths 3, extra features")


def test_translations_equal_the_clis_decoder_paths_2_shared():
    check_translations_equal_the_clis("decoder_paths 2, shared, linear encoder")


# ---------------------------------------------------------------- teacher-forced logits


def check_inspect(name):
    run, model, tokenizer = loaded(name)
    c = model.config
    worst = 0.0
    for text in PROBES:
        shown = json.loads(cli("inspect", run, "--text", text, "--json"))
        ids = tokenizer.encode(text)
        assert tokenizer.tokens(ids) == shown["tokens"], (tokenizer.tokens(ids), shown["tokens"])
        # inspect decodes at most max_len - 1 tokens: <s> and the translation fit the positions.
        translation = model.greedy_decode(ids, max_length=c.max_len - 1)[0]
        assert tokenizer.decode(translation) == shown["translation"], \
            "translation: package %r, CLI %r" % (tokenizer.decode(translation), shown["translation"])
        with torch.no_grad():
            out = model(ids, target=[tokenizer.start_id] + translation, lens=True)
        assert list(out.logits.shape) == [1, len(translation) + 1, c.vocab_size]
        prediction = torch.softmax(out.logits[0, -1], -1)
        differences = {"prediction": max_difference(prediction, torch.tensor(shown["prediction"]))}
        assert len(out.lens) == len(shown["logit_lens"]) == 3 * c.decoder_layers, \
            "logit lens: package %d stages, CLI %d" % (len(out.lens), len(shown["logit_lens"]))
        differences["lens"] = max(max_difference(torch.softmax(mine[0, -1], -1), torch.tensor(theirs["distribution"]))
                                  for mine, theirs in zip(out.lens, shown["logit_lens"]))
        assert max_difference(out.lens[-1], out.logits) == 0.0, "the lens's last stage is not the logits"
        maps = torch.stack([a[0] for a in out.attention])
        assert list(maps.shape) == list(torch.tensor(shown["attention"]).shape)
        differences["attention"] = max_difference(maps, torch.tensor(shown["attention"]))
        experts = [e.tolist() for e in out.experts]
        assert experts == shown["experts"], "encoder's expert choices: package %s, CLI %s" % (experts, shown["experts"])
        for key, difference in differences.items():
            assert difference <= TOLERANCE, "%s: %s differs by %.3g (tolerance %g)" % (text, key, difference, TOLERANCE)
            worst = max(worst, difference)
        # The decoder's own record: its maps over the target and the source.
        side = model.decoder.config
        heads = side.paths * side.heads
        T, S = len(translation) + 1, len(ids)
        assert [list(a.shape) for a in out.decoder.attention] == [[1, heads, T, T]] * c.decoder_layers
        assert [list(a.shape) for a in out.decoder.cross_attention] == [[1, heads, T, S]] * c.decoder_layers
        assert len(out.decoder.experts) == (c.decoder_layers if c.is_moe else 0)
    return worst


def test_teacher_forced_logits_equal_inspect_multi_path_encoder():
    check_inspect("multi-path encoder, plain decoder")


def test_teacher_forced_logits_equal_inspect_mixture_of_experts():
    check_inspect("mixture of experts, drops")


def test_teacher_forced_logits_equal_inspect_decoder_paths_3():
    check_inspect("decoder_paths 3, extra features")


def test_teacher_forced_logits_equal_inspect_decoder_paths_2_shared():
    check_inspect("decoder_paths 2, shared, linear encoder")


# ---------------------------------------------------------------- the package alone


def test_cached_decoding_equals_recomputing_the_prefix():
    for name in ("multi-path encoder, plain decoder", "decoder_paths 3, extra features"):
        _, model, tokenizer = loaded(name)
        ids = [tokenizer.encode_list(t) for t in TEXTS[:4]]
        longest = max(len(i) for i in ids)
        batch = torch.tensor([i + [0] * (longest - len(i)) for i in ids])
        mask = torch.tensor([[True] * len(i) + [False] * (longest - len(i)) for i in ids])
        cached = model.greedy_decode(batch, mask)
        assert cached == model.greedy_decode(batch, mask, cache=False), name
        # A padded batch decodes each source as it decodes alone (a dense model).
        assert cached == [model.greedy_decode(torch.tensor(i))[0] for i in ids], name


def test_a_step_gives_the_full_passs_logits():
    _, model, tokenizer = loaded("decoder_paths 2, shared, linear encoder")
    source = tokenizer.encode("ab cd ef")
    target = torch.tensor([2, 30, 41, 5, 9, 7])
    with torch.no_grad():
        full = model(source, target=target).logits[0]
    state = model.begin_decoding(source)
    steps = torch.stack([model.decode_step(state, target[t:t + 1])[0] for t in range(len(target))])
    assert max_difference(steps, full) < 1e-5


def test_target_masks_and_batches():
    """A padded target and a padded source give each pair what it gets alone."""
    _, model, tokenizer = loaded("multi-path encoder, plain decoder")
    a, b = tokenizer.encode("abc de fgh"), tokenizer.encode("hg")
    ta, tb = torch.tensor([2, 30, 8, 12, 4]), torch.tensor([2, 17])
    sources = torch.stack([a, torch.cat([b, torch.zeros(len(a) - len(b), dtype=torch.long)])])
    source_mask = torch.tensor([[True] * len(a), [True] * len(b) + [False] * (len(a) - len(b))])
    targets = torch.stack([ta, torch.cat([tb, torch.zeros(len(ta) - len(tb), dtype=torch.long)])])
    target_mask = torch.tensor([[True] * len(ta), [True] * len(tb) + [False] * (len(ta) - len(tb))])
    with torch.no_grad():
        together = model(sources, source_mask, target=targets, target_mask=target_mask).logits
        assert max_difference(together[0], model(a, target=ta).logits[0]) < 1e-5
        assert max_difference(together[1, : len(tb)], model(b, target=tb).logits[0]) < 1e-5


def expect_refusal(call, *words):
    try:
        call()
    except WideLabError as error:
        for word in words:
            assert word in str(error), "expected %r in the message: %s" % (word, error)
        return
    raise AssertionError("no WideLabError (expected one saying %s)" % ", ".join(words))


def test_inputs_a_translation_model_refuses():
    _, model, tokenizer = loaded("multi-path encoder, plain decoder")
    source = tokenizer.encode("abc")
    expect_refusal(lambda: model(source), "translation model input", "target ids are missing")
    expect_refusal(lambda: model(source, target=torch.zeros(33, dtype=torch.long)), "translation target",
                   "33 tokens exceed model.max_len (32)")
    expect_refusal(lambda: model(source, target=[2, 300]), "translation target", "token id 300")
    expect_refusal(lambda: model(torch.stack([source, source]), target=[[2]]), "1 targets for 2 sources")
    expect_refusal(lambda: model.greedy_decode(source, max_length=-1), "max_length")
    expect_refusal(lambda: model.translate("abc", batch_size=0), "batch_size")
    model.train()
    try:
        expect_refusal(lambda: model.translate("abc"), "training mode", "eval()")
    finally:
        model.eval()
    other = widelab.Tokenizer("byte")
    expect_refusal(lambda: model.translate("abc", other), "byte tokenizer has no start and end tokens")


def test_a_model_that_is_not_a_translation_model_refuses_to_decode():
    config = widelab.ModelConfig({**_document("multi-path encoder, plain decoder")["model"],
                                  "head": "language_model"}, "model.json")
    model = widelab.WideLabModel(config).eval()
    expect_refusal(lambda: model.greedy_decode([4, 5]), "not a translation model")
    expect_refusal(lambda: model([4, 5], target=[2]), "only a translation model takes target ids")


def _document(name):
    """The run document (model.json) of a run's export."""
    prepare()
    _, weights = EXPORTS[name]
    with open(weights[: -len(".safetensors")] + ".json") as f:
        return json.load(f)


def test_model_json_of_another_decoder_is_refused_naming_the_tensor():
    prepare()
    _, weights = EXPORTS["multi-path encoder, plain decoder"]
    folder = tempfile.mkdtemp(prefix="case-", dir=WORK)
    copy = os.path.join(folder, "model.safetensors")
    shutil.copy(weights, copy)
    document = _document("multi-path encoder, plain decoder")
    document.pop("export", None)
    for key, value, words in (("decoder_paths", 2, ("decoder.attention.0.qkv.weight", "[192, 32]")),
                              ("decoder_layers", 2, ("decoder.attention.1.qkv.weight", "missing"))):
        changed = dict(document, model=dict(document["model"], **{key: value}))
        with open(os.path.join(folder, "model.json"), "w") as f:
            json.dump(changed, f)
        # The weights' own metadata names the difference first; without it, the shapes do.
        expect_refusal(lambda: widelab.load(copy), "describe different models", "model.%s" % key)
        state, _ = read_safetensors(copy)  # the shapes' check alone
        expect_refusal(lambda: build_model(widelab.ModelConfig(changed["model"]), state, copy), *words)


def test_translation_keys_are_checked_as_widelab_checks_them():
    base = _document("multi-path encoder, plain decoder")["model"]
    cases = [({"embedding_dim": 8}, "model.embedding_dim", "ties its output to the token embedding"),
             ({"input": "image"}, "model.head", "reads and writes tokens"),
             ({"paths": 1, "decoder_paths": 2, "experts": 4}, "model.decoder_paths", "mixture of experts"),
             ({"paths": 3, "decoder_paths": 2, "path_extra_features": True}, "model.decoder_paths", "extra features"),
             ({"experts": 4, "paths": 1, "decoder_paths": 1, "routing_priority": "batch"}, "model.routing_priority",
              "decoder must not see")]
    for change, *words in cases:
        expect_refusal(lambda: widelab.ModelConfig(dict(base, **change), "model.json"), "model.json", *words)
    side = widelab.ModelConfig(dict(base, path_norm=True, decoder_paths=1), "model.json").decoder_side()
    assert (side.paths, side.path_norm, side.learnable_path_weights, side.is_multi_path) == (1, False, False, False)
    assert side.causal and side.attention == "full" and not side.uses_cls_token


# ---------------------------------------------------------------- main


def main():
    global CLI
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=find_cli(), help="the widelab-cli executable")
    parser.add_argument("--only", default="", help="run the tests whose name contains this")
    parser.add_argument("--keep", default=None, help="keep the runs in this folder")
    args = parser.parse_args()
    CLI = args.cli
    started = time.time()
    base = args.keep or tempfile.mkdtemp(prefix="widelab-translation-")
    shutil.rmtree(base, ignore_errors=True)
    prepare(base)
    print("runs trained and exported in %.1f s" % (time.time() - started))
    run_tests(globals(), args.only, base, args.keep, started)


if __name__ == "__main__":
    main()
