"""WideLab's tokenizers (docs/model.md, "Tokenizers").

Ids: 0 is padding (never produced by encode), 1 is unknown, and the vocabulary starts
at 2: byte b has id 2 + b; a character, word or fixed tokenizer's i-th token has id 2 + i.
A bpe tokenizer has 2 = <s> and 3 = </s> (start and end of sequence, never produced by
encode), byte b as id 4 + b, and merge i as id 260 + i; it encodes exactly as
core/data/Bpe.cpp does (the same pieces, the same merges by rank).
"""

import warnings

import torch

from .errors import WideLabError
from .files import describe, parse_json, read_bytes

PAD = 0
UNKNOWN = 1
FIRST_TOKEN = 2
_KINDS = ("byte", "character", "word", "fixed", "bpe")

# A text pair's separator as inspect shows it, and the shortest length a pair fits in
# (a token of each text and two separators): core/data/PairInput.h.
SEPARATOR_TEXT = "<sep>"
SHORTEST_PAIR = 4

# bpe's ids (core/data/Bpe.h).
BPE_START = 2
BPE_END = 3
BPE_FIRST_BYTE = 4
BPE_FIRST_MERGE = BPE_FIRST_BYTE + 256
BPE_MAX_PIECE_BYTES = 64
BPE_MAX_MERGES = 10000000
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


_LETTER, _DIGIT, _SPACE, _PUNCTUATION = range(4)


def _bpe_unit(data, i):
    """(class, length) of the unit that starts at data[i] (bytes): see split_bpe_pieces."""
    c = data[i]
    n = len(data)
    if c < 0x80:
        if 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A:
            return _LETTER, 1
        if 0x30 <= c <= 0x39:
            return _DIGIT, 1
        if c == 0x20 or 0x09 <= c <= 0x0D:
            return _SPACE, 1
        return _PUNCTUATION, 1
    if c == 0xC2 and i + 1 < n and 0xA0 <= data[i + 1] <= 0xBF:  # U+00A0..U+00BF
        return _PUNCTUATION, 2
    if c == 0xC3 and i + 1 < n and data[i + 1] in (0x97, 0xB7):  # U+00D7, U+00F7
        return _PUNCTUATION, 2
    if c == 0xE2 and i + 2 < n and ((data[i + 1] == 0x80 and 0x80 <= data[i + 2] <= 0xBF)
                                    or (data[i + 1] == 0x81 and 0x80 <= data[i + 2] <= 0xAF)):  # U+2000..U+206F
        return _PUNCTUATION, 3
    if c == 0xE3 and i + 2 < n and data[i + 1] == 0x80 and 0x80 <= data[i + 2] <= 0xBF:  # U+3000..U+303F
        return _PUNCTUATION, 3
    return _LETTER, 1


def split_bpe_pieces(data):
    """The pieces bpe's merges never cross (bytes in, bytes out), as core/data/Bpe.h states:
    an optional space before a run of letters (A-Z, a-z, any other non-ASCII byte), digits
    or punctuation (other ASCII, and some Unicode punctuation), or a run of ASCII whitespace
    that leaves its last space to the word after it; at most 64 bytes a piece."""
    data = bytes(data)
    pieces = []
    n = len(data)
    start = 0
    while start < n:
        i = start
        if data[i] == 0x20 and i + 1 < n and _bpe_unit(data, i + 1)[0] != _SPACE:
            i += 1
        kind, length = _bpe_unit(data, i)
        end = i + length
        while end < n:
            next_kind, next_length = _bpe_unit(data, end)
            if next_kind != kind or end + next_length - start > BPE_MAX_PIECE_BYTES:
                break
            end += next_length
        if kind == _SPACE and end < n and _bpe_unit(data, end)[0] != _SPACE and end - start >= 2 \
                and data[end - 1] == 0x20:
            end -= 1
        pieces.append(data[start:end])
        start = end
    return pieces


