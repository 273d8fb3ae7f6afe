"""Rules of the tags put on every resource."""

from __future__ import annotations

import pytest

from tests.config import check_one_error

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('reserved tag key', {'trn-ultracluster': {'tags': {'aws:owner': 'me'}}},
     "error: tags.aws:owner = 'me': must have a key of 1-128 characters that does not start with 'aws:' (see https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html)"),
    ('reserved tag key through -c', {'tags.AWS:cost': 'me'},
     "error: tags.AWS:cost = 'me': must have a key of 1-128 characters that does not start with 'aws:' (see https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html)"),
    ('tag value CloudFormation rejects', {'tags.team': 'a;b'},
     "error: tags.team = 'a;b': must hold letters, digits, spaces and + - = . _ : / @ only (see https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)
