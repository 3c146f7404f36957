"""Novelty (DAGENT): method cards, distance back ends, N and Div(T), judge ensembles, triplet validation."""
