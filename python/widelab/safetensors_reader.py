"""A reader of the safetensors files `widelab-cli export` writes (docs/run-directory.md,
"Export"): an 8-byte little-endian header length, the JSON header, then the tensors'
little-endian bytes. Pure Python over torch (torch.frombuffer, PyTorch >= 1.10); the
`safetensors` package is not needed."""

import struct
import sys

import torch

from .errors import WideLabError
from .files import describe, parse_json, read_bytes

DTYPES = {
    "F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool,
}


def _is_count(value):
    """A size or offset: an integer from 0 to 2^63 - 1 (what torch's sizes hold)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 63


def _metadata(header, path):
    """The header's "__metadata__": an object of strings ({} when absent)."""
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise WideLabError("%s: its safetensors header's \"__metadata__\" must be an object of strings, found %s"
                           % (path, describe(metadata)))
    return metadata


def _entry(name, entry, path):
    """(dtype name, shape, begin, end) of a header entry, each of the type the format says."""
    if isinstance(entry, dict):
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if isinstance(dtype, str) and dtype in DTYPES and isinstance(shape, list) and all(map(_is_count, shape)) \
                and isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets)):
            return dtype, shape, offsets[0], offsets[1]
    raise WideLabError("%s: tensor %s: expected {\"dtype\": one of %s, \"shape\": [sizes >= 0], \"data_offsets\": "
                       "[begin, end]}, found %s" % (path, name, ", ".join(DTYPES), describe(entry, 200)))


def parse_safetensors(data, path):
    """(tensors, metadata) of the bytes of a safetensors file; `path` names it in errors."""
    if len(data) < 8:
        raise WideLabError("%s: not a safetensors file (shorter than its 8-byte header length)" % path)
    (length,) = struct.unpack("<Q", data[:8])
    if length > len(data) - 8:
        raise WideLabError("%s: cut short (its header says %d bytes, %d follow)" % (path, length, len(data) - 8))
    header = parse_json(data[8:8 + length], "%s: its safetensors header" % path)
    if not isinstance(header, dict):
        raise WideLabError("%s: its safetensors header is not a JSON object" % path)
    metadata = _metadata(header, path)
    body = memoryview(data)[8 + length:]
    tensors = {}
    for name, entry in header.items():
        dtype_name, shape, begin, end = _entry(name, entry, path)
        dtype = DTYPES[dtype_name]
        count = 1
        for n in shape:
            count *= n
        size = torch.empty((), dtype=dtype).element_size()
        if not begin <= end <= len(body) or end - begin != count * size:
            raise WideLabError("%s: tensor %s: data_offsets [%d, %d] do not hold %s %s (%d bytes of data in all)"
                               % (path, name, begin, end, dtype_name, shape, len(body)))
        if count == 0:
            tensor = torch.empty(shape, dtype=dtype)
        else:
            # A copy (bytearray): frombuffer shares the buffer, and a bytes object is read-only.
            tensor = torch.frombuffer(bytearray(body[begin:end]), dtype=dtype).reshape(shape)
            if sys.byteorder == "big" and size > 1:
                tensor = torch.frombuffer(bytearray(body[begin:end]), dtype=torch.uint8) \
                    .view(-1, size).flip(1).contiguous().view(dtype).reshape(shape)
        tensors[name] = tensor
    return tensors, metadata


def read_safetensors(path):
    """(tensors, metadata) of a safetensors file: a dict of name -> CPU tensor, in the
    header's order, and the header's "__metadata__" (strings; {} when absent)."""
    return parse_safetensors(read_bytes(path), path)
