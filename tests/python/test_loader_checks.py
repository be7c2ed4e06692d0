#!/usr/bin/env python3
"""widelab.load refuses what widelab-cli refuses, with the package's own WideLabError.

Tiny runs are trained once with widelab-cli (a ListOps classifier, a second one of
another size, a byte language model, an image model) and exported; each test damages a
copy of an export and checks that widelab.load raises WideLabError with the words it
should (the file and the reason): weights with NaN or infinite values, bad labels.json
files, JSON of the wrong form or type anywhere, an export whose files are not the ones
its model.json records ("export": {"files": {NAME: SHA-256}}), and weights whose own
metadata describes another model than model.json.

The tests write the records they need themselves (hashlib over the fixture's files),
so that they decide which files a record lists and do not depend on whether the
widelab-cli at hand writes one; the exports as the CLI wrote them must load too.

Usage:
    python3 tests/python/test_loader_checks.py [--cli build/app/cli/widelab-cli] [--only SUBSTRING] [--keep DIR]

PYTHONPATH must reach python/ (ctest sets it). Without --cli, WIDELAB_CLI or
build/app/cli/widelab-cli of the source tree is used.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import torch
from harness import run_tests

import widelab
from widelab import WideLabError
from widelab.safetensors_reader import read_safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TINY_TRAIN = {"batch_size": 4, "eval_every": 2, "eval_batches": 1, "log_every": 1, "warmup_steps": 1,
              "checkpoint_every": 2, "threads": 1, "device": "cpu", "probes": []}
LISTOPS_TASK = {"kind": "listops", "train_size": 32, "validation_size": 8, "test_size": 8,
                "min_length": 8, "max_length": 40}
LISTOPS_MODEL = {"vocab_size": 32, "max_len": 40, "d_model": 16, "layers": 1, "heads": 2, "head_dim": 4,
                 "ffn_dim": 32, "pooling": "cls", "num_classes": 10}
CORPUS = "A wide model reads every token at once; a deep model reads them in turns.\n" * 40
DEEP = "[" * 100000 + "]" * 100000

# Filled by main(): name -> folder of a finished export (model.safetensors, model.pt, model.json, sidecars).
EXPORTS = {}
RUNS = {}
CLI = None
WORK = None


# ---------------------------------------------------------------- the fixture


def cli(*arguments):
    result = subprocess.run([CLI] + list(arguments), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode != 0:
        raise AssertionError("widelab-cli %s failed (%d): %s" % (" ".join(arguments), result.returncode,
                                                                 result.stderr.decode(errors="replace")[-2000:]))
    return result.stdout.decode()


def documents(folder):
    corpus = os.path.join(folder, "corpus.txt")
    with open(corpus, "w") as f:
        f.write(CORPUS)
    return {
        "listops": {"model": dict(LISTOPS_MODEL), "task": dict(LISTOPS_TASK), "train": dict(TINY_TRAIN)},
        "listops-other": {"model": dict(LISTOPS_MODEL, ffn_dim=24), "task": dict(LISTOPS_TASK, seed=7),
                          "train": dict(TINY_TRAIN)},
        "language-model": {"model": {"vocab_size": 300, "max_len": 32, "d_model": 16, "layers": 1, "heads": 2,
                                     "head_dim": 4, "ffn_dim": 32, "head": "language_model"},
                           "task": {"kind": "language_model", "tokenizer": "byte", "path": corpus,
                                    "validation_fraction": 0.2, "test_fraction": 0.1},
                           "train": dict(TINY_TRAIN)},
        "image": {"model": {"input": "image", "image_size": 8, "patch_size": 4, "channels": 3, "max_len": 4,
                            "d_model": 16, "layers": 1, "heads": 2, "head_dim": 4, "ffn_dim": 32,
                            "pooling": "mean", "num_classes": 10},
                  "task": {"kind": "shapes", "train_size": 32, "validation_size": 8, "test_size": 8},
                  "train": dict(TINY_TRAIN)},
    }


def make_export(folder, name, document):
    """Trains `document` for 2 steps and exports it twice: folder/export/model.safetensors
    (with model.json and the sidecars) and folder/export-pt/model.pt."""
    config = os.path.join(folder, name + ".json")
    with open(config, "w") as f:
        json.dump(document, f)
    run = os.path.join(folder, name, "run")
    cli("train", config, "--out", run, "--steps", "2", "--threads", "1")
    for kind in ("safetensors", "pt"):
        out = os.path.join(folder, name, "export" if kind == "safetensors" else "export-pt")
        os.makedirs(out)
        cli("export", run, "--out", os.path.join(out, "model." + kind))
    RUNS[name] = run
    EXPORTS[name] = os.path.join(folder, name, "export")
    EXPORTS[name + "-pt"] = os.path.join(folder, name, "export-pt")


def fresh(name="listops", record=False):
    """A copy of an export to damage: (folder, weights path). The copy loads as the CLI
    wrote it except that it never carries a record ("export") unless `record` is true,
    when the test writes one listing every file the export holds."""
    source = EXPORTS[name]
    folder = tempfile.mkdtemp(prefix="case-", dir=WORK)
    shutil.rmtree(folder)
    shutil.copytree(source, folder)
    weights = [f for f in os.listdir(folder) if f.endswith((".safetensors", ".pt"))][0]
    document = read_document(folder)
    document.pop("export", None)
    write_document(folder, document)
    if record:
        write_record(folder)
    return folder, os.path.join(folder, weights)


def read_document(folder):
    with open(os.path.join(folder, "model.json")) as f:
        return json.load(f)


def write_document(folder, document):
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump(document, f, indent=2)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_record(folder, names=None):
    """Writes model.json's record of the export: `names` (default: every file but model.json) and their SHA-256."""
    if names is None:
        names = sorted(f for f in os.listdir(folder) if f != "model.json")
    document = read_document(folder)
    document["export"] = {"files": {n: sha256(os.path.join(folder, n)) for n in names}}
    write_document(folder, document)


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def write_json(path, value):
    write_text(path, json.dumps(value))


