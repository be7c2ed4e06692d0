"""WideLab's tokenizers (docs/model.md, "Tokenizers").

Ids: 0 is padding (never produced by encode), 1 is unknown, and the vocabulary starts
at 2: byte b has id 2 + b; a character, word or fixed tokenizer's i-th token has id 2 + i.
"""

import warnings

import torch

from .errors import WideLabError
from .files import describe, parse_json, read_bytes

PAD = 0
UNKNOWN = 1
FIRST_TOKEN = 2
_KINDS = ("byte", "character", "word", "fixed")
_ASCII_SPACE = " \t\n\v\f\r"

# ListOps' closed vocabulary, in id order from 2 (its runs' tokenizer.json holds the same list).
LISTOPS_TOKENS = ["[MIN", "[MAX", "[MED", "[SM", "]", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]


def _is_word_character(ch):
    """ASCII letters and digits, and every non-ASCII code point."""
    return ("0" <= ch <= "9") or ("A" <= ch <= "Z") or ("a" <= ch <= "z") or ord(ch) >= 0x80


def split_words(text):
    """The word tokenizer's tokens: maximal runs of word characters; every other character
    that is not ASCII whitespace on its own; ASCII whitespace separates and is dropped."""
    tokens = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _ASCII_SPACE:
            i += 1
            continue
        end = i + 1
        if _is_word_character(ch):
            while end < n and _is_word_character(text[end]):
                end += 1
        tokens.append(text[i:end])
        i = end
    return tokens


def split_fixed(text):
    """Runs of characters other than ASCII whitespace (ListOps)."""
    tokens = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in _ASCII_SPACE:
            i += 1
            continue
        end = i
        while end < n and text[end] not in _ASCII_SPACE:
            end += 1
        tokens.append(text[i:end])
        i = end
    return tokens


def _utf8(text, origin):
    """str from str or UTF-8 bytes; an error naming the first invalid byte."""
    if isinstance(text, str):
        return text
    try:
        return bytes(text).decode("utf-8")
    except UnicodeDecodeError as error:
        raise WideLabError("%sinvalid UTF-8 at byte %d" % (origin, error.start))


def _display(token):
    return "".join("\\x%02x" % ord(ch) if ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in token)


