"""Reading the files of an export: bytes and JSON, every failure a WideLabError naming
the file.

The JSON reader is strict where Python's json module is lenient: NaN and Infinity are
not JSON, and a document nested deeper than any WideLab writes (MAX_DEPTH) is refused
before anything walks it (Python's own recursion limit would otherwise stop the parser,
a repr or a comparison with a RecursionError).
"""

import json

from .errors import WideLabError

# WideLab's files nest a few levels (a run document: document -> section -> list -> value).
MAX_DEPTH = 64


def read_bytes(path):
    """The file's bytes; a missing or unreadable file is a WideLabError naming it."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise WideLabError("%s: missing" % path) from None
    except OSError as error:
        raise WideLabError("%s: cannot be read (%s)" % (path, error.strerror or error)) from None


def _not_json(name):
    raise ValueError("%s is not a JSON value" % name)


def depth_of(value, limit):
    """How deep `value` nests (a scalar: 0), counting no further than limit + 1; iterative."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            depth += 1
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest


def parse_json(data, origin):
    """The JSON value of `data` (UTF-8 bytes or str); `origin` names the file in errors."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as error:
            raise WideLabError("%s: not valid JSON (not UTF-8 text at byte %d)" % (origin, error.start)) from None
    try:
        value = json.loads(data, parse_constant=_not_json)
    except RecursionError:
        raise WideLabError("%s: not valid JSON for WideLab (nested more than %d deep)" % (origin, MAX_DEPTH)) from None
    except ValueError as error:
        raise WideLabError("%s: not valid JSON (%s)" % (origin, error)) from None
    if depth_of(value, MAX_DEPTH) > MAX_DEPTH:
        raise WideLabError("%s: not valid JSON for WideLab (nested more than %d deep)" % (origin, MAX_DEPTH))
    return value


def read_json(path):
    """The JSON value of the file at `path`."""
    return parse_json(read_bytes(path), path)


def describe(value, limit=60):
    """A short rendering of a JSON value for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(type(value).__name__)
    return text if len(text) <= limit else text[:limit - 3] + "..."
