"""Images as WideLab's image models see them (docs/training.md, "Images";
docs/model.md, "Images"): decoded, given the model's channels (grey repeated to RGB, RGB
to grey by its luma), centre-cropped to a square and resized to image_size, then
normalised with the run's image.json.

PNG is decoded here (zlib from the standard library); JPEG needs Pillow, when installed.
"""

import math
import struct
import zlib

import torch

from .errors import WideLabError
from .files import parse_json, read_bytes

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _unfilter(data, width, height, bpp, row_bytes, origin):
    """The PNG scanlines without their filters (filter method 0)."""
    out = bytearray(height * row_bytes)
    previous = bytearray(row_bytes)
    at = 0
    for y in range(height):
        if at + 1 + row_bytes > len(data):
            raise WideLabError("%s: corrupt PNG (image data cut short)" % origin)
        kind = data[at]
        line = bytearray(data[at + 1: at + 1 + row_bytes])
        at += 1 + row_bytes
        if kind == 1:
            for i in range(bpp, row_bytes):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            for i in range(row_bytes):
                line[i] = (line[i] + previous[i]) & 0xFF
        elif kind == 3:
            for i in range(row_bytes):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(row_bytes):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + predictor) & 0xFF
        elif kind != 0:
            raise WideLabError("%s: corrupt PNG (filter type %d)" % (origin, kind))
        out[y * row_bytes:(y + 1) * row_bytes] = line
        previous = line
    return out