class Tokenizer:
    """A WideLab tokenizer: kind "byte", "character", "word" or "fixed", and the vocabulary.

    max_length: the run's sequence length; encode cuts longer texts there, as
    `widelab-cli inspect` and training do (None: no limit).
    """

    def __init__(self, kind, tokens=(), max_length=None, origin="tokenizer"):
        if kind not in _KINDS:
            raise WideLabError("%s: unknown kind \"%s\" (expected byte, character, word or fixed)" % (origin, kind))
        tokens = list(tokens)
        if kind == "byte" and tokens:
            raise WideLabError("%s: a byte tokenizer has no \"tokens\"" % origin)
        seen = set()
        for i, token in enumerate(tokens):
            problem = None
            if not isinstance(token, str) or not token:
                problem = "empty token" if token == "" else "not a string"
            elif kind == "character" and len(token) != 1:
                problem = "\"%s\" is not a single character" % _display(token)
            elif kind == "word" and split_words(token) != [token]:
                problem = "\"%s\" is not a single word or symbol" % _display(token)
            elif kind == "fixed" and any(ch in _ASCII_SPACE for ch in token):
                problem = "\"%s\" contains whitespace" % _display(token)
            elif token in seen:
                problem = "\"%s\" appears twice" % _display(token)
            if problem:
                raise WideLabError("%s: token %d: %s" % (origin, i, problem))
            seen.add(token)
        self.kind = kind
        self.vocabulary = tokens
        self.max_length = max_length
        self._ids = {token: FIRST_TOKEN + i for i, token in enumerate(tokens)}

    @classmethod
    def from_json(cls, document, max_length=None, origin="tokenizer.json"):
        """From a run's tokenizer.json: {"kind": ..., "tokens": [...], "vocab_size": N}."""
        if not isinstance(document, dict):
            raise WideLabError("%s: expected a JSON object" % origin)
        for key in document:
            if key not in ("kind", "tokens", "vocab_size"):
                raise WideLabError("%s: unknown key \"%s\"" % (origin, key))
        kind = document.get("kind")
        if not isinstance(kind, str):
            raise WideLabError("%s: \"kind\" must be one of byte, character, word, fixed" % origin)
        if kind == "byte" and "tokens" in document:
            raise WideLabError("%s: a byte tokenizer has no \"tokens\"" % origin)
        if kind != "byte" and not isinstance(document.get("tokens"), list):
            raise WideLabError("%s: \"tokens\" must be an array of strings" % origin)
        tokenizer = cls(kind, document.get("tokens", []), max_length, origin)
        if "vocab_size" in document:
            size = document["vocab_size"]
            if not isinstance(size, int) or isinstance(size, bool) or size != tokenizer.vocab_size:
                raise WideLabError("%s: \"vocab_size\" %s does not match the %d ids of the tokens"
                                   % (origin, describe(size), tokenizer.vocab_size))
        return tokenizer

    @classmethod
    def read(cls, path, max_length=None):
        """From a run's tokenizer.json file."""
        return cls.parse(read_bytes(path), max_length, str(path))

    @classmethod
    def parse(cls, data, max_length=None, origin="tokenizer.json"):
        """From the bytes of a tokenizer.json; `origin` names the file in errors."""
        return cls.from_json(parse_json(data, origin), max_length, origin)

    @property
    def vocab_size(self):
        """Ids in use, padding and unknown included."""
        return FIRST_TOKEN + (256 if self.kind == "byte" else len(self.vocabulary))

    def encode_list(self, text, truncate=True):
        """The ids of `text` (str, or bytes: UTF-8 for every kind but byte) as a list."""
        if self.kind == "byte":
            data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
            ids = [FIRST_TOKEN + b for b in data]
        elif self.kind == "character":
            ids = [self._ids.get(ch, UNKNOWN) for ch in _utf8(text, "")]
        elif self.kind == "word":
            ids = [self._ids.get(word, UNKNOWN) for word in split_words(_utf8(text, ""))]
        else:
            ids = [self._ids.get(word, UNKNOWN) for word in split_fixed(_utf8(text, ""))]
        if truncate and self.max_length is not None and len(ids) > self.max_length:
            warnings.warn("the text has %d tokens; cut to the run's sequence length %d, as widelab-cli inspect does"
                          % (len(ids), self.max_length))
            ids = ids[: self.max_length]
        return ids

    def encode(self, text, truncate=True):
        """The ids of `text` as an int64 tensor [T] (model(ids) takes it as a batch of one).

        truncate: cut after the run's sequence length (max_length) with a warning, as
        `widelab-cli inspect` does; False keeps every token."""
        ids = self.encode_list(text, truncate)
        if not ids:
            raise WideLabError("the text %r has no token" % (text,))
        return torch.tensor(ids, dtype=torch.long)

    def token_text(self, token_id):
        """How `widelab-cli inspect` shows an id: <pad>, <unk>, a printable ASCII byte as
        itself and any other byte \\xNN, a vocabulary token with control characters \\xNN."""
        token_id = int(token_id)
        if not 0 <= token_id < self.vocab_size:
            raise WideLabError("token id %d is outside the vocabulary 0..%d" % (token_id, self.vocab_size - 1))
        if token_id == PAD:
            return "<pad>"
        if token_id == UNKNOWN:
            return "<unk>"
        if self.kind == "byte":
            b = token_id - FIRST_TOKEN
            return chr(b) if 0x20 <= b < 0x7F else "\\x%02x" % b
        return _display(self.vocabulary[token_id - FIRST_TOKEN])

    def tokens(self, ids):
        """token_text of every id."""
        return [self.token_text(i) for i in (ids.tolist() if torch.is_tensor(ids) else ids)]

    def decode(self, ids):
        """Text of ids: padding skipped, unknown as <unk>; word and fixed tokens joined by
        single spaces. Bytes that are not UTF-8 are replaced (U+FFFD)."""
        parts = []
        raw = bytearray()
        for i in (ids.tolist() if torch.is_tensor(ids) else ids):
            if not 0 <= i < self.vocab_size:
                raise WideLabError("token id %d is outside the vocabulary 0..%d" % (i, self.vocab_size - 1))
            if i == PAD:
                continue
            if self.kind == "byte":
                raw += b"<unk>" if i == UNKNOWN else bytes([i - FIRST_TOKEN])
            else:
                parts.append("<unk>" if i == UNKNOWN else self.vocabulary[i - FIRST_TOKEN])
        if self.kind == "byte":
            return raw.decode("utf-8", errors="replace")
        return (" " if self.kind in ("word", "fixed") else "").join(parts)

    def __repr__(self):
        return "widelab.Tokenizer(%s, %d ids)" % (self.kind, self.vocab_size)
