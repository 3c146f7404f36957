"""LLM settings from parameters or INNOLAB_LLM_* environment variables, validated."""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

# USD per million tokens (input, output). Configurable: pass `prices` or INNOLAB_LLM_PRICE_IN/_OUT.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {"smollm2": (0.0, 0.0)}
LOCAL_MODEL = "smollm2"

# The rules of the sampling settings, written once (the run schema, innolab.runspec, uses them too).
Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
TopP = Annotated[float, Field(gt=0.0, le=1.0)]
MaxTokens = Annotated[int, Field(gt=0, le=200_000)]

NO_ENV = {"env": False}  # a model setting with no PREFIX_* environment variable

# The endpoint's limits: how the requests are paced, never what they return. They are left out of
# a configuration's id (innolab.runner.config_id) and, when unset, out of its config.json.
LIMIT_FIELDS = ("max_concurrent_requests", "requests_per_minute", "tokens_per_minute")

# The embedded model's reply cap, where none is given (an endpoint's default stays 512).
# SmolLM2-135M on one thread writes about 20-40 tokens/s and often fills a JSON string with digits
# up to the cap: at 512, such a reply took 13-27 s and a 60 s CodeAct run made as few as 2 tool
# calls; at 256, at least 3 for each of seeds 0-9 (tests/benchmarks/stepping.py; see README).
EMBEDDED_MAX_TOKENS = 256


