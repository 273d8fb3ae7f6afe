"""Synthetic token sequences for train.py: no tokenizer, no data set download.

Each sequence counts from a random start by a random stride, modulo the vocabulary:
``start, start + stride, start + 2 * stride, ...``. A causal language model learns to continue
such a sequence after two tokens, so the loss falls within a few dozen steps.
"""

import torch


def counting_batch(batch_size, seq_len, vocab_size, generator, max_stride=4):
    """Token ids ``(batch_size, seq_len)`` (int64), drawn with ``generator``."""
    start = torch.randint(0, vocab_size, (batch_size, 1), generator=generator)
    stride = torch.randint(1, max_stride + 1, (batch_size, 1), generator=generator)
    return (start + stride * torch.arange(seq_len)) % vocab_size
