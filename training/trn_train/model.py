"""Build Hugging Face models from recipe configs (no weight downloads) and make batches."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trn_train.errors import InputError
from trn_ultracluster.contracts.recipes import Recipe


def model_config(recipe: Recipe, data_vocab_size: int, special_tokens: dict[str, int]) -> Any:
    """The ``LlamaConfig`` / ``BertConfig`` of ``recipe`` for data with ``data_vocab_size`` ids.

    Recipes without ``vocab_size`` (test shapes) take the data's; fixed-vocabulary recipes
    must cover it.

    Raises:
        InputError: the data's vocabulary is larger than the model's.
    """
    from transformers import BertConfig, LlamaConfig

    kw = dict(recipe.model_config)
    vocab = kw.get("vocab_size")
    if vocab is None:
        kw["vocab_size"] = data_vocab_size
    elif data_vocab_size > vocab:
        raise InputError("tokenizer vocabulary", data_vocab_size,
                          f"at most the {recipe.name} model's vocab_size {vocab}",
                          hint="prepare the data with the model's tokenizer")
    if recipe.model_type == "llama":
        for k in ("bos", "eos", "pad"):
            if k in special_tokens:
                kw.setdefault(f"{k}_token_id", special_tokens[k])
        return LlamaConfig(**kw)
    if recipe.model_type == "bert":
        if "pad" in special_tokens:
            kw.setdefault("pad_token_id", special_tokens["pad"])
        return BertConfig(**kw)
    raise InputError("recipe.model_type", recipe.model_type, "'llama' or 'bert'")


ATTENTION = ("eager", "sdpa")
"""Hugging Face attention implementations :func:`build_model` uses."""


def attention_for(device_type: str) -> str:
    """The attention of the model on ``device_type``: ``sdpa`` on ``neuron`` (a long sequence
    needs attention that does not keep the sequence x sequence scores, docs/llama-8b.md),
    ``eager`` on ``cpu`` and ``xla`` (identical maths on both, no kernel choice)."""
    return "sdpa" if device_type == "neuron" else "eager"


def build_model(recipe: Recipe, cfg: Any, seed: int, device: str = "cpu",
                attention: str = "eager", activation_checkpointing: bool = False) -> torch.nn.Module:
    """Instantiate the model with weights initialised from ``seed`` (same on every rank).

    Args:
        device: ``"cpu"``, or ``"meta"`` for a model without memory or values (an FSDP2 rank
            that receives its shards from rank 0).
        attention: ``"eager"`` (identical maths on CPU and XLA, no kernel choice) or
            ``"sdpa"`` (``torch.nn.functional.scaled_dot_product_attention``, which need not
            keep the sequence x sequence scores: what a long sequence needs on the ``neuron``
            device, docs/llama-8b.md).
        activation_checkpointing: recompute each transformer block in the backward pass
            (Hugging Face ``activation_checkpointing_enable``, transformers 5, with PyTorch's non-reentrant
            ``torch.utils.checkpoint``, which works under FSDP2: the block's all-gather runs
            again for the recompute).

    Raises:
        ValueError: an unknown ``attention``.
    """
    from transformers import BertForMaskedLM, LlamaForCausalLM

    if attention not in ATTENTION:
        raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
    torch.manual_seed(seed)
    cls = LlamaForCausalLM if recipe.model_type == "llama" else BertForMaskedLM
    cfg._attn_implementation = attention
    with torch.device(device):
        model = cls(cfg)
    if activation_checkpointing:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    return model


def transformer_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's transformer blocks, the units FSDP2 shards and ``--compile`` compiles:
    ``LlamaDecoderLayer`` (``model.model.layers``) or ``BertLayer`` (``model.bert.encoder.layer``).

    Raises:
        TypeError: a model other than ``LlamaForCausalLM`` / ``BertForMaskedLM`` (a bug).
    """
    name = type(model).__name__
    if name == "LlamaForCausalLM":
        return list(model.model.layers)
    if name == "BertForMaskedLM":
        return list(model.bert.encoder.layer)
    raise TypeError(f"no transformer blocks known for {name}")


def mlm_mask(tokens: np.ndarray, sample_ids: np.ndarray, step: int, seed: int,
             special: dict[str, int], vocab_size: int, prob: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """BERT masking (Devlin et al. 2019, §3.1): choose ``prob`` of non-special tokens; of those
    80% become ``[MASK]``, 10% a random token, 10% stay. Labels are ``-100`` elsewhere.

    The random draw of each sequence depends only on (seed, step, position of the sequence
    in the global batch), so every world size masks the same global batch the same way.

    Args:
        tokens: ``(B, T)`` int64 ids. sample_ids: ``(B,)`` positions in the global batch.

    Returns:
        ``(input_ids, labels)``, both ``(B, T)`` int64.
    """
    inputs = tokens.copy()
    labels = np.full_like(tokens, -100)
    specials = np.array(sorted({special[k] for k in ("cls", "sep", "pad") if k in special}), dtype=np.int64)
    for b in range(tokens.shape[0]):
        rng = np.random.default_rng([seed, 7, step, int(sample_ids[b])])
        u = rng.random(tokens.shape[1])
        kind = rng.random(tokens.shape[1])
        rand_tok = rng.integers(0, vocab_size, tokens.shape[1])
        chosen = (u < prob) & ~np.isin(tokens[b], specials)
        labels[b, chosen] = tokens[b, chosen]
        inputs[b, chosen & (kind < 0.8)] = special["mask"]
        swap = chosen & (kind >= 0.8) & (kind < 0.9)
        inputs[b, swap] = rand_tok[swap]
    return inputs, labels
