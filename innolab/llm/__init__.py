"""The LLM layer: OpenAI-compatible client, retries, costs, a response cache, the embedded model."""

from innolab.llm.client import Completion, LLMClient, LLMError
from innolab.llm.settings import LLMSettings

__all__ = ["Completion", "LLMClient", "LLMError", "LLMSettings"]
