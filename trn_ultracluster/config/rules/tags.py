"""Rules of the tags put on every resource."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import DOC_TAGS, TAG_KEY_CHARS, TAG_PUNCTUATION, TAG_VALUE_CHARS
from trn_ultracluster.config.model import ClusterConfig

__all__ = ["tags"]


def tags(c: ClusterConfig) -> Iterator[ConfigIssue]:
    # Source: AWS tagging guide (DOC_TAGS); see facts.TAG_PUNCTUATION.
    for key, value in c.tags.items():
        if not 1 <= len(key) <= TAG_KEY_CHARS or key.lower().startswith("aws:"):
            yield ConfigIssue(f"tags.{key}", value,
                              f"must have a key of 1-{TAG_KEY_CHARS} characters that does not "
                              "start with 'aws:'", DOC_TAGS)
        elif not _tag_text(key):
            yield ConfigIssue(f"tags.{key}", value, f"must have a key of letters, digits, "
                              f"spaces and {TAG_PUNCTUATION} only", DOC_TAGS)
        elif len(value) > TAG_VALUE_CHARS:
            yield ConfigIssue(f"tags.{key}", value,
                              f"must be at most {TAG_VALUE_CHARS} characters", DOC_TAGS)
        elif not _tag_text(value):
            yield ConfigIssue(f"tags.{key}", value, f"must hold letters, digits, spaces and "
                              f"{TAG_PUNCTUATION} only", DOC_TAGS)


def _tag_text(text: str) -> bool:
    """Letters, numbers and space separators (Unicode categories L*, N*, Zs) and
    :data:`~trn_ultracluster.config.facts.TAG_PUNCTUATION`."""
    allowed = set(TAG_PUNCTUATION.replace(" ", ""))
    return all(ch in allowed or unicodedata.category(ch)[0] in "LN"
               or unicodedata.category(ch) == "Zs" for ch in text)
