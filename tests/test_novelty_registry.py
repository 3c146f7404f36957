"""innolab.novelty.registry: the back ends by name, each made by its factory, with clear errors."""

import pytest

from innolab.novelty import registry
from innolab.novelty.backends import EmbeddingBackend, NoveltyError, TfidfBackend
from innolab.novelty.scoring import CODE_BACKENDS, compares_cards
from innolab.novelty.structure import StructuralBackend


def test_the_names_are_the_registered_factories():
    assert registry.BACKENDS == ("ast", "tfidf", "embedding", "llm")
    assert set(registry.BACKENDS) == set(registry.FACTORIES)
    assert CODE_BACKENDS == ("ast", "tfidf", "embedding")
    assert all(compares_cards(n) for n in registry.BACKENDS if n not in CODE_BACKENDS)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("ast", StructuralBackend), ("tfidf", TfidfBackend), ("embedding", EmbeddingBackend)],
)
def test_each_code_backend_is_made_under_its_own_name(name, kind):
    backend = registry.make_backend(name)
    assert type(backend) is kind and backend.name == name


def test_options_reach_the_backend():
    backend = registry.make_backend("embedding", base_url="http://127.0.0.1:9/v1", model="m")
    assert (backend.base_url, backend.model) == ("http://127.0.0.1:9/v1", "m")


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("cosine", {}, "backend must be one of ast, tfidf, embedding, llm, got 'cosine'"),
        ("", {}, "got ''"),
        ("ast", {"model": "m"}, "backend 'ast' takes no options, got \\['model'\\]"),
        ("tfidf", {"cache_path": "x"}, "backend 'tfidf' takes no options"),
    ],
)
def test_bad_names_and_options_are_named(name, options, message):
    with pytest.raises(NoveltyError, match=message):
        registry.make_backend(name, **options)


def test_the_ast_backend_falls_back_to_tfidf_on_text():
    text_a, text_b = "a greedy packing of circles", "a genetic search over packings"
    expected = TfidfBackend().distance(text_a, text_b)
    assert registry.make_backend("ast").distance(text_a, text_b) == expected
