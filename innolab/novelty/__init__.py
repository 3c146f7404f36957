"""Novelty (DAGENT).

Method cards, distance back ends and their registry, N and Div(T), judge ensembles, triplet
validation.
"""
