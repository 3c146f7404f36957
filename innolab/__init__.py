"""innolab: measure the innovation potential of AI agents (gain and novelty, after InnoGym)."""

__version__ = "0.1.0"
