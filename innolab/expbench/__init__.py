"""EXP-Bench in innolab: its tasks and the aggregation of judged results."""
