"""The LLM layer: OpenAI-compatible client with retries, cost accounting, a response cache, the embedded model."""

from innolab.llm.client import Completion, LLMClient, LLMError
from innolab.llm.settings import LLMSettings

__all__ = ["Completion", "LLMClient", "LLMError", "LLMSettings"]
