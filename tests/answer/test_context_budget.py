"""The default context budget holds what retrieval returns: k chunks of ``chunk_size``.

Asked "Once I've downloaded the repo, what command sets up a conda environment with the
same package versions CBO used?" over the GitLab held-out set (the probe split), all five
passages retrieved bore on the question, and the fourth, the rest of CBO's install steps
holding ``conda env create -f environment.yml``, was left out of what the reader read: at
700 tokens the budget held three of them and the shorter fifth, and the answer quoted the
first two steps and stopped. The default now holds k full chunks, with their titles and
locators, and the reverse proof shows the former default leaving passages out.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clearance.answer.prompt import assemble_prompt
from clearance.config import Settings
from clearance.llm.base import Snippet
from clearance.model import Sensitivity


def full_chunks(settings: Settings) -> list[Snippet]:
    """``k`` chunks of ``chunk_size`` characters of English prose, as retrieval returns them."""
    words = "The team reviews every request for travel against the policy before booking. "
    text = (words * (settings.ingest.chunk_size // len(words) + 1))[: settings.ingest.chunk_size]
    return [
        Snippet(
            f"S{i}",
            f"c{i}",
            f"d{i}",
            "Travel policy",
            "section=Travel policy > Booking",
            f"files:travel-{i}.md",
            text,
            Sensitivity.INTERNAL,
            "default",
            "human",
        )
        for i in range(1, settings.retrieval.k + 1)
    ]


@pytest.mark.parametrize("budget", [None, 700])
def test_the_default_budget_holds_k_full_chunks(
    settings_factory: Callable[..., Settings], budget: int | None
) -> None:
    settings = settings_factory()
    snippets = full_chunks(settings)
    held = assemble_prompt(
        "Who reviews travel?", snippets, budget or settings.answer.context_budget_tokens
    )
    if budget is None:
        assert held.snippets == tuple(snippets)
    else:  # reverse proof: the former default leaves passages out
        assert len(held.snippets) < len(snippets)
