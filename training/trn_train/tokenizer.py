"""Tokenizers: train a small one offline (``python -m trn_train train-tokenizer``) or load a
Hugging Face one (``prepare-data --tokenizer``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from trn_train.corpus import expand_inputs
from trn_train.errors import InputError


def train_tokenizer(
    inputs: Sequence[str],
    out_dir: str | os.PathLike[str],
    kind: str = "bpe",
    vocab_size: int = 2000,
) -> Path:
    """Train a small tokenizer on local text with the ``tokenizers`` library and save it.

    The result loads with ``transformers.AutoTokenizer.from_pretrained(out_dir)`` like any
    Hugging Face tokenizer (offline stand-in for e.g. the Llama 3 or BERT tokenizers).

    Args:
        inputs: text files, directories (searched recursively) or glob patterns.
        out_dir: directory to write ``tokenizer.json`` and ``tokenizer_config.json`` into.
        kind: ``"bpe"`` (byte-level BPE with ``<|endoftext|>``, Llama/GPT style) or
            ``"wordpiece"`` (BERT style, with ``[CLS] [SEP] [MASK] [PAD] [UNK]``).
        vocab_size: target vocabulary size (>= 300).

    Raises:
        InputError: bad ``kind`` or ``vocab_size``; DataError: no input files.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if kind not in ("bpe", "wordpiece"):
        raise InputError("--kind", kind, "'bpe' or 'wordpiece'")
    if vocab_size < 300:
        raise InputError("--vocab-size", vocab_size, "an integer >= 300")
    files = [str(p) for p in expand_inputs(inputs)]
    if kind == "bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>", "<pad>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train(files, trainer)
        fast = PreTrainedTokenizerFast(
            tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
            pad_token="<pad>",
        )
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
            show_progress=False,
        )
        tok.train(files, trainer)
        fast = PreTrainedTokenizerFast(
            tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
            sep_token="[SEP]", mask_token="[MASK]",
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out))
    return out


def load_tokenizer(name_or_path: str) -> Any:
    """Load a Hugging Face tokenizer (local directory, or hub name when online).

    Raises:
        InputError: it cannot be loaded; the message keeps the library's reason.
    """
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name_or_path)
    except Exception as e:  # noqa: BLE001 - many exception types; all mean "cannot load"
        raise InputError(
            "--tokenizer", name_or_path,
            "a local tokenizer directory or a Hugging Face tokenizer name reachable from here",
            hint=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
        ) from e
