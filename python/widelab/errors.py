"""The one error type of the package: a message naming the file or key and the reason."""


class WideLabError(ValueError):
    """A WideLab export, tokenizer or input that cannot be used, and why."""
