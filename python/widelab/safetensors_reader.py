"""A reader of the safetensors files `widelab-cli export` writes (docs/run-directory.md,
"Export"): an 8-byte little-endian header length, the JSON header, then the tensors'
little-endian bytes. Pure Python over torch (torch.frombuffer, PyTorch >= 1.10); the
`safetensors` package is not needed."""

import json
import struct
import sys

import torch

from .errors import WideLabError

DTYPES = {
    "F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool,
}


def read_safetensors(path):
    """(tensors, metadata) of a safetensors file: a dict of name -> CPU tensor, in the
    header's order, and the header's "__metadata__" (strings; {} when absent)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise WideLabError("%s: missing" % path)
    except OSError as error:
        raise WideLabError("%s: cannot be read (%s)" % (path, error.strerror or error))
    if len(data) < 8:
        raise WideLabError("%s: not a safetensors file (shorter than its 8-byte header length)" % path)
    (length,) = struct.unpack("<Q", data[:8])
    if length > len(data) - 8:
        raise WideLabError("%s: cut short (its header says %d bytes, %d follow)" % (path, length, len(data) - 8))
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"))
    except ValueError as error:
        raise WideLabError("%s: its safetensors header is not JSON (%s)" % (path, error))
    if not isinstance(header, dict):
        raise WideLabError("%s: its safetensors header is not a JSON object" % path)
    metadata = header.pop("__metadata__", None) or {}
    body = memoryview(data)[8 + length:]
    tensors = {}
    for name, entry in header.items():
        try:
            dtype = DTYPES[entry["dtype"]]
            shape = [int(n) for n in entry["shape"]]
            begin, end = (int(n) for n in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise WideLabError("%s: tensor %s: expected a known dtype (%s), a shape and data_offsets, found %s"
                               % (path, name, ", ".join(DTYPES), json.dumps(entry)))
        count = 1
        for n in shape:
            count *= n
        size = torch.empty((), dtype=dtype).element_size()
        if not 0 <= begin <= end <= len(body) or end - begin != count * size:
            raise WideLabError("%s: tensor %s: data_offsets [%d, %d] do not hold %s %s (%d bytes of data in all)"
                               % (path, name, begin, end, entry["dtype"], shape, len(body)))
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