def safetensors_parts(path):
    """(header dict, body bytes) of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + length]), data[8 + length:]


def write_safetensors_parts(path, header_text, body):
    header = header_text.encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + body)


def write_safetensors(path, tensors, metadata):
    """A safetensors file of `tensors` (float32 and the like, little-endian) and `metadata`."""
    header = {"__metadata__": metadata}
    body = bytearray()
    for name, tensor in tensors.items():
        raw = tensor.contiguous().view(torch.uint8).flatten().numpy().tobytes()
        dtype = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}[tensor.dtype]
        header[name] = {"dtype": dtype, "shape": list(tensor.shape), "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    write_safetensors_parts(path, json.dumps(header), bytes(body))


def expect_refusal(path, *words, run_dir=None):
    """widelab.load(path) raises WideLabError, and its message holds every one of `words`."""
    try:
        widelab.load(path, run_dir=run_dir)
    except WideLabError as error:
        message = str(error)
    except Exception as error:  # the point of these tests: nothing but WideLabError
        raise AssertionError("expected a WideLabError with %s, got %s: %s" % (words, type(error).__name__, error))
    else:
        raise AssertionError("expected a WideLabError with %s, but %s loaded" % (words, path))
    for word in words:
        if word not in message:
            raise AssertionError("the message lacks %r: %s" % (word, message))
    return message


# ---------------------------------------------------------------- exports that load


def test_an_export_without_a_record_still_loads():
    folder, weights = fresh()
    model, tokenizer = widelab.load(weights)
    assert model.labels == [str(d) for d in range(10)], model.labels
    assert tokenizer.kind == "fixed"
    model, _ = widelab.load(os.path.join(fresh("listops-pt")[0], "model.pt"))
    assert model.labels == [str(d) for d in range(10)]
    # And every export as widelab-cli wrote it (with its record, once the CLI writes one).
    for name, folder in sorted(EXPORTS.items()):
        weights = [f for f in os.listdir(folder) if f.endswith((".safetensors", ".pt"))][0]
        widelab.load(os.path.join(folder, weights))


# ---------------------------------------------------------------- item 1: finite weights


def test_nan_weight_is_refused_naming_the_tensor():
    folder, weights = fresh()
    tensors, metadata = read_safetensors(weights)
    tensors["ffn.0.w_in"].view(-1)[[0, 5, 9]] = float("nan")
    write_safetensors(weights, tensors, metadata)
    expect_refusal(weights, "model.safetensors: ffn.0.w_in holds 3 NaN and 0 infinite value(s) of 512")


def test_infinite_weight_in_a_pt_export_is_refused():
    folder, weights = fresh("listops-pt")
    state = widelab.loading.read_state(weights)
    state["classifier.bias"][2] = float("inf")
    state["classifier.bias"][7] = float("-inf")
    state["final_ln.weight"][0] = float("nan")
    torch.save(state, weights)
    expect_refusal(weights, "model.pt: classifier.bias holds 0 NaN and 2 infinite value(s) of 10",
                   "and 1 more tensor")


# ---------------------------------------------------------------- item 2: labels.json


def test_labels_that_are_not_an_array_are_refused():
    folder, weights = fresh()
    labels = os.path.join(folder, "model.labels.json")
    for value in ({"0": "zero"}, "0 1 2", 10, None):
        write_json(labels, value)
        expect_refusal(weights, labels + ": expected an array of class names")


def test_an_empty_or_non_string_class_name_is_refused():
    folder, weights = fresh()
    labels = os.path.join(folder, "model.labels.json")
    write_json(labels, ["zero", "", "two"])
    expect_refusal(weights, labels + ": class 1 is not a non-empty string")
    write_json(labels, ["zero", "one", 2])
    expect_refusal(weights, labels + ": class 2 is not a non-empty string")
    write_json(labels, [["zero"]])
    expect_refusal(weights, labels + ": class 0 is not a non-empty string")


def test_a_class_name_given_twice_is_refused():
    folder, weights = fresh()
    labels = os.path.join(folder, "model.labels.json")
    write_json(labels, ["zero", "one", "two", "one"])
    expect_refusal(weights, labels + ": class name \"one\" appears twice")


def test_more_class_names_than_classes_are_refused():
    folder, weights = fresh()
    labels = os.path.join(folder, "model.labels.json")
    write_json(labels, ["class %d" % i for i in range(11)])
    expect_refusal(weights, labels + ": 11 class names, more than the model's 10 classes (model.num_classes)")
    # Fewer are a run's own: its data had fewer labels than model.num_classes (the CLI writes them so).
    write_json(labels, ["zero", "one", "two"])
    assert widelab.load(weights)[0].labels == ["zero", "one", "two"]
    # A language model's labels are not counted.
    folder, weights = fresh("language-model")
    write_json(os.path.join(folder, "model.labels.json"), ["class %d" % i for i in range(40)])
    assert len(widelab.load(weights)[0].labels) == 40


def test_a_run_directorys_labels_are_checked_too():
    folder, weights = fresh()
    run = os.path.join(folder, "run")
    shutil.copytree(RUNS["listops"], run)
    write_json(os.path.join(run, "labels.json"), ["same", "same"])
    expect_refusal(weights, os.path.join(run, "labels.json") + ": class name \"same\" appears twice", run_dir=run)


# ---------------------------------------------------------------- item 3: JSON of the wrong form or type


def test_deeply_nested_json_is_refused_naming_the_file():
    for name in ("model.json", "model.tokenizer.json", "model.labels.json"):
        folder, weights = fresh()
        write_text(os.path.join(folder, name), DEEP)
        expect_refusal(weights, os.path.join(folder, name) + ": not valid JSON", "nested more than 64 deep")
    folder, weights = fresh()
    header, body = safetensors_parts(weights)
    write_safetensors_parts(weights, json.dumps(header)[:-1] + ', "deep": ' + DEEP + "}", body)
    expect_refusal(weights, weights + ": its safetensors header: not valid JSON", "nested")


def test_model_values_of_the_wrong_type_or_size_are_refused():
    folder, weights = fresh()
    original = read_document(folder)
    cases = [("heads", "1e999", "model.heads: expected an integer, got Infinity"),
             ("d_model", "2.5", "model.d_model: expected an integer, got 2.5"),
             ("layers", "65536", "model.layers: 65536 is outside 1..1024"),
             ("heads", "100000000000000000000000000000", "model.heads: 100000000000000000000000000000 is outside"),
             ("ffn_dim", "[32]", "model.ffn_dim: expected an integer, got [32]"),
             ("dropout", "\"0.1\"", "model.dropout: expected a finite number, got \"0.1\""),
             ("d_model", "NaN", "not valid JSON")]
    for key, raw, words in cases:
        document = json.loads(json.dumps(original))
        document["model"][key] = "@@"
        write_text(os.path.join(folder, "model.json"), json.dumps(document).replace('"@@"', raw))
        expect_refusal(weights, os.path.join(folder, "model.json"), words)


def test_a_model_json_that_does_not_fit_the_weights_is_refused_before_building():
    folder, weights = fresh()
    os.remove(weights)
    shutil.copy(os.path.join(EXPORTS["listops-pt"], "model.pt"), os.path.join(folder, "model.pt"))
    weights = os.path.join(folder, "model.pt")
    document = read_document(folder)
    document["model"].update(d_model=65536, ffn_dim=1048576, head_dim=65536, heads=4096)  # terabytes if built
    write_document(folder, document)
    started = time.time()
    expect_refusal(weights, "model.pt: final_ln.weight has shape [16], the model.json describes [65536]")
    assert time.time() - started < 5, "the model was built before its shapes were compared"


def test_a_model_or_task_section_of_the_wrong_type_is_refused():
    folder, weights = fresh()
    document = read_document(folder)
    for value in ([], "tiny", 3, None):
        document["model"] = value
        write_document(folder, document)
        expect_refusal(weights, os.path.join(folder, "model.json") + ": \"model\" must be a JSON object")
    document = read_document(EXPORTS["listops"])
    document.pop("export", None)
    for value, words in ((1, "\"task\" must be a JSON object"), ([], "\"task\" must be a JSON object")):
        document["task"] = value
        write_document(folder, document)
        expect_refusal(weights, os.path.join(folder, "model.json"), words)
    document["task"] = {"kind": ["listops"]}
    write_document(folder, document)
    expect_refusal(weights, "task.kind: expected a string")
    document["task"] = {"kind": "listops", "sequence_length": "40"}
    write_document(folder, document)
    expect_refusal(weights, "task.sequence_length: expected an integer")


def test_tokenizer_fields_of_the_wrong_type_are_refused():
    folder, weights = fresh()
    path = os.path.join(folder, "model.tokenizer.json")
    with open(path) as f:
        original = json.load(f)
    cases = [({"vocab_size": "17"}, "\"vocab_size\" \"17\" does not match"),
             ({"vocab_size": 17.0}, "\"vocab_size\" 17.0 does not match"),
             ({"tokens": 5}, "\"tokens\" must be an array of strings"),
             ({"tokens": [["[MIN"]]}, "token 0: not a string"),
             ({"kind": 3}, "\"kind\" must be one of byte, character, word, fixed"),
             ({"kind": "byte"}, "a byte tokenizer has no \"tokens\"")]
    for change, words in cases:
        write_json(path, dict(original, **change))
        expect_refusal(weights, path, words)
    write_json(path, ["fixed"])
    expect_refusal(weights, path + ": expected a JSON object")


def test_safetensors_header_entries_of_the_wrong_type_are_refused():
    folder, weights = fresh()
    header, body = safetensors_parts(weights)
    name = "final_ln.weight"
    cases = [{"dtype": "F32", "shape": "16", "data_offsets": header[name]["data_offsets"]},
             {"dtype": "F32", "shape": [16], "data_offsets": [str(n) for n in header[name]["data_offsets"]]},
             {"dtype": 7, "shape": [16], "data_offsets": header[name]["data_offsets"]},
             {"dtype": "F32", "shape": [-16], "data_offsets": header[name]["data_offsets"]},
             {"dtype": "F32", "shape": [16], "data_offsets": [0]},
             ["F32", [16]]]
    for entry in cases:
        write_safetensors_parts(weights, json.dumps(dict(header, **{name: entry})), body)
        expect_refusal(weights, weights + ": tensor final_ln.weight: expected {\"dtype\"")
    text = json.dumps(dict(header, **{name: "@@"})).replace('"@@"', '{"dtype": "F32", "shape": [1e999], '
                                                                     '"data_offsets": [0, 64]}')
    write_safetensors_parts(weights, text, body)
    expect_refusal(weights, weights + ": tensor final_ln.weight: expected")
    write_safetensors_parts(weights, json.dumps(dict(header, **{name: dict(header[name], data_offsets=[0, 10 ** 9])})),
                            body)
    expect_refusal(weights, weights + ": tensor final_ln.weight: data_offsets [0, 1000000000] do not hold F32 [16]")


def test_metadata_that_is_not_an_object_of_strings_is_refused():
    folder, weights = fresh()
    os.remove(os.path.join(folder, "model.json"))  # the metadata's config is then the run document
    header, body = safetensors_parts(weights)
    for metadata in ("config", ["config"], {"config": 1}, {"config": {"model": {}}}):
        write_safetensors_parts(weights, json.dumps(dict(header, __metadata__=metadata)), body)
        expect_refusal(weights, weights + ": its safetensors header's \"__metadata__\" must be an object of strings")
    write_safetensors_parts(weights, json.dumps(dict(header, __metadata__={"config": "[1, 2]"})), body)
    expect_refusal(weights, "(metadata \"config\"): not a WideLab run document")
    write_safetensors_parts(weights, json.dumps(dict(header, __metadata__={"config": DEEP})), body)
    expect_refusal(weights, "(metadata \"config\"): not valid JSON")


def test_image_statistics_of_the_wrong_form_are_refused():
    folder, weights = fresh("image")
    path = os.path.join(folder, "model.image.json")
    with open(path) as f:
        original = json.load(f)
    write_json(path, dict(original, std=[0.3, 0.0, 0.3]))
    expect_refusal(weights, path + ": \"std\" must be positive")
    write_json(path, dict(original, mean=[0.5, 0.5]))
    expect_refusal(weights, path + ": \"mean\" must be an array of 3 numbers")
    write_text(path, json.dumps(original).replace(str(original["mean"][0]), "1e999"))
    expect_refusal(weights, path + ": \"mean\" holds something other than a finite number")


# ---------------------------------------------------------------- item 4: an export is one unit


def test_a_recorded_export_loads_until_its_weights_change():
    folder, weights = fresh("listops-pt", record=True)
    model, _ = widelab.load(weights)
    assert "export" in model.document and len(model.labels) == 10
    with open(weights, "ab") as f:
        f.write(b"\0")
    expect_refusal(weights, weights + ": its contents do not match model.json's record of this export")
    folder, weights = fresh(record=True)
    widelab.load(weights)
    expected = sha256(weights)
    with open(weights, "r+b") as f:
        f.seek(-3, os.SEEK_END)
        f.write(b"\x7f\x7f\x7f")
    expect_refusal(weights, weights + ": its contents do not match model.json's record of this export (sha256 %s"
                   % expected[:12], "%s... found" % sha256(weights)[:12],
                   "the export was interrupted or another export replaced part of it; export again")


def test_another_runs_weights_in_place_of_the_recorded_ones_are_refused():
    folder, weights = fresh(record=True)
    shutil.copy(os.path.join(EXPORTS["listops-other"], "model.safetensors"), weights)
    expect_refusal(weights, weights + ": its contents do not match model.json's record of this export")


def test_a_sidecar_changed_after_the_export_is_refused():
    folder, weights = fresh("image", record=True)
    assert len(widelab.load(weights)[0].labels) == 10
    path = os.path.join(folder, "model.labels.json")
    write_json(path, ["class %d" % i for i in range(10)])  # a well-formed file, from another export
    expect_refusal(weights, path + ": its contents do not match model.json's record of this export")


def test_a_listed_file_that_is_missing_is_refused():
    folder, weights = fresh(record=True)
    os.remove(os.path.join(folder, "model.tokenizer.json"))
    expect_refusal(weights, os.path.join(folder, "model.tokenizer.json") + ": missing, though model.json's record "
                   "of this export lists it")


def test_weights_the_record_does_not_list_are_refused():
    # model.json and its record belong to a .pt export; the safetensors file beside it is from an earlier one.
    folder, weights = fresh(record=False)
    shutil.copy(os.path.join(EXPORTS["listops-pt"], "model.pt"), os.path.join(folder, "model.pt"))
    write_record(folder, ["model.pt", "model.tokenizer.json", "model.labels.json"])
    expect_refusal(weights, weights + ": model.json's record of this export does not list it")
    widelab.load(os.path.join(folder, "model.pt"))


def test_a_stray_sidecar_beside_a_recorded_export_is_not_used():
    folder, weights = fresh(record=False)
    os.remove(os.path.join(folder, "model.labels.json"))
    os.remove(os.path.join(folder, "model.tokenizer.json"))
    write_record(folder, ["model.safetensors"])
    # Files this export did not write: another run's labels, a damaged tokenizer.
    write_json(os.path.join(folder, "labels.json"), ["cat", "dog"])
    write_json(os.path.join(folder, "model.labels.json"), ["cat", "dog", "bird"])
    write_text(os.path.join(folder, "tokenizer.json"), "{not json")
    model, tokenizer = widelab.load(weights)
    assert model.labels is None, model.labels
    assert tokenizer.kind == "fixed" and tokenizer.vocab_size == 17  # ListOps' own vocabulary
    # A run directory given: the run's own files, as without a record.
    run = os.path.join(folder, "run")
    shutil.copytree(RUNS["listops"], run)
    write_json(os.path.join(run, "labels.json"), ["class %d" % i for i in range(10)])
    model, _ = widelab.load(weights, run_dir=run)
    assert model.labels[0] == "class 0", model.labels


def test_a_recorded_export_needing_an_unlisted_sidecar_says_so():
    folder, weights = fresh("image")
    write_record(folder, ["model.safetensors", "model.tokenizer.json", "model.labels.json"])
    expect_refusal(weights, "an image model needs its run's image.json",
                   "model.json's record of this export lists no model.image.json")


def test_a_malformed_record_is_refused():
    folder, weights = fresh()
    good = sha256(weights)
    model_json = os.path.join(folder, "model.json")
    cases = [([], "\"export\": expected {\"files\""),
             ("model.safetensors", "\"export\": expected {\"files\""),
             ({"files": ["model.safetensors"]}, "\"export\": expected {\"files\""),
             ({"files": {"model.safetensors": "abc"}}, "files.\"model.safetensors\": expected the file's SHA-256 "
                                                       "(64 hex digits), found \"abc\""),
             ({"files": {"model.safetensors": good + "0"}}, "expected the file's SHA-256"),
             ({"files": {"model.safetensors": 12}}, "expected the file's SHA-256"),
             ({"files": {"model.safetensors": good, "../model.labels.json": good}},
              "\"../model.labels.json\" is not the name of a file beside model.json"),
             ({"files": {"model.safetensors": good, "..": good}}, "\"..\" is not the name of a file"),
             ({"files": {"model.safetensors": good, "sub/model.labels.json": good}},
              "\"sub/model.labels.json\" is not the name of a file")]
    for record, words in cases:
        document = read_document(folder)
        document["export"] = record
        write_document(folder, document)
        expect_refusal(weights, model_json, words)


# ---------------------------------------------------------------- item 5: metadata and model.json agree


def test_weights_and_model_json_describing_different_models_are_refused():
    folder, weights = fresh()
    document = read_document(folder)
    document["model"]["heads"] = 4
    write_document(folder, document)
    expect_refusal(weights, weights, os.path.join(folder, "model.json"),
                   "the weights' own metadata and model.json describe different models "
                   "(model.heads: 2 in the weights, 4 in model.json)")


def test_another_runs_weights_without_a_record_are_refused_by_their_metadata():
    folder, weights = fresh()
    shutil.copy(os.path.join(EXPORTS["listops-other"], "model.safetensors"), weights)
    expect_refusal(weights, "describe different models (model.ffn_dim: 24 in the weights, 32 in model.json)")


# ---------------------------------------------------------------- the schema's ranges


def test_model_key_ranges_are_the_schemas():
    listed = json.loads(cli("keys", "--json"))
    ranges = {k["key"][len("model."):]: tuple(k["range"]) for k in listed["keys"]
              if k["key"].startswith("model.") and "range" in k}
    assert ranges == {k: (float(a), float(b)) for k, (a, b) in widelab.config._RANGES.items()}, \
        "python/widelab/config.py's _RANGES differ from `widelab-cli keys --json`: %s" % sorted(
            set(ranges.items()) ^ {(k, (float(a), float(b))) for k, (a, b) in widelab.config._RANGES.items()})


# ---------------------------------------------------------------- main


def make_exports(base):
    """Every export the tests damage copies of, made under `base` (emptied first)."""
    global WORK
    torch.set_num_threads(1)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    WORK = os.path.join(base, "cases")
    os.makedirs(WORK)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(make_export, base, name, document) for name, document in documents(base).items()]:
            done.result()


def setup_module(module=None):
    """pytest: the exports, made once for the module with WIDELAB_CLI (or build/app/cli/widelab-cli)."""
    global CLI
    CLI = os.environ.get("WIDELAB_CLI") or os.path.join(ROOT, "build", "app", "cli", "widelab-cli")
    if not os.path.exists(CLI):
        import pytest
        pytest.skip("give WIDELAB_CLI: widelab-cli to make the exports (%s is missing)" % CLI)
    make_exports(tempfile.mkdtemp(prefix="widelab-loader-"))


def teardown_module(module=None):
    shutil.rmtree(os.path.dirname(WORK), ignore_errors=True)


def main():
    global CLI, WORK
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_cli = os.environ.get("WIDELAB_CLI") or os.path.join(ROOT, "build", "app", "cli", "widelab-cli")
    parser.add_argument("--cli", default=default_cli, help="the widelab-cli executable")
    parser.add_argument("--only", default="", help="run the tests whose name contains this")
    parser.add_argument("--keep", default=None, help="keep the exports in this folder")
    args = parser.parse_args()
    if not os.path.exists(args.cli):
        sys.exit("test_loader_checks: give --cli PATH (or WIDELAB_CLI): widelab-cli to make the exports")
    CLI = args.cli
    started = time.time()
    base = args.keep or tempfile.mkdtemp(prefix="widelab-loader-")
    make_exports(base)
    print("exports made in %.1f s" % (time.time() - started))
    run_tests(globals(), args.only, base, args.keep, started)


if __name__ == "__main__":
    main()