class LLMSettings(BaseModel):
    """Where and how to call the model.

    No base_url means: the embedded local model (started on demand).

    `max_concurrent_requests`, `requests_per_minute` and `tokens_per_minute` are the endpoint's
    limits (None: none). Every request of the process to the same endpoint and model honours them
    (innolab.llm.gate), jointly with every worker of a sweep's Dask cluster inside
    `innolab.sweep.limits.activate`. They change no result, so they are not part of a
    configuration's id (LIMIT_FIELDS) and, when unset, are not written to config.json.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str = Field(
        default="INNOLAB_LLM_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )  # a name, not a key
    model: str = LOCAL_MODEL
    temperature: Temperature = 0.7
    top_p: TopP | None = None
    seed: int | None = 0
    max_tokens: MaxTokens = 512  # from_env gives the embedded model EMBEDDED_MAX_TOKENS
    timeout_s: float = Field(default=120.0, gt=0, json_schema_extra=NO_ENV)
    max_retries: int = Field(default=4, ge=0, le=20, json_schema_extra=NO_ENV)
    backoff_s: float = Field(default=0.5, ge=0.0, json_schema_extra=NO_ENV)
    price_in: float | None = Field(default=None, ge=0.0)
    price_out: float | None = Field(default=None, ge=0.0)
    max_concurrent_requests: int | None = Field(default=None, gt=0)
    requests_per_minute: int | None = Field(default=None, gt=0)
    tokens_per_minute: int | None = Field(default=None, gt=0)
    # sampling settings beyond the ones above, added to the run schema at run time
    # (innolab.runspec.add_setting): sent with every request, as the endpoint names them
    sampling: dict[str, Any] = Field(default_factory=dict, json_schema_extra=NO_ENV)

    @model_serializer(mode="wrap")
    def _without_unset_limits(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave the limits that are None, and empty sampling, out: config.json and ids stay."""
        data = handler(self)
        for name in LIMIT_FIELDS:
            if data.get(name, 0) is None:
                del data[name]
        if not data.get("sampling", True):
            del data["sampling"]
        return data

    def limits(self) -> dict[str, int]:
        """The endpoint's limits that are set.

        Returns:
            Each set limit (LIMIT_FIELDS) by name; empty when none is.
        """
        return {name: getattr(self, name) for name in LIMIT_FIELDS
                if getattr(self, name) is not None}

    @classmethod
    def from_env(cls, prefix: str = "INNOLAB_LLM", sampling_names: tuple[str, ...] = (),
                 **overrides: Any) -> LLMSettings:
        """Settings from PREFIX_* environment variables, explicit (non-None) overrides winning.

        The variables (`env_variables`): one per setting of the model (PREFIX_BASE_URL, _API_KEY,
        _MODEL, _TEMPERATURE, _TOP_P, _SEED, _MAX_TOKENS, _PRICE_IN, _PRICE_OUT,
        _MAX_CONCURRENT_REQUESTS, _REQUESTS_PER_MINUTE, _TOKENS_PER_MINUTE) and one per sampling
        setting added to the run schema (`sampling_names`); PREFIX is INNOLAB_LLM, or a
        backbone's own (e.g. OPENAI).

        Args:
            prefix: The variables' prefix.
            sampling_names: Sampling settings beyond the model's own (their values go to
                `sampling`, overrides and variables alike).
            **overrides: Settings given explicitly.

        Returns:
            The validated settings (api_key_env names PREFIX_API_KEY); with no base_url (the
            embedded model) and no max_tokens given, max_tokens is EMBEDDED_MAX_TOKENS.

        Raises:
            ValueError: A prefix that is not a variable name, or a setting that breaks its rule.
        """
        if not prefix.replace("_", "a").isalnum() or prefix[0].isdigit():
            raise ValueError(
                f"backbone: {prefix!r} is not an environment-variable prefix (letters, digits, _)"
            )
        env: dict[str, Any] = {"api_key_env": f"{prefix}_API_KEY"}
        sampling: dict[str, Any] = {}
        for field in (*ENV_SETTINGS, *sampling_names):
            value = os.environ.get(f"{prefix}_{field.upper()}")
            if value not in (None, "") and field in ENV_SETTINGS:
                env[field] = value
            elif value not in (None, ""):
                sampling[field] = _literal(value)  # a number or a word, as JSON reads it
        given = {k: v for k, v in overrides.items() if v is not None}
        for name in sampling_names:
            if name in given:
                sampling[name] = given.pop(name)
        if sampling:
            env["sampling"] = {**sampling, **given.pop("sampling", {})}
        embedded = not (given.get("base_url") or env.get("base_url"))
        if embedded and "max_tokens" not in given and "max_tokens" not in env:
            given["max_tokens"] = EMBEDDED_MAX_TOKENS
        try:
            return cls(**{**env, **given})
        except ValidationError as error:
            from_env = sorted({str(e["loc"][0]) for e in error.errors()
                               if e["loc"] and e["loc"][0] in env and e["loc"][0] not in given})
            if not from_env:
                raise
            names = ", ".join(f"{prefix}_{name.upper()}" for name in from_env)
            raise ValueError(f"environment variable(s) {names}: {error}") from None

    def prices(self) -> tuple[float, float]:
        """The model's prices in USD per million tokens (input, output).

        Returns:
            The configured prices, else the model's default ones (zero for unknown models).
        """
        default = DEFAULT_PRICES.get(self.model, (0.0, 0.0))
        return (
            self.price_in if self.price_in is not None else default[0],
            self.price_out if self.price_out is not None else default[1],
        )


# The model settings read from PREFIX_<NAME> variables: every field but the key's variable name
# and those marked NO_ENV (derived from the model, so a new field has its variable).
ENV_SETTINGS: tuple[str, ...] = tuple(
    name for name, field in LLMSettings.model_fields.items()
    if name != "api_key_env" and (field.json_schema_extra or {}) != NO_ENV)


def env_variables(prefix: str = "INNOLAB_LLM", sampling_names: tuple[str, ...] = ()) -> list[str]:
    """The environment variables `LLMSettings.from_env` reads for a prefix.

    Args:
        prefix: The variables' prefix.
        sampling_names: Sampling settings added to the run schema.

    Returns:
        The variables' names.
    """
    return [f"{prefix}_{name.upper()}" for name in (*ENV_SETTINGS, *sampling_names)]


def _literal(text: str) -> Any:
    """A variable's value as JSON reads it (a number, true/false), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text
