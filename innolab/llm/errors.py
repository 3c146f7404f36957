"""The LLM layer's error type, shared by the client and the embedded model server."""


class LLMError(RuntimeError):
    """The model could not be reached after the retries, or a replay found no cached response.

    Attributes:
        sent: The sampling settings of the request that failed (temperature, seed, call index),
            so that a trace records them for failed calls too; for a call that reached the
            endpoint, also its attempts, latency_s and wait_s.
        spent: What the failed call took (attempts, latency_s, wait_s); merged into `sent`.
    """

    sent: dict = {}  # noqa: RUF012 - replaced per instance, never mutated
    spent: dict = {}  # noqa: RUF012 - replaced per instance, never mutated
