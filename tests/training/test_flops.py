"""FLOPs per token and MFU against hand-computed values (PaLM appendix B formula)."""

from __future__ import annotations

import pytest

from trn_train.errors import InputError
from trn_train.flops import (bert_total_params, flops_per_token, llama_matmul_params,
                             llama_total_params, mfu)
from trn_ultracluster.contracts.recipes import RECIPES, get_recipe


def test_llama3_8b_flops_per_token_matches_hand_computation():
    """Llama-3-8B (hidden 4096, 32 layers, 32 heads of 128, 8 KV heads, MLP 14336,
    vocab 128256, untied) at T = 8192, by hand:

    per layer: q,o 2*4096*4096 = 33,554,432; k,v 2*4096*1024 = 8,388,608;
               MLP 3*4096*14336 = 176,160,768; 2 norms 8,192   -> 218,112,000
    N = 32 * 218,112,000 + 4,096 (final norm) + 4096*128256 (LM head) = 7,504,924,672
    6N = 45,029,548,032
    attention 12*L*H*Q*T = 12*32*32*128*8192 = 12,884,901,888
    total = 57,914,449,920 FLOPs/token  (Chowdhery et al. 2022, PaLM, appendix B)
    """
    cfg = get_recipe("llama-8b").model_config
    assert llama_matmul_params(cfg) == 7_504_924_672
    assert flops_per_token("llama", cfg, 8192) == 57_914_449_920
    # with the 525,336,576-parameter input embedding: the published "8.03B" of Llama 3 8B
    assert llama_total_params(cfg) == 8_030_261_248


def test_published_llama8b_rate_gives_the_mfu_neuron_reports():
    """47.95 seq/s on 32 trn1.32xlarge at T=8192 (Neuron trn1 training performance page)
    -> 12,275.2 tokens/s/node; x 57.914e9 FLOPs/token = 7.109e14 FLOP/s per node;
    peak per node 16 chips x 190 TFLOPS = 3,040 TFLOPS -> MFU 0.2339 (Neuron benchmark data: ~20-25%)."""
    from trn_ultracluster.contracts.catalog import get_instance

    spec = get_instance("trn1.32xlarge")
    pub = get_recipe("llama-8b").published
    assert pub.tokens_per_s_per_node == pytest.approx(12_275.2)
    fpt = flops_per_token("llama", get_recipe("llama-8b").model_config, 8192)
    value = mfu(pub.tokens_per_s_per_node, fpt, spec.logical_neuron_cores, spec.peak_bf16_tflops_per_logical_core)
    assert value == pytest.approx(0.2339, abs=5e-4)


@pytest.mark.parametrize("name", ["llama-tiny", "bert-tiny"])
def test_param_formulas_match_the_real_models(name):
    from trn_train.model import build_model, model_config

    recipe = RECIPES[name]
    special = {"pad": 1, "eos": 0, "cls": 2, "sep": 3, "mask": 4}
    cfg = model_config(recipe, 500, special)
    model = build_model(recipe, cfg, seed=0)
    real = sum(p.numel() for p in model.parameters())
    expected = llama_total_params(cfg) if recipe.model_type == "llama" else bert_total_params(cfg)
    assert real == expected


def test_tied_llama_counts_head_once():
    """Llama-3.2-1B (hidden 2048, 16 layers, 32 heads of 64, 8 KV heads, MLP 8192, vocab
    128256, tied embeddings), by hand:

    embedding (= tied LM head) 128256*2048                       =   262,668,288
    per layer: q,o 2*2048*2048 = 8,388,608; k,v 2*2048*(8*64) = 2,097,152;
               MLP 3*2048*8192 = 50,331,648; 2 norms 2*2048 = 4,096  -> 60,821,504
    16 layers                                                    =   973,144,064
    final norm                                                   =         2,048
    total                                                        = 1,235,814,400  (HF model card: "1.23B")
    """
    cfg = dict(get_recipe("llama-1b").model_config)
    assert llama_total_params(cfg) == 1_235_814_400
    assert llama_matmul_params(cfg) == 1_235_814_400  # the tied head is the embedding: counted once


def test_bad_inputs_are_named():
    with pytest.raises(InputError, match="seq_len"):
        flops_per_token("llama", get_recipe("llama-8b").model_config, 0)
    with pytest.raises(InputError, match="model_type"):
        flops_per_token("gpt", get_recipe("llama-8b").model_config, 8)
    with pytest.raises(InputError, match="cores"):
        mfu(1.0, 1.0, 0, 95.0)


def test_one_trainium2_chip_peaks_at_667_tflops_over_its_four_processes():
    """trn2.3xlarge (--instance-type): 4 logical cores at LNC 2 share the chip's 667 BF16
    TFLOPS (Neuron Trainium2 page), so the chip's peak rate of tokens is MFU 1."""
    from trn_train.flops import instance_spec

    spec = instance_spec("trn2.3xlarge")
    fpt = flops_per_token("llama", get_recipe("llama-8b").model_config, 8192)
    peak_tokens_per_s = 667e12 / fpt
    assert mfu(peak_tokens_per_s, fpt, spec.logical_neuron_cores,
               spec.peak_bf16_tflops_per_logical_core) == pytest.approx(1.0)
    assert spec.logical_neuron_cores == 4
