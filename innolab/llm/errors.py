"""The LLM layer's error type, shared by the client and the embedded model server."""


class LLMError(RuntimeError):
    """The model could not be reached after the retries, or a replay found no cached response.

    Attributes:
        sent: The sampling settings of the request that failed (temperature, seed, call index),
            so that a trace records them for failed calls too; for a call that reached the
            endpoint, also its attempts, latency_s and wait_s.
        spent: What the failed call took (attempts, latency_s, wait_s); merged into `sent`.
        model_failed: Whether the model's failure ended the call: its retries spent, a request
            it refused (401, 404, 400...), or the run's clock running out while the endpoint
            failed (its last attempt an error of its own: no connection, 5xx, a timeout shorter
            than the clock's, a malformed reply, a 429 without Retry-After). False where the
            clock ran out while the model was answering, while the call waited for the
            endpoint's Retry-After on a 429, or for the sweep's limits: the run ends by its
            budget (innolab.gym.run), a result.
    """

    sent: dict = {}  # noqa: RUF012 - replaced per instance, never mutated
    spent: dict = {}  # noqa: RUF012 - replaced per instance, never mutated
    model_failed: bool = True


class LLMCancelled(LLMError):
    """A call its caller cancelled (a gateway's client that disconnected).

    The upstream request was closed, and the model's generation with it.

    Attributes:
        partial: What it had produced when it was closed: `response` (its text so far),
            `completion_tokens` (its chunks so far, a token each), `prompt_tokens` (the endpoint's
            count where it said, else innolab's estimate) and `reached` (whether the request had
            been sent).
    """

    model_failed = False
    partial: dict = {}  # noqa: RUF012 - replaced per instance, never mutated
