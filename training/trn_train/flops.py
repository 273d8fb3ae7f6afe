"""Model FLOPs per token and MFU.

Formula (PaLM, Chowdhery et al. 2022, appendix B "Compute usage and environmental impact",
https://arxiv.org/abs/2204.02311): the matmul FLOPs of one training token (forward plus
backward) are

    6 * N  +  12 * L * H * Q * T

where N is the number of parameters that take part in matrix multiplies, L layers, H
attention heads, Q head dimension and T the sequence length (the second term is the
attention score and value matmuls, QK^T and AV; causal masking is not subtracted, as in
PaLM and Megatron-LM's MFU). N excludes input embedding lookups (token, position and
token-type tables), which are gathers, and includes the output projection to the
vocabulary, which is a matmul (counted once even when tied to the input embedding).

MFU = achieved tokens/s x FLOPs per token / (cores x peak BF16 FLOP/s per core); the peak
per core comes from :mod:`trn_ultracluster.contracts.catalog`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from trn_train.errors import InputError

if TYPE_CHECKING:
    from trn_ultracluster.contracts.catalog import InstanceSpec


def _get(cfg: Mapping[str, Any] | Any, key: str, default: Any = None) -> Any:
    if isinstance(cfg, Mapping):
        return cfg.get(key, default)
    return getattr(cfg, key, default)


def llama_matmul_params(cfg: Mapping[str, Any] | Any) -> int:
    """Parameters of a Llama model that take part in matmuls (N of the PaLM formula).

    Per layer: q/o projections ``2*d*d``, k/v projections ``2*d*(kv_heads*head_dim)``, gated
    MLP ``3*d*ffn``, two RMSNorm weights ``2*d``; plus the final norm ``d`` and the LM head
    ``d*V``. Input embeddings are excluded.

    Args:
        cfg: a ``LlamaConfig`` or a mapping with its keys.
    """
    d = int(_get(cfg, "hidden_size"))
    layers = int(_get(cfg, "num_hidden_layers"))
    heads = int(_get(cfg, "num_attention_heads"))
    kv = int(_get(cfg, "num_key_value_heads", heads) or heads)
    ffn = int(_get(cfg, "intermediate_size"))
    vocab = int(_get(cfg, "vocab_size"))
    head_dim = int(_get(cfg, "head_dim", None) or d // heads)
    attn = 2 * d * heads * head_dim + 2 * d * kv * head_dim
    if _get(cfg, "attention_bias", False):
        attn += heads * head_dim + 2 * kv * head_dim + d
    mlp = 3 * d * ffn
    per_layer = attn + mlp + 2 * d
    return layers * per_layer + d + d * vocab


def llama_total_params(cfg: Mapping[str, Any] | Any) -> int:
    """All parameters of ``LlamaForCausalLM`` (tied embeddings counted once)."""
    d = int(_get(cfg, "hidden_size"))
    vocab = int(_get(cfg, "vocab_size"))
    n = llama_matmul_params(cfg)
    return n if _get(cfg, "tie_word_embeddings", False) else n + d * vocab


def bert_matmul_params(cfg: Mapping[str, Any] | Any) -> int:
    """Parameters of ``BertForMaskedLM`` that take part in matmuls (N of the PaLM formula).

    Per layer: QKV and output projections ``4*d*d + 4*d`` (biases), MLP ``2*d*ffn + ffn + d``,
    two LayerNorms ``4*d``. MLM head: transform ``d*d + d`` + LayerNorm ``2*d``, decoder
    ``d*V`` (tied to the word embeddings) + bias ``V``. Embedding LayerNorm ``2*d``.
    Word/position/token-type embedding lookups are excluded.
    """
    d = int(_get(cfg, "hidden_size"))
    layers = int(_get(cfg, "num_hidden_layers"))
    ffn = int(_get(cfg, "intermediate_size"))
    vocab = int(_get(cfg, "vocab_size"))
    per_layer = 4 * d * d + 4 * d + 2 * d * ffn + ffn + d + 4 * d
    head = d * d + d + 2 * d + d * vocab + vocab
    return layers * per_layer + head + 2 * d


def bert_total_params(cfg: Mapping[str, Any] | Any) -> int:
    """All parameters of ``BertForMaskedLM`` (no pooler; decoder tied to word embeddings)."""
    d = int(_get(cfg, "hidden_size"))
    pos = int(_get(cfg, "max_position_embeddings"))
    types = int(_get(cfg, "type_vocab_size", 2))
    # matmul params include d*V (the tied decoder) which is the word-embedding table itself
    return bert_matmul_params(cfg) + pos * d + types * d


def flops_per_token(model_type: str, cfg: Mapping[str, Any] | Any, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward): ``6*N + 12*L*H*Q*T`` (PaLM app. B).

    Args:
        model_type: ``"llama"`` or ``"bert"``.
        cfg: the model config (``LlamaConfig``/``BertConfig`` or a mapping of its keys).
        seq_len: T, tokens per sequence.

    Returns:
        FLOPs per token (a float; ~5.8e10 for Llama-3-8B at T=8192).

    Raises:
        InputError: unknown ``model_type`` or non-positive ``seq_len``.
    """
    if seq_len <= 0:
        raise InputError("seq_len", seq_len, "a positive number of tokens")
    if model_type == "llama":
        n = llama_matmul_params(cfg)
    elif model_type == "bert":
        n = bert_matmul_params(cfg)
    else:
        raise InputError("model_type", model_type, "'llama' or 'bert'")
    d = int(_get(cfg, "hidden_size"))
    layers = int(_get(cfg, "num_hidden_layers"))
    heads = int(_get(cfg, "num_attention_heads"))
    head_dim = int(_get(cfg, "head_dim", None) or d // heads)
    return 6.0 * n + 12.0 * layers * heads * head_dim * seq_len


def instance_spec(instance_type: str) -> "InstanceSpec":
    """The :mod:`trn_ultracluster.contracts.catalog` entry for ``--instance-type`` (cores, peak BF16).

    Raises:
        InputError: the catalog has no such instance type (the message lists those it has).
    """
    from trn_ultracluster.contracts.catalog import CATALOG, UnknownInstanceTypeError, get_instance

    try:
        return get_instance(instance_type)
    except UnknownInstanceTypeError:
        raise InputError("--instance-type", instance_type, "one of " + ", ".join(sorted(CATALOG))) from None


def mfu(tokens_per_s: float, flops_per_tok: float, cores: int, peak_tflops_per_core: float) -> float:
    """Model FLOPs utilization, a fraction in [0, 1] for any real run.

    Args:
        tokens_per_s: tokens per second over all ``cores``.
        flops_per_tok: :func:`flops_per_token`.
        cores: training processes (logical NeuronCores) the tokens/s were measured over.
        peak_tflops_per_core: dense BF16 peak of one core, TFLOPS (10**12 FLOP/s).
    """
    if cores <= 0 or peak_tflops_per_core <= 0:
        raise InputError("cores/peak_tflops_per_core", (cores, peak_tflops_per_core), "positive")
    return tokens_per_s * flops_per_tok / (cores * peak_tflops_per_core * 1e12)