def decode_png(data, origin="image"):
    """(width, height, channels 1 or 3, bytes row-major) of a PNG: 8-bit output, an alpha
    channel composited onto black, palettes expanded, 16-bit samples cut to their high byte.
    Interlaced PNGs are refused."""
    if data[:8] != _PNG_SIGNATURE:
        raise WideLabError("%s: not a PNG file" % origin)
    at = 8
    header = None
    palette = b""
    transparency = b""
    compressed = bytearray()
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8: at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body[:13])
        elif kind == b"PLTE":
            palette = body
        elif kind == b"tRNS":
            transparency = body
        elif kind == b"IDAT":
            compressed += body
        elif kind == b"IEND":
            break
    if header is None:
        raise WideLabError("%s: corrupt PNG (no IHDR)" % origin)
    width, height, depth, colour, _, _, interlace = header
    if interlace:
        raise WideLabError("%s: interlaced PNG; the widelab Python package reads non-interlaced PNGs only" % origin)
    samples = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour)
    if samples is None or depth not in (1, 2, 4, 8, 16):
        raise WideLabError("%s: corrupt PNG (colour type %d, bit depth %d)" % (origin, colour, depth))
    try:
        raw = zlib.decompress(bytes(compressed))
    except zlib.error as error:
        raise WideLabError("%s: corrupt PNG (%s)" % (origin, error))
    bits = samples * depth
    bpp = max(1, bits // 8)
    row_bytes = (width * bits + 7) // 8
    rows = _unfilter(raw, width, height, bpp, row_bytes, origin)

    def sample_values(y):
        line = rows[y * row_bytes:(y + 1) * row_bytes]
        if depth == 8:
            return list(line)
        if depth == 16:
            return [line[i] for i in range(0, len(line), 2)]  # the high byte
        per_byte = 8 // depth
        mask = (1 << depth) - 1
        values = [(line[i // per_byte] >> (8 - depth * (i % per_byte + 1))) & mask for i in range(width * samples)]
        if colour == 3:
            return values
        return [v * 255 // mask for v in values]

    colour_out = colour in (2, 3, 6)
    channels = 3 if colour_out else 1
    pixels = bytearray(width * height * channels)
    for y in range(height):
        values = sample_values(y)
        for x in range(width):
            if colour == 3:
                index = values[x]
                if 3 * index + 3 > len(palette):
                    raise WideLabError("%s: corrupt PNG (palette index %d)" % (origin, index))
                rgb = list(palette[3 * index: 3 * index + 3])
                alpha = transparency[index] if index < len(transparency) else 255
            else:
                px = values[x * samples:(x + 1) * samples]
                rgb = px[:channels]
                alpha = px[channels] if samples in (2, 4) else 255
            if alpha != 255:
                rgb = [(v * alpha + 127) // 255 for v in rgb]
            pixels[(y * width + x) * channels:(y * width + x + 1) * channels] = bytes(rgb)
    return width, height, channels, bytes(pixels)


def decode_image_file(path):
    """(width, height, channels, bytes) of a PNG or JPEG file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise WideLabError("%s: cannot be read (%s)" % (path, error))
    if data[:8] == _PNG_SIGNATURE:
        return decode_png(data, str(path))
    if data[:3] == b"\xff\xd8\xff":
        try:
            from PIL import Image  # optional: only JPEG needs it
        except ImportError:
            raise WideLabError("%s: a JPEG; reading JPEG in Python needs Pillow (pip install pillow)" % path)
        with Image.open(path) as image:
            grey = image.mode in ("L", "1", "I", "I;16", "F")
            converted = image.convert("L" if grey else "RGB")
            return converted.width, converted.height, 1 if grey else 3, converted.tobytes()
    raise WideLabError("%s: neither a PNG nor a JPEG file" % path)


def _round(value):
    """std::lround, clamped to 0..255: halves away from zero."""
    return min(255, max(0, int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))))


def with_channels(width, height, channels, pixels, wanted):
    if channels == wanted:
        return pixels
    out = bytearray(width * height * wanted)
    for i in range(width * height):
        if wanted == 3:
            out[3 * i:3 * i + 3] = bytes([pixels[i]] * 3)
        else:
            r, g, b = pixels[3 * i], pixels[3 * i + 1], pixels[3 * i + 2]
            out[i] = _round(0.299 * r + 0.587 * g + 0.114 * b)
    return bytes(out)


def fit_image(width, height, channels, pixels, side):
    """The centre square of the image (left and top offsets rounded down) resized to side x side:
    when shrinking, each target pixel is the mean of the source pixels from floor(x*s) to
    max(floor(x*s) + 1, min(square, floor((x+1)*s))) (s = square / side) in each direction;
    when enlarging, bilinear between the four nearest source pixels, centres aligned
    (source coordinate (x + 0.5) * s - 0.5, clamped to the image); rounded half away from zero."""
    if width == side and height == side:
        return pixels
    square = min(width, height)
    left, top = (width - square) // 2, (height - square) // 2
    C = channels
    scale = square / side

    def at(x, y, c):
        return pixels[((top + y) * width + left + x) * C + c]

    out = bytearray(side * side * C)
    for y in range(side):
        for x in range(side):
            for c in range(C):
                if scale > 1.0:
                    x0, y0 = int(math.floor(x * scale)), int(math.floor(y * scale))
                    x1 = max(x0 + 1, min(square, int(math.floor((x + 1) * scale))))
                    y1 = max(y0 + 1, min(square, int(math.floor((y + 1) * scale))))
                    total = 0.0
                    for v in range(y0, y1):
                        for u in range(x0, x1):
                            total += at(u, v, c)
                    value = total / ((x1 - x0) * (y1 - y0))
                else:
                    sx = min(max((x + 0.5) * scale - 0.5, 0.0), square - 1.0)
                    sy = min(max((y + 0.5) * scale - 0.5, 0.0), square - 1.0)
                    u, v = int(sx), int(sy)
                    u1, v1 = min(u + 1, square - 1), min(v + 1, square - 1)
                    fx, fy = sx - u, sy - v
                    value = (1 - fy) * ((1 - fx) * at(u, v, c) + fx * at(u1, v, c)) \
                        + fy * ((1 - fx) * at(u, v1, c) + fx * at(u1, v1, c))
                out[(y * side + x) * C + c] = _round(value)
    return bytes(out)


class ImageProcessor:
    """The image model's "tokenizer": `encode(path)` gives the normalised pixels
    [channels, image_size, image_size] that `model(...)` takes, as `widelab-cli inspect
    --image FILE` computes them.

    mean, std: per channel, of pixel values scaled to [0, 1] (the run's image.json)."""

    kind = "image"

    def __init__(self, image_size, channels, patch_size, mean, std, uses_cls_token):
        self.image_size = image_size
        self.channels = channels
        self.patch_size = patch_size
        self.mean = [float(m) for m in mean]
        self.std = [float(s) for s in std]
        self.uses_cls_token = uses_cls_token

    @classmethod
    def read(cls, path, config):
        """From a run's image.json: {"mean": [...], "std": [...], "images": N}."""
        return cls.parse(read_bytes(path), config, str(path))

    @classmethod
    def parse(cls, data, config, origin="image.json"):
        """From the bytes of an image.json; `origin` names the file in errors."""
        return cls.from_json(parse_json(data, origin), config, origin)

    @classmethod
    def from_json(cls, document, config, origin="image.json"):
        """From an image.json's value: finite means, positive standard deviations, one per channel."""
        for key in ("mean", "std"):
            values = document.get(key) if isinstance(document, dict) else None
            if not isinstance(values, list) or len(values) != config.channels:
                raise WideLabError("%s: \"%s\" must be an array of %d numbers (model.channels)"
                                   % (origin, key, config.channels))
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
                raise WideLabError("%s: \"%s\" holds something other than a finite number" % (origin, key))
        if any(s <= 0 for s in document["std"]):
            raise WideLabError("%s: \"std\" must be positive" % origin)
        return cls(config.image_size, config.channels, config.patch_size, document["mean"], document["std"],
                   config.uses_cls_token)

    def pixels(self, image):
        """The image as the model sees it before normalisation: uint8 [S, S, C].

        image: a PNG or JPEG path, or a uint8 tensor [H, W, C] (C 1 or 3)."""
        if torch.is_tensor(image):
            if image.dim() != 3 or image.shape[2] not in (1, 3) or image.dtype != torch.uint8:
                raise WideLabError("image: expected a uint8 tensor [height, width, 1 or 3], got %s %s"
                                   % (image.dtype, list(image.shape)))
            height, width, channels = image.shape
            data = bytes(image.contiguous().flatten().tolist())
        else:
            width, height, channels, data = decode_image_file(image)
        data = with_channels(width, height, channels, data, self.channels)
        data = fit_image(width, height, self.channels, data, self.image_size)
        return torch.tensor(list(data), dtype=torch.uint8).view(self.image_size, self.image_size, self.channels)

    def encode(self, image):
        """Normalised pixels [C, S, S] float32: (value / 255 - mean) / std per channel."""
        pixels = self.pixels(image).permute(2, 0, 1).to(torch.float64) / 255.0
        mean = torch.tensor(self.mean, dtype=torch.float64).view(-1, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float64).view(-1, 1, 1)
        return ((pixels - mean) / std).to(torch.float32)

    def tokens(self):
        """The positions' names as inspect shows them: CLS (with CLS pooling), then r0c0, r0c1, ..."""
        grid = self.image_size // self.patch_size
        names = ["CLS"] if self.uses_cls_token else []
        return names + ["r%dc%d" % (r, c) for r in range(grid) for c in range(grid)]

    def __repr__(self):
        return "widelab.ImageProcessor(%dx%d, %d channel(s))" % (self.image_size, self.image_size, self.channels)
