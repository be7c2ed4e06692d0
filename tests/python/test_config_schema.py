#!/usr/bin/env python3
"""The Python package's model keys (python/widelab/config.py) against WideLab's schema.

The package states which `model` keys it implements, with their types, choices and
(for the attention mechanisms' keys) defaults, because it computes them itself; the
schema (core/config/ConfigSchema.cpp) is where WideLab states them. This test reads
the schema from `widelab-cli keys --json` and fails on any difference: a key added
to the schema that the package does not implement yet, a key the package has that
WideLab no longer writes, another type, other choices, another default.

Usage:
    python3 tests/python/test_config_schema.py --cli build/app/cli/widelab-cli

PYTHONPATH must reach python/ (ctest sets it).
"""

import argparse
import json
import subprocess
import sys

from widelab import config

# The schema's types as the package names them. A choice and a device are strings.
TYPES = {"integer": config._INTEGER, "number": config._NUMBER, "boolean": config._BOOL,
         "choice": config._TEXT, "text": config._TEXT, "list of texts": config._TEXT_LIST}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    args = parser.parse_args()
    listed = subprocess.run([args.cli, "keys", "--json"], check=True, capture_output=True, text=True).stdout
    schema = {k["key"][len("model."):]: k for k in json.loads(listed)["keys"] if k["key"].startswith("model.")}
    problems = []

    package = dict((name, kind) for name, kind in config._KEYS.items())
    package.update((name, kind) for name, (kind, _) in config._MECHANISM_KEYS.items())
    package.update((name, kind) for name, (kind, _) in config._LATER_KEYS.items())
    for name in sorted(set(schema) - set(package)):
        problems.append("model.%s: in the schema, not implemented by the package" % name)
    for name in sorted(set(package) - set(schema)):
        problems.append("model.%s: in the package, not in the schema" % name)

    for name in sorted(set(schema) & set(package)):
        spec = schema[name]
        expected = TYPES.get(spec["type"])
        if expected is None:
            problems.append("model.%s: schema type %r has no counterpart in the package" % (name, spec["type"]))
        elif package[name] is not expected:
            problems.append("model.%s: the schema's type is %s, the package reads %s"
                            % (name, spec["type"], package[name].__name__))
        if name in config._MECHANISM_KEYS and config._MECHANISM_KEYS[name][1] != spec["default"]:
            problems.append("model.%s: default %r in the schema, %r in the package"
                            % (name, spec["default"], config._MECHANISM_KEYS[name][1]))
        if spec["type"] != "choice":
            continue
        if name == "attention":  # the package lists the mechanisms, and "mixed" beside them
            choices = tuple(config.MECHANISMS) + ("mixed",)
        else:
            choices = config._CHOICES.get(name)
        if choices is None or sorted(choices) != sorted(spec["choices"]):
            problems.append("model.%s: choices %s in the schema, %s in the package"
                            % (name, ", ".join(spec["choices"]), ", ".join(choices or ())))

    for name in sorted(set(config._CHOICES) - {n for n, s in schema.items() if s["type"] == "choice"}):
        problems.append("model.%s: the package lists choices for a key the schema does not make a choice" % name)

    if problems:
        print("python/widelab/config.py differs from WideLab's schema:", file=sys.stderr)
        for problem in problems:
            print("  " + problem, file=sys.stderr)
        return 1
    print("%d model keys agree (types, choices, mechanism defaults)" % len(schema))
    return 0


if __name__ == "__main__":
    sys.exit(main())
