"""Command line: ``python -m trn_train <command> --help``.

Commands:
    train-tokenizer  train a small BPE/WordPiece tokenizer on local text (offline use)
    prepare-data     tokenize + pack a corpus into verified shards (FSx in the cluster)
    train            data-parallel training (Llama CLM / BERT MLM), resumable
    nxd-config       write the NxD Training YAML + HF config for TP/PP recipes (llama-8b),
                     and optionally launch it
    recipes          list the recipes with their shapes, FLOPs/token and published throughput

Exit codes (one `error:` line on stderr, no traceback):
    0  done
    2  bad input: a flag, the prepared data, no usable checkpoint, or processes that disagree
       about the job (XLA runtime vs torchrun); argparse also exits 2 for unknown flags
    3  training diverged (non-finite loss, gradient norm or weights): no checkpoint of them
       was written, the last good one is kept
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

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


def _defaults(cls: type) -> dict[str, Any]:
    """Field name -> default of a dataclass (fields without one are left out)."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def _from_args(cls: type, args: argparse.Namespace, **converted: Any) -> Any:
    """``cls`` built from the parsed flags that name one of its fields: flags left out are
    absent from ``args`` (``default=argparse.SUPPRESS``), so the dataclass supplies the default."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in vars(args).items() if k in names}, **converted)


def _option(p: argparse.ArgumentParser, defaults: dict[str, Any], *flags: str, help: str = "",
            **kw: Any) -> None:
    """An optional flag whose default is the dataclass field's: the help text shows it and
    ``args`` only holds the flag when it was given."""
    dest = kw.setdefault("dest", flags[0].lstrip("-").replace("-", "_"))
    default = defaults[dest]
    if default is not None and kw.get("action") not in ("store_true", "store_false"):
        help = f"{help} (default: {default})" if help else f"default: {default}"
    p.add_argument(*flags, default=argparse.SUPPRESS, help=help or None, **kw)


def _add_train(sub: argparse._SubParsersAction) -> None:
    from trn_train.config import BACKENDS, DATA_PARALLEL, DEVICES, SWITCHES, TrainConfig
    from trn_ultracluster.contracts.recipes import RECIPES

    p = sub.add_parser("train", help="train or resume a data-parallel run",
                       description="Data-parallel training over all processes torchrun starts (one per "
                                   "NeuronCore), on the xla backend (Trn1) or the native one (Trn2/Trn3, CPU). "
                                   "Resumes from the newest complete checkpoint in "
                                   "--output-dir/checkpoints unless --resume none.")
    p.add_argument("--recipe", required=True, choices=sorted(RECIPES))
    p.add_argument("--data-dir", required=True, type=Path, help="output of prepare-data")
    p.add_argument("--output-dir", required=True, type=Path, help="checkpoints/ and tensorboard/ go here")
    p.add_argument("--steps", type=int, required=True, help="total optimizer steps of the run")
    d = _defaults(TrainConfig)

    def opt(*flags: str, help: str = "", **kw: Any) -> None:
        _option(p, d, *flags, help=help, **kw)

    opt("--scaling", choices=["strong", "weak"],
        help="strong: fixed --global-batch-size; weak: fixed --per-core-batch-size")
    opt("--global-batch-size", type=int, help="sequences per step, all cores (strong; default: the recipe's)")
    opt("--per-core-batch-size", type=int, help="sequences per step per core (weak; default: the recipe's micro batch)")
    opt("--micro-batch-size", type=int,
        help="sequences per forward/backward per core (default: the largest divisor of the per-core batch "
             "up to the recipe's)")
    opt("--seq-len", type=int, help="tokens per sequence, <= the prepared length (default: the recipe's, "
                                    "capped at the prepared length)")
    opt("--lr", type=float, help="peak learning rate, > 0 (default: the recipe's)")
    opt("--min-lr-ratio", type=float, help="cosine decay ends at lr x this")
    opt("--warmup-steps", type=int, help="linear warm-up, 0..--steps (default: the recipe's, at most steps/10)")
    opt("--weight-decay", type=float, help=">= 0")
    opt("--max-grad-norm", type=float, help=">= 0; 0 disables clipping")
    opt("--log-every", type=int, help="metrics every N steps")
    opt("--ckpt-every", type=int, help="checkpoint every N steps (0: at the end only)")
    opt("--keep-last", type=int, help="complete checkpoints to keep")
    opt("--seed", type=int, help="0..2**64-1")
    opt("--precision", choices=["auto", "bf16", "fp32"], help="auto: bf16 autocast on xla and neuron, fp32 on cpu")
    opt("--backend", choices=list(BACKENDS),
        help="xla: PyTorch/XLA (Trn1, torch-neuronx 2.9); native: plain PyTorch on the neuron device "
             "(TorchNeuron, Trn2/Trn3) or the CPU; auto: xla when torch_xla is importable and --device is not "
             "neuron/cpu, else native")
    opt("--device", choices=list(DEVICES),
        help="xla (xla backend); neuron or cpu (native backend); auto: the backend's, on native neuron when "
             "TorchNeuron sees a NeuronCore, else cpu")
    opt("--data-parallel", choices=list(DATA_PARALLEL),
        help="native backend: fsdp (FSDP2 fully_shard per transformer block: weights, gradients and AdamW "
             "state sharded; needed for llama-8b) or ddp (DistributedDataParallel); auto = fsdp")
    opt("--compile", choices=list(SWITCHES),
        help="native backend: torch.compile each transformer block (backend neuron on the neuron device, "
             "inductor on cpu); auto = on for neuron, off on cpu")
    opt("--activation-checkpointing", choices=list(SWITCHES),
        help="native backend: recompute each transformer block's activations in the backward pass "
             "instead of keeping them (memory for compute); auto = on for a recipe that needs model "
             "parallelism on Trn1 (llama-8b: docs/llama-8b.md), off otherwise")
    opt("--zero1", choices=list(SWITCHES),
        help="ZeRO-1 optimizer sharding (torch-xla): auto = on with the xla backend, off on native; 'on' is "
             "an error on native (use --data-parallel fsdp)")
    opt("--instance-type", help="catalog entry whose peak BF16 gives MFU")
    opt("--max-steps-this-run", "--steps-this-run", type=int,
        help="stop after this many steps (neuron_parallel_compile trial runs)")
    opt("--resume", help="'auto' (the newest verified checkpoint; damaged ones are skipped), 'none' or a "
                         "checkpoint directory")
    opt("--no-tensorboard", dest="tensorboard", action="store_false", help="write no TensorBoard event files")
    opt("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")
    opt("--no-verify-data", dest="verify_data", action="store_false",
        help="skip SHA-256 of shards (sizes still checked)")


def _add_nxd(sub: argparse._SubParsersAction) -> None:
    from trn_train.nxd import NxdRun
    from trn_ultracluster.contracts.recipes import RECIPES

    p = sub.add_parser("nxd-config", help="NxD Training config for TP/PP recipes (and launch)")
    d = _defaults(NxdRun)

    def opt(*flags: str, help: str = "", **kw: Any) -> None:
        _option(p, d, *flags, help=help, **kw)

    opt("--recipe", choices=sorted(RECIPES))
    opt("--nodes", type=int)
    opt("--instance-type")
    p.add_argument("--data-dir", required=True,
                   help="Hugging Face `datasets` directory (save_to_disk) with input_ids/labels")
    p.add_argument("--from-packed", type=Path,
                   help="first export this prepare-data directory into --data-dir (needs `datasets`)")
    p.add_argument("--out", required=True, type=Path, help="where the YAML and config.json go")
    opt("--steps", type=int)
    opt("--global-batch-size", type=int, help="default: the recipe's")
    opt("--seq-len", type=int, help="default: the recipe's")
    opt("--tp", type=int, help="tensor-parallel degree (default: the recipe's)")
    opt("--pp", type=int, help="pipeline-parallel degree (default: the recipe's)")
    opt("--compile-cache", help="shared Neuron compile cache")
    opt("--log-dir", help="exp_manager.explicit_log_dir (checkpoints, TensorBoard)")
    p.add_argument("--launch", action="store_true", help="exec torchrun on NxD Training after writing")
    p.add_argument("--compile-only", action="store_true", help="with --launch: run under neuron_parallel_compile")
    p.add_argument("--nxdt-examples", default="/opt/nxdt/examples",
                   help="directory holding NxD Training's training_orchestrator.py (default: %(default)s)")


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
    """CLI entry point; returns the exit status: 0 done, 2 bad input (flag, data, checkpoint,
    launch), 3 training diverged (:mod:`trn_train.errors`), each with a one-line ``error:``
    reason on stderr and no traceback."""
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except TrnTrainError as e:
        # one write per line: torchrun's processes share stderr, and print's separate write
        # of the newline let two processes' errors run into one line
        sys.stderr.write(f"error: {e}\n")
        sys.stderr.flush()
        return e.exit_code


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "train-tokenizer":
        from trn_train.tokenizer import train_tokenizer

        out = train_tokenizer(args.input, args.out, args.kind, args.vocab_size)
        print(json.dumps({"event": "tokenizer", "path": str(out)}))
        return 0
    if args.command == "prepare-data":
        from trn_train.prepare import prepare_data

        r = prepare_data(args.out, args.tokenizer, args.seq_len, inputs=args.input, hf_dataset=args.hf_dataset,
                         hf_split=args.hf_split, hf_text_column=args.hf_text_column, hf_config=args.hf_config,
                         task_format=args.format, shard_sequences=args.shard_sequences,
                         overwrite=args.overwrite, progress=not args.no_progress)
        print(json.dumps({"event": "prepared", "out": str(r.out_dir), "sequences": r.num_sequences,
                          "shards": r.num_shards, "seq_len": r.seq_len, "tokens": r.num_tokens,
                          "dropped_tokens": r.dropped_tokens}), flush=True)
        return 0
    if args.command == "train":
        from trn_train.config import TrainConfig
        from trn_train.train import run

        cfg = _from_args(TrainConfig, args)
        run(cfg)
        return 0
    if args.command == "nxd-config":
        from trn_train import nxd

        spec = _from_args(nxd.NxdRun, args)
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
        from trn_ultracluster.contracts.recipes import RECIPES

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