def _bpe_merges_problem(merges):
    """Why `merges` cannot be a bpe tokenizer's, or None (core/data/Bpe.cpp, BpeModel::problem)."""
    if len(merges) > BPE_MAX_MERGES:
        return "%d merges, more than the %d a bpe tokenizer can hold" % (len(merges), BPE_MAX_MERGES)
    first = {}
    for i, merge in enumerate(merges):
        if not isinstance(merge, (list, tuple)) or len(merge) != 2 \
                or any(isinstance(x, bool) or not isinstance(x, int) for x in merge):
            return "merge %d: expected [left id, right id], found %s" % (i, describe(merge))
        limit = BPE_FIRST_MERGE + i
        for token in merge:
            if not BPE_FIRST_BYTE <= token < limit:
                return "merge %d: id %d is neither a byte (4..259) nor an earlier merge %s" % (
                    i, token, "(there is none)" if i == 0 else "(260..%d)" % (limit - 1))
        pair = (merge[0], merge[1])
        if pair in first:
            return "merge %d repeats merge %d [%d, %d]" % (i, first[pair], pair[0], pair[1])
        first[pair] = i
    return None


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
    """A WideLab tokenizer: kind "byte", "character", "word", "fixed" or "bpe", and the
    vocabulary (bpe: the merges, [left id, right id] of ids 260, 261, ...).

    max_length: the run's sequence length; encode cuts longer texts there, as
    `widelab-cli inspect` and training do (None: no limit).

    separator: a pair model's separator id (model.vocab_size - 1 of a model with
    model.segments > 0; widelab.load sets it), for encode_pair; None otherwise.
    """

    def __init__(self, kind, tokens=(), max_length=None, origin="tokenizer", merges=(), separator=None):
        if kind not in _KINDS:
            raise WideLabError("%s: unknown kind \"%s\" (expected byte, character, word, fixed or bpe)"
                               % (origin, kind))
        tokens = list(tokens)
        merges = list(merges)
        if kind in ("byte", "bpe") and tokens:
            raise WideLabError("%s: a %s tokenizer has no \"tokens\"" % (origin, kind))
        if kind != "bpe" and merges:
            raise WideLabError("%s: a %s tokenizer has no \"merges\" (only bpe has)" % (origin, kind))
        problem = _bpe_merges_problem(merges) if kind == "bpe" else None
        if problem:
            raise WideLabError("%s: %s" % (origin, problem))
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
        self.merges = [(int(left), int(right)) for left, right in merges]
        self.max_length = max_length
        self.separator = None
        if separator is not None:
            self.set_separator(separator, origin)
        self._ids = {token: FIRST_TOKEN + i for i, token in enumerate(tokens)}
        if kind == "bpe":
            self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}
            self._bytes = [b""] * BPE_FIRST_BYTE + [bytes([b]) for b in range(256)]
            for left, right in self.merges:
                self._bytes.append(self._bytes[left] + self._bytes[right])
            self._pieces = {}

    @classmethod
    def from_json(cls, document, max_length=None, origin="tokenizer.json"):
        """From a run's tokenizer.json: {"kind": ..., "tokens": [...], "vocab_size": N}, or
        {"kind": "bpe", "merges": [[left id, right id], ...], "vocab_size": N}."""
        if not isinstance(document, dict):
            raise WideLabError("%s: expected a JSON object" % origin)
        for key in document:
            if key not in ("kind", "tokens", "merges", "vocab_size"):
                raise WideLabError("%s: unknown key \"%s\"" % (origin, key))
        kind = document.get("kind")
        if not isinstance(kind, str):
            raise WideLabError("%s: \"kind\" must be one of byte, character, word, fixed, bpe" % origin)
        if kind in ("byte", "bpe") and "tokens" in document:
            raise WideLabError("%s: a %s tokenizer has no \"tokens\"" % (origin, kind))
        if kind in _KINDS and kind != "bpe" and "merges" in document:
            raise WideLabError("%s: a %s tokenizer has no \"merges\" (only bpe has)" % (origin, kind))
        if kind == "bpe" and not isinstance(document.get("merges"), list):
            raise WideLabError("%s: \"merges\" must be an array of [left id, right id] pairs" % origin)
        if kind not in ("byte", "bpe") and not isinstance(document.get("tokens"), list):
            raise WideLabError("%s: \"tokens\" must be an array of strings" % origin)
        tokenizer = cls(kind, document.get("tokens", []), max_length, origin, document.get("merges", []))
        if "vocab_size" in document:
            size = document["vocab_size"]
            if not isinstance(size, int) or isinstance(size, bool) or size != tokenizer.vocab_size:
                raise WideLabError("%s: \"vocab_size\" %s does not match the %d ids of the %s"
                                   % (origin, describe(size), tokenizer.vocab_size,
                                      "merges" if kind == "bpe" else "tokens"))
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
        """Ids in use, padding and unknown included (and for bpe, <s> and </s>)."""
        if self.kind == "bpe":
            return BPE_FIRST_MERGE + len(self.merges)
        return FIRST_TOKEN + (256 if self.kind == "byte" else len(self.vocabulary))

    @property
    def start_id(self):
        """The start-of-sequence id (<s>) of a tokenizer that has one (bpe: 2), else None."""
        return BPE_START if self.kind == "bpe" else None

    @property
    def end_id(self):
        """The end-of-sequence id (</s>) of a tokenizer that has one (bpe: 3), else None."""
        return BPE_END if self.kind == "bpe" else None

    def _bpe_piece(self, piece):
        """The ids of one piece: its bytes, then the lowest-ranked pair present merged
        everywhere from left to right, again until no pair has a rank."""
        cached = self._pieces.get(piece)
        if cached is not None:
            return cached
        ids = [BPE_FIRST_BYTE + b for b in piece]
        ranks = self._ranks
        while len(ids) >= 2:
            rank = min((ranks.get(pair, BPE_MAX_MERGES) for pair in zip(ids, ids[1:])), default=BPE_MAX_MERGES)
            if rank == BPE_MAX_MERGES:
                break
            left, right = self.merges[rank]
            merged = []
            k = 0
            while k < len(ids):
                if k + 1 < len(ids) and ids[k] == left and ids[k + 1] == right:
                    merged.append(BPE_FIRST_MERGE + rank)
                    k += 2
                else:
                    merged.append(ids[k])
                    k += 1
            ids = merged
        if len(self._pieces) >= 1 << 18:
            self._pieces.clear()
        self._pieces[piece] = ids
        return ids

    def encode_list(self, text, truncate=True):
        """The ids of `text` (str, or bytes: UTF-8 for every kind but byte and bpe) as a list."""
        if self.kind == "byte":
            data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
            ids = [FIRST_TOKEN + b for b in data]
        elif self.kind == "bpe":
            data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
            ids = [i for piece in split_bpe_pieces(data) for i in self._bpe_piece(piece)]
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

    def set_separator(self, separator, origin="tokenizer"):
        """Makes `separator` (an id past the tokenizer's own) the pair separator."""
        if isinstance(separator, bool) or not isinstance(separator, int) or separator < self.vocab_size:
            raise WideLabError("%s: the separator id %s is not past the tokenizer's %d ids"
                               % (origin, describe(separator), self.vocab_size))
        self.separator = separator

    def encode_pair(self, first, second):
        """The ids of a text pair as a pair model reads them: first <sep> second <sep>, an
        int64 tensor [T] (docs/training.md, "Text pairs"). Past the run's sequence length
        (max_length), the longer text loses its last token (the second on a tie) until the
        pair fits, so that each keeps at least one, as training and `widelab-cli inspect`
        cut it (no warning: a pair is cut as a matter of course)."""
        if self.separator is None:
            raise WideLabError("encode_pair is for a pair model (model.segments > 0): this tokenizer has no separator")
        a = self.encode_list(first, truncate=False)
        b = self.encode_list(second, truncate=False)
        if self.max_length is not None:
            if self.max_length < SHORTEST_PAIR:
                raise WideLabError("a pair needs a sequence length of at least %d, the run's is %d"
                                   % (SHORTEST_PAIR, self.max_length))
            a, b = a[: self.max_length - 3], b[: self.max_length - 3]
            while len(a) + len(b) + 2 > self.max_length:
                (a if len(a) > len(b) else b).pop()
        return torch.tensor(a + [self.separator] + b + [self.separator], dtype=torch.long)

    def token_text(self, token_id):
        """How `widelab-cli inspect` shows an id: <pad>, <unk>, a printable ASCII byte as
        itself and any other byte \\xNN, a vocabulary token with control characters \\xNN;
        bpe: <s>, </s>, and a token's bytes with each valid UTF-8 character as itself
        (control characters \\xNN) and every other byte \\xNN."""
        token_id = int(token_id)
        if token_id == self.separator:
            return SEPARATOR_TEXT
        if not 0 <= token_id < self.vocab_size:
            raise WideLabError("token id %d is outside the vocabulary 0..%d" % (token_id, self.vocab_size - 1))
        if token_id == PAD:
            return "<pad>"
        if token_id == UNKNOWN:
            return "<unk>"
        if self.kind == "byte":
            b = token_id - FIRST_TOKEN
            return chr(b) if 0x20 <= b < 0x7F else "\\x%02x" % b
        if self.kind == "bpe":
            if token_id == BPE_START:
                return "<s>"
            if token_id == BPE_END:
                return "</s>"
            return _display(self._bytes[token_id].decode("utf-8", errors="backslashreplace"))
        return _display(self.vocabulary[token_id - FIRST_TOKEN])

    def tokens(self, ids):
        """token_text of every id."""
        return [self.token_text(i) for i in (ids.tolist() if torch.is_tensor(ids) else ids)]

    def decode_bytes(self, ids):
        """The bytes of byte or bpe ids, exactly as encoded: padding, <s> and </s> skipped,
        unknown as b"<unk>"."""
        if self.kind not in ("byte", "bpe"):
            raise WideLabError("decode_bytes is for the byte and bpe tokenizers, not %s" % self.kind)
        raw = bytearray()
        for i in (ids.tolist() if torch.is_tensor(ids) else ids):
            if not 0 <= i < self.vocab_size:
                raise WideLabError("token id %d is outside the vocabulary 0..%d" % (i, self.vocab_size - 1))
            if i == UNKNOWN:
                raw += b"<unk>"
            elif self.kind == "byte" and i != PAD:
                raw += bytes([i - FIRST_TOKEN])
            elif self.kind == "bpe" and i >= BPE_FIRST_BYTE:
                raw += self._bytes[i]
        return bytes(raw)

    def decode(self, ids):
        """Text of ids: padding (and bpe's <s> and </s>) skipped, unknown as <unk>; word and
        fixed tokens joined by single spaces. Bytes that are not UTF-8 are replaced (U+FFFD)."""
        if self.kind == "bpe":
            return self.decode_bytes(ids).decode("utf-8", errors="replace")
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
