"""The LLM layer's error type, shared by the client and the embedded model server."""


class LLMError(RuntimeError):
    """The model could not be reached after the retries, or a replay found no cached response."""
