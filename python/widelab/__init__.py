"""Load WideLab exports in PyTorch.

    import widelab
    model, tokenizer = widelab.load("model.safetensors")   # or model.pt, model.json beside it
    out = model(tokenizer.encode("[MAX 2 9 [MIN 4 7 ] 0 ]"))
    out.logits, out.attention, out.experts

The model follows docs/model.md of WideLab; in evaluation mode it gives what
`widelab-cli inspect RUN_DIR --text T --json` gives.
"""

from .config import ModelConfig
from .errors import WideLabError
from .images import ImageProcessor
from .loading import load
from .model import Output, WideLabModel, expert_capacity, route
from .tokenizer import Tokenizer

__version__ = "0.1.0"

__all__ = ["load", "ModelConfig", "WideLabModel", "Output", "Tokenizer", "ImageProcessor", "WideLabError",
           "expert_capacity", "route", "__version__"]
