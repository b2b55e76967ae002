"""The vlm package's error type."""


class VLMError(Exception):
    """Bad scorer config, an unreachable or misbehaving scoring server, or a malformed clip."""
