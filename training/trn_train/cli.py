"""Command line: ``python -m trn_train <command> --help``.

Commands:
    train-tokenizer  train a small BPE/WordPiece tokenizer on local text (offline use)
    prepare-data     tokenize + pack a corpus into verified shards (FSx in the cluster)
    train            data-parallel training (Llama CLM / BERT MLM), resumable
    nxd-config       write the NxD Training YAML + HF config for TP/PP recipes (llama-8b),
                     and optionally launch it
    recipes          list the recipes with their shapes, FLOPs/token and published throughput
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trn_train.errors import TrnTrainError


def _add_prepare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare-data", help="tokenize, pack and shard a corpus",
                       description="Tokenize text with a Hugging Face tokenizer, pack it into fixed-length "
                                   "sequences and write shards plus manifest.json (SHA-256 per shard).")
    src = p.add_argument_group("source (exactly one)")
    src.add_argument("--input", nargs="+", default=[], metavar="PATH",
                     help="text files, directories (recursive) or glob patterns; each file is one document")
    src.add_argument("--hf-dataset", help="Hugging Face dataset name (needs internet and `datasets`)")
    p.add_argument("--hf-config", help="dataset configuration name")
    p.add_argument("--hf-split", default="train")
    p.add_argument("--hf-text-column", default="text")
    p.add_argument("--tokenizer", required=True, help="tokenizer directory or Hugging Face name")
    p.add_argument("--out", required=True, type=Path, help="output directory (e.g. on FSx)")
    p.add_argument("--seq-len", type=int, required=True, help="tokens per packed sequence")
    p.add_argument("--format", default="clm", choices=["clm", "mlm"],
                   help="clm: docs joined by EOS (Llama); mlm: [CLS] ... [SEP] per sequence (BERT)")
    p.add_argument("--shard-sequences", type=int, default=4096, help="sequences per shard file")
    p.add_argument("--overwrite", action="store_true", help="replace prepared data already in --out")
    p.add_argument("--no-progress", action="store_true")


def _add_tokenizer(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train-tokenizer", help="train a small tokenizer on local text")
    p.add_argument("--input", nargs="+", required=True, metavar="PATH")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--kind", default="bpe", choices=["bpe", "wordpiece"])
    p.add_argument("--vocab-size", type=int, default=8000)


def _add_train(sub: argparse._SubParsersAction) -> None:
    from trn_train.recipes import RECIPES

    p = sub.add_parser("train", help="train or resume a data-parallel run",
                       description="Data-parallel training over all processes torchrun starts (one per "
                                   "NeuronCore). Resumes from the newest complete checkpoint in "
                                   "--output-dir/checkpoints unless --resume none.")
    p.add_argument("--recipe", required=True, choices=sorted(RECIPES))
    p.add_argument("--data-dir", required=True, type=Path, help="output of prepare-data")
    p.add_argument("--output-dir", required=True, type=Path, help="checkpoints/ and tensorboard/ go here")
    p.add_argument("--steps", type=int, required=True, help="total optimizer steps of the run")
    p.add_argument("--scaling", default="strong", choices=["strong", "weak"],
                   help="strong: fixed --global-batch-size; weak: fixed --per-core-batch-size")
    p.add_argument("--global-batch-size", type=int, help="sequences per step, all cores (strong)")
    p.add_argument("--per-core-batch-size", type=int, help="sequences per step per core (weak)")
    p.add_argument("--micro-batch-size", type=int, help="sequences per forward/backward per core")
    p.add_argument("--seq-len", type=int, help="tokens per sequence (<= the prepared length)")
    p.add_argument("--lr", type=float)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--warmup-steps", type=int)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="0 disables clipping")
    p.add_argument("--log-every", type=int, default=10, help="metrics every N steps")
    p.add_argument("--ckpt-every", type=int, default=0, help="checkpoint every N steps (0: at the end only)")
    p.add_argument("--keep-last", type=int, default=3, help="complete checkpoints to keep")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--precision", default="auto", choices=["auto", "bf16", "fp32"],
                   help="auto: bf16 autocast on XLA/Neuron, fp32 on CPU")
    p.add_argument("--device", default="auto", choices=["auto", "xla", "cpu"])
    p.add_argument("--zero1", default="auto", choices=["auto", "on", "off"],
                   help="ZeRO-1 optimizer sharding on XLA (auto: on)")
    p.add_argument("--instance-type", default="trn1.32xlarge", help="catalog entry whose peak BF16 gives MFU")
    p.add_argument("--max-steps-this-run", "--steps-this-run", dest="max_steps_this_run", type=int,
                   help="stop after this many steps (neuron_parallel_compile trial runs)")
    p.add_argument("--resume", default="auto", help="'auto', 'none' or a checkpoint directory")
    p.add_argument("--no-tensorboard", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-verify-data", action="store_true", help="skip SHA-256 of shards (sizes still checked)")


def _add_nxd(sub: argparse._SubParsersAction) -> None:
    from trn_train.recipes import RECIPES

    p = sub.add_parser("nxd-config", help="NxD Training config for TP/PP recipes (and launch)")
    p.add_argument("--recipe", default="llama-8b", choices=sorted(RECIPES))
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--instance-type", default="trn1.32xlarge")
    p.add_argument("--data-dir", required=True, type=Path,
                   help="Hugging Face `datasets` directory (save_to_disk) with input_ids/labels")
    p.add_argument("--from-packed", type=Path,
                   help="first export this prepare-data directory into --data-dir (needs `datasets`)")
    p.add_argument("--out", required=True, type=Path, help="where the YAML and config.json go")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--global-batch-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--tp", type=int, help="tensor-parallel degree (default: the recipe's)")
    p.add_argument("--pp", type=int, help="pipeline-parallel degree (default: the recipe's)")
    p.add_argument("--compile-cache", default="/fsx/neuron_cache", help="shared Neuron compile cache")
    p.add_argument("--log-dir", type=Path, help="exp_manager.explicit_log_dir (checkpoints, TensorBoard)")
    p.add_argument("--launch", action="store_true", help="exec torchrun on NxD Training after writing")
    p.add_argument("--compile-only", action="store_true", help="with --launch: run under neuron_parallel_compile")
    p.add_argument("--nxdt-examples", default="/opt/nxdt/examples",
                   help="directory holding NxD Training's training_orchestrator.py")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m trn_train`` argument parser."""
    parser = argparse.ArgumentParser(prog="python -m trn_train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_tokenizer(sub)
    _add_prepare(sub)
    _add_train(sub)
    _add_nxd(sub)
    sub.add_parser("recipes", help="list recipes")
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (2 for bad input, with a one-line reason)."""
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except TrnTrainError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "train-tokenizer":
        from trn_train.data import train_tokenizer

        out = train_tokenizer(args.input, args.out, args.kind, args.vocab_size)
        print(json.dumps({"event": "tokenizer", "path": str(out)}))
        return 0
    if args.command == "prepare-data":
        from trn_train.data import prepare_data

        r = prepare_data(args.out, args.tokenizer, args.seq_len, inputs=args.input, hf_dataset=args.hf_dataset,
                         hf_split=args.hf_split, hf_text_column=args.hf_text_column, hf_config=args.hf_config,
                         task_format=args.format, shard_sequences=args.shard_sequences,
                         overwrite=args.overwrite, progress=not args.no_progress)
        print(json.dumps({"event": "prepared", "out": str(r.out_dir), "sequences": r.num_sequences,
                          "shards": r.num_shards, "seq_len": r.seq_len, "tokens": r.num_tokens,
                          "dropped_tokens": r.dropped_tokens}), flush=True)
        return 0
    if args.command == "train":
        from trn_train.train import TrainConfig, run

        cfg = TrainConfig(
            recipe=args.recipe, data_dir=args.data_dir, output_dir=args.output_dir, steps=args.steps,
            scaling=args.scaling, global_batch_size=args.global_batch_size,
            per_core_batch_size=args.per_core_batch_size, micro_batch_size=args.micro_batch_size,
            seq_len=args.seq_len, lr=args.lr, min_lr_ratio=args.min_lr_ratio, warmup_steps=args.warmup_steps,
            weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm, log_every=args.log_every,
            ckpt_every=args.ckpt_every, keep_last=args.keep_last, seed=args.seed, precision=args.precision,
            device=args.device, zero1=args.zero1, instance_type=args.instance_type,
            max_steps_this_run=args.max_steps_this_run, resume=args.resume,
            tensorboard=not args.no_tensorboard, progress=not args.no_progress,
            verify_data=not args.no_verify_data,
        )
        run(cfg)
        return 0
    if args.command == "nxd-config":
        from trn_train import nxd

        spec = nxd.NxdRun(recipe=args.recipe, nodes=args.nodes, instance_type=args.instance_type,
                          data_dir=str(args.data_dir), steps=args.steps, global_batch_size=args.global_batch_size,
                          seq_len=args.seq_len, tp=args.tp, pp=args.pp, compile_cache=args.compile_cache,
                          log_dir=str(args.log_dir) if args.log_dir else None)
        written = nxd.write_config(spec, args.out)  # validates before any export
        if args.from_packed:
            n = nxd.export_packed_to_hf(args.from_packed, args.data_dir)
            print(json.dumps({"event": "nxd-data", "sequences": n, "path": str(args.data_dir)}), flush=True)
        print(json.dumps({"event": "nxd-config", **{k: str(v) for k, v in written.items()}}), flush=True)
        if args.launch:
            return nxd.launch(written["yaml"], spec, args.nxdt_examples, compile_only=args.compile_only)
        return 0
    if args.command == "recipes":
        from trn_train.flops import flops_per_token
        from trn_train.recipes import RECIPES

        for r in RECIPES.values():
            row = {"recipe": r.name, "task": r.task, "seq_len": r.seq_len, "tp": r.tensor_parallel,
                   "pp": r.pipeline_parallel, "notes": r.notes}
            if "vocab_size" in r.model_config:
                row["flops_per_token"] = flops_per_token(r.model_type, r.model_config, r.seq_len)
            if r.published:
                row["published_tokens_per_s_per_node"] = round(r.published.tokens_per_s_per_node, 1)
                row["source"] = r.published.source
            print(json.dumps(row))
        return 0
    raise AssertionError(args.command)
