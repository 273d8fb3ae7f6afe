"""Training recipes: model shape + data/batch defaults + published throughput, by name.

A contract between the job CLI (which checks ``submit --recipe`` before anything is sent)
and the training program (which builds the model from it): standard library only, shipped
in the training image like the instance catalog.

Model shapes come from the public Hugging Face configs of the models they mimic (built here
from the config only; no weights are downloaded):

- ``llama-1b``: meta-llama/Llama-3.2-1B ``config.json`` (hidden 2048, 16 layers, 32 heads,
  8 KV heads, MLP 8192, vocab 128256, tied embeddings, rope_theta 500000).
- ``llama-8b``: meta-llama/Meta-Llama-3-8B ``config.json`` (hidden 4096, 32 layers, 32 heads,
  8 KV heads, MLP 14336, vocab 128256, untied, rope_theta 500000).
- ``bert-large``: google-bert/bert-large-uncased ``config.json`` (hidden 1024, 24 layers,
  16 heads, MLP 4096, vocab 30522); phase 1 pretraining uses sequence length 128.
- ``llama-tiny`` / ``bert-tiny``: test shapes; their vocabulary size is taken from the data.

Published throughput (per trn1.32xlarge node) is from the Neuron "Trn1/Trn1n Training
Performance" page, https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-training-performance.html
(CSV sources ``about-neuron/benchmarks/trn1/training_data_{encoder,decoder}.csv`` in
github.com/aws-neuron/aws-neuron-sdk).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RECIPES", "PublishedThroughput", "Recipe", "UnknownRecipeError", "get_recipe"]


class UnknownRecipeError(ValueError):
    """Raised by :func:`get_recipe` for a name that is not in :data:`RECIPES`."""

NEURON_TRN1_PERF_URL = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/"
    "trn1-training-performance.html"
)


@dataclass(frozen=True)
class PublishedThroughput:
    """A throughput figure Neuron published for this recipe's model on Trn1.

    Attributes:
        seq_per_s: sequences per second for the whole run (all ``nodes``).
        nodes: trn1.32xlarge nodes in the published run.
        seq_len: sequence length, tokens.
        topology: parallelism as published, e.g. ``"TP=32 DP=32 PP=1 ZeRO-1"``.
        neuron_version: Neuron SDK release of the measurement.
        source: URL of the page.
    """

    seq_per_s: float
    nodes: int
    seq_len: int
    topology: str
    neuron_version: str
    source: str = NEURON_TRN1_PERF_URL

    @property
    def tokens_per_s_per_node(self) -> float:
        """Tokens per second per node: ``seq_per_s * seq_len / nodes``."""
        return self.seq_per_s * self.seq_len / self.nodes


@dataclass(frozen=True)
class Recipe:
    """One named training recipe.

    Attributes:
        name: registry key, e.g. ``"llama-8b"``.
        task: ``"clm"`` (causal LM, next-token loss) or ``"mlm"`` (masked LM, BERT phase 1).
        model_type: ``"llama"`` (``LlamaForCausalLM``) or ``"bert"`` (``BertForMaskedLM``).
        model_config: keyword arguments of ``LlamaConfig`` / ``BertConfig``. ``vocab_size``
            absent means "take it from the prepared data's manifest".
        seq_len: default sequence length, tokens.
        micro_batch_size: default sequences per core per forward/backward.
        global_batch_size: default sequences per optimizer step over all cores.
        lr: peak learning rate. warmup_steps: linear warm-up steps.
        tensor_parallel / pipeline_parallel: degrees for the NxD Training adapter
            (1/1 means plain data parallel in :mod:`trn_train.train`).
        published: Neuron's published trn1 figure, if any.
    """

    name: str
    task: str
    model_type: str
    model_config: dict[str, Any]
    seq_len: int
    micro_batch_size: int
    global_batch_size: int
    lr: float
    warmup_steps: int
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    published: PublishedThroughput | None = None
    notes: str = ""

    @property
    def needs_model_parallel(self) -> bool:
        """True when the recipe is meant for NxD Training (TP or PP > 1), not plain DP."""
        return self.tensor_parallel * self.pipeline_parallel > 1


_LLAMA3_COMMON = {
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "attention_bias": False,
    "mlp_bias": False,
    "attention_dropout": 0.0,
    "initializer_range": 0.02,
}

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            name="llama-tiny",
            task="clm",
            model_type="llama",
            model_config={
                **_LLAMA3_COMMON,
                "hidden_size": 64,
                "intermediate_size": 176,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "max_position_embeddings": 512,
                "tie_word_embeddings": False,
                "rope_theta": 10000.0,
            },
            seq_len=64,
            micro_batch_size=4,
            global_batch_size=8,
            lr=3e-3,
            warmup_steps=5,
            notes="test shape; trains on CPU in seconds",
        ),
        Recipe(
            name="llama-1b",
            task="clm",
            model_type="llama",
            model_config={
                **_LLAMA3_COMMON,
                "vocab_size": 128256,
                "hidden_size": 2048,
                "intermediate_size": 8192,
                "num_hidden_layers": 16,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "max_position_embeddings": 8192,
                "tie_word_embeddings": True,
            },
            seq_len=4096,
            micro_batch_size=1,
            global_batch_size=256,
            lr=3e-4,
            warmup_steps=100,
            notes="data parallel + ZeRO-1 over all NeuronCores; no Neuron-published trn1 figure",
        ),
        Recipe(
            name="llama-8b",
            task="clm",
            model_type="llama",
            model_config={
                **_LLAMA3_COMMON,
                "vocab_size": 128256,
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "max_position_embeddings": 8192,
                "tie_word_embeddings": False,
            },
            seq_len=8192,
            micro_batch_size=1,
            global_batch_size=1024,
            lr=1.5e-4,
            warmup_steps=100,
            tensor_parallel=32,
            pipeline_parallel=1,
            published=PublishedThroughput(
                seq_per_s=47.95,
                nodes=32,
                seq_len=8192,
                topology="TP=32 DP=32 PP=1 ZeRO-1",
                neuron_version="2.24.0",
            ),
            notes="too large for data parallel alone: runs through NxD Training (TP=32)",
        ),
        Recipe(
            name="bert-tiny",
            task="mlm",
            model_type="bert",
            model_config={
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "intermediate_size": 128,
                "max_position_embeddings": 128,
                "type_vocab_size": 2,
            },
            seq_len=64,
            micro_batch_size=4,
            global_batch_size=8,
            lr=1e-3,
            warmup_steps=5,
            notes="test shape",
        ),
        Recipe(
            name="bert-large",
            task="mlm",
            model_type="bert",
            model_config={
                "vocab_size": 30522,
                "hidden_size": 1024,
                "num_hidden_layers": 24,
                "num_attention_heads": 16,
                "intermediate_size": 4096,
                "max_position_embeddings": 512,
                "type_vocab_size": 2,
            },
            seq_len=128,
            micro_batch_size=16,
            global_batch_size=16384,
            lr=6e-4,
            warmup_steps=2000,
            published=PublishedThroughput(
                seq_per_s=3836.4653,
                nodes=1,
                seq_len=128,
                topology="[32xNC(DP)]",
                neuron_version="2.27.0",
            ),
            notes="phase 1 (seq 128), masked LM only (the NSP head of BertForPreTraining is omitted)",
        ),
    )
}


def get_recipe(name: str) -> Recipe:
    """Return the recipe called ``name``.

    Raises:
        UnknownRecipeError: unknown name; the message lists the known recipes.
    """
    try:
        return RECIPES[name]
    except KeyError:
        raise UnknownRecipeError(f"--recipe must be one of {', '.join(sorted(RECIPES))}, "
                                 f"got: {name!r}") from None
