"""Stub commands and a fake node for ``node_scripts/lustre_efa.sh`` and the node scripts that
run it: every orchestrator's tests install these on PATH beside their own stubs.

- ``lnetctl``: LNet's state in ``$STUB_LNET`` (:data:`STATE_FILE`: configured, NIs per net
  with their ``send_count``/``recv_count``, discovery, UDSP rules); ``net show [-v] [--net NET]``
  prints the YAML layout of ``lnetctl net show`` (FSx for Lustre user guide, "Configuring EFA
  clients"; EKS user guide fsx-csi-tuning-efa's example output). ``STUB_LNET_DOWN=1``: the
  EFA NIs come up ``down``; ``STUB_LNET_FAIL=<words>``: a command starting with them fails.
- ``dd``: writes (``of=`` a file) create a sparse file of ``count`` MiB; every read or write
  of a file bumps the LNet counters as the route says (``send_count`` for a write,
  ``recv_count`` for a read): ``STUB_ROUTE=efa`` (default) one message per MiB on the EFA
  NIs (spread over them) and one on tcp (metadata); ``STUB_ROUTE=tcp`` every MiB on tcp,
  none on EFA; ``STUB_ROUTE=few``: EFA gets an eighth of the MiB (fewer than MiB/2), tcp
  only the metadata message (EFA more than tcp); ``STUB_ROUTE=even``: EFA gets half of them
  (MiB/2) and tcp as many plus one (EFA not more than tcp). ``STUB_EFA_DROP=1``: every
  message the EFA NIs receive is also counted in their ``drop_count``. Without an EFA NI,
  EFA traffic goes to tcp. :func:`traffic_command` adds other traffic (a stub ``sleep`` runs
  it while the check waits for the probe).
- ``timeout`` records its arguments and runs the command (no time limit);
  ``STUB_TIMEOUT=<command>``: that command "times out" (exit 124, not run).
- ``modprobe`` (``STUB_MODPROBE_FAIL=<module>``), ``modinfo`` (``kefalnd`` missing with
  ``STUB_NO_KEFALND=1`` until ``dnf install`` ran), ``uname -r`` (``STUB_KERNEL``), ``ip
  route show default`` (``dev ens5``), ``systemctl``, ``dnf``, ``sleep``, ``curl`` (the
  instance metadata service: fails, unless ``STUB_IMDS_AFTER=N``, after whose first N calls
  it answers a token and ``STUB_IMDS_ID``, default ``i-0fedcba9876543210``) and ``aws``
  (``STUB_CW_FAIL=1``: put-metric-data fails; ``s3 cp s3://BUCKET/KEY DEST`` copies
  ``$STUB_S3/BUCKET/KEY``, or fails as a missing object) record their arguments in ``$STUB_LOG``.
  ``systemctl is-failed`` succeeds (the unit failed) only with ``STUB_UNIT_FAILED=1``;
  ``STUB_SYSTEMCTL_FAIL=<words>``: a systemctl command starting with them fails.

:func:`fake_node` makes the fake root: ``/etc/os-release`` and ``/sys/class/infiniband``
with EFA devices whose ``device/driver`` links to ``.../drivers/efa`` (plus a non-EFA
device).
"""

from __future__ import annotations

import marshal
import stat
import sys
from pathlib import Path

STATE_FILE = "state"
"""The stub LNet's state in ``$STUB_LNET``, in :mod:`marshal`'s format: the stubs load it
without importing ``json`` (and ``re``), half of a stub's start; a lifecycle run calls
``lnetctl`` a dozen times."""
LNETCTL = r'''#!PYTHON
import marshal, os, sys
args = sys.argv[1:]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("lnetctl " + " ".join(args) + "\n")
path = os.path.join(os.environ["STUB_LNET"], "@STATE_FILE@")
state = marshal.load(open(path, "rb")) if os.path.exists(path) else {
    "configured": False, "nets": {}, "discovery": 0, "udsp": []}
fail = os.environ.get("STUB_LNET_FAIL", "")
if fail and " ".join(args).startswith(fail):
    sys.exit("add:\n    - net:\n          errno: -22\n          descr: \"cannot add network: Invalid argument\"")
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
def save():
    marshal.dump(state, open(path, "wb"))
if args[:2] == ["lnet", "configure"]:
    state["configured"] = True
elif not state["configured"]:
    sys.exit("show:\n    - net:\n          errno: -100\n          descr: \"LNet unconfigured\"")
elif args[:2] == ["net", "show"]:
    verbose = "-v" in args
    nets = [opt("--net")] if "--net" in args else sorted(state["nets"])
    if "--net" in args and not state["nets"].get(opt("--net")):
        sys.exit(f"show:\n    - net:\n          errno: -2\n          descr: \"cannot get networks: No such file or directory\"")
    print("net:")
    for net in nets:
        print(f"    - net type: {net}\n      local NI(s):")
        for n, ni in enumerate(state["nets"].get(net, [])):
            up = "down" if net == "efa" and os.environ.get("STUB_LNET_DOWN") else "up"
            print(f"        - nid: 10.0.{n}.20@{net}\n          status: {up}\n"
                  f"          interfaces:\n              0: {ni['if']}")
            if verbose:
                print(f"          statistics:\n              send_count: {ni['send']}\n"
                      f"              recv_count: {ni['recv']}\n"
                      f"              drop_count: {ni.get('drop', 0)}")
elif args[:2] == ["net", "add"]:
    net, interface = opt("--net"), opt("--if")
    state["nets"].setdefault(net, []).append({"if": interface, "send": 0, "recv": 0})
    save()
elif args[:2] == ["net", "del"]:
    net, interface = opt("--net"), opt("--if")
    if interface is None:
        state["nets"].pop(net, None)
    else:
        state["nets"][net] = [ni for ni in state["nets"].get(net, []) if ni["if"] != interface]
    save()
elif args[:2] == ["set", "discovery"]:
    state["discovery"] = int(args[2])
elif args[:2] == ["udsp", "add"]:
    state["udsp"].append({"src": opt("--src"), "priority": int(opt("--priority"))})
elif args[:2] == ["udsp", "show"]:
    print("udsp:")
    for n, rule in enumerate(state["udsp"]):
        print(f"    - idx: {n}\n      src: {rule['src']}\n      dst: NA\n      rte: NA\n"
              f"      action:\n          priority: {rule['priority']}")
save()
'''
DD = r'''#!PYTHON
import marshal, os, sys
args = dict(a.split("=", 1) for a in sys.argv[1:])
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("dd " + " ".join(sys.argv[1:]) + "\n")
path = os.path.join(os.environ["STUB_LNET"], "@STATE_FILE@")
state = marshal.load(open(path, "rb"))
mib = 1 << 20
if args["of"] != "/dev/null":
    size = int(args["count"])
    with open(args["of"], "wb") as f:
        f.truncate(size * mib)
    direction = "send"
else:
    size = os.path.getsize(args["if"]) // mib
    direction = "recv"
efa, tcp = state["nets"].get("efa", []), state["nets"].get("tcp", [])
route = os.environ.get("STUB_ROUTE", "efa")
on_efa = {"efa": size, "few": size // 8, "even": size // 2}.get(route, 0)
if on_efa and efa:
    for n in range(on_efa):
        efa[n % len(efa)][direction] += 1
        if direction == "recv" and os.environ.get("STUB_EFA_DROP"):
            efa[n % len(efa)]["drop"] = efa[n % len(efa)].get("drop", 0) + 1
    tcp[0][direction] += 1 if route == "few" else size - on_efa + 1
else:
    tcp[0][direction] += size + 1
marshal.dump(state, open(path, "wb"))
'''
SH = r'''#!/bin/bash
name="${0##*/}"  # not $(basename): a fork and an exec per call
echo "$name $*" >> "$STUB_LOG"
if [[ "$name" == timeout ]]; then
  while [[ "$1" == -* ]]; do
    case "$1" in -k|-s|--kill-after|--signal) shift 2 ;; *) shift ;; esac
  done
  shift  # the duration
  [[ -n "${STUB_TIMEOUT:-}" && "$1" == "$STUB_TIMEOUT" ]] && exit 124
  exec "$@"
fi
case "$name" in
  modprobe) [[ "$1" == "${STUB_MODPROBE_FAIL:-none}" ]] && { echo "modprobe: FATAL: Module $1 not found" >&2; exit 1; } ;;
  modinfo)
    if [[ "$1" == kefalnd && -n "${STUB_NO_KEFALND:-}" && ! -f "$STUB_LNET/dnf-installed" ]]; then
      echo "modinfo: ERROR: Module kefalnd not found." >&2; exit 1
    fi
    echo "filename: /lib/modules/$1.ko" ;;
  uname) echo "${STUB_KERNEL:-6.8.0-1017-aws}" ;;
  ip) echo "default via 10.0.0.1 dev ens5 proto dhcp src 10.0.0.20 metric 512" ;;
  dnf) touch "$STUB_LNET/dnf-installed" ;;
  systemctl)
    [[ "$1" != is-failed || -n "${STUB_UNIT_FAILED:-}" ]] || exit 1
    if [[ -n "${STUB_SYSTEMCTL_FAIL:-}" && "$*" == "$STUB_SYSTEMCTL_FAIL"* ]]; then
      echo "Failed to $1 unit: Access denied" >&2; exit 1
    fi ;;
  curl)
    n=$(( $(cat "$STUB_LNET/curl-calls" 2>/dev/null || echo 0) + 1 ))
    echo "$n" > "$STUB_LNET/curl-calls"
    [[ -n "${STUB_IMDS_AFTER:-}" ]] && (( n > STUB_IMDS_AFTER )) || exit 7
    if [[ " $* " == *" PUT "* ]]; then echo token; else echo "${STUB_IMDS_ID:-i-0fedcba9876543210}"; fi ;;
  aws)
    if [[ "$1 $2" == "cloudwatch put-metric-data" && -n "${STUB_CW_FAIL:-}" ]]; then
      echo "An error occurred (AccessDenied) when calling the PutMetricData operation" >&2; exit 254
    fi
    if [[ "$1 $2" == "s3 cp" ]]; then  # ... SRC DEST: SRC s3://BUCKET/KEY is $STUB_S3/BUCKET/KEY
      src="${*: -2:1}"
      cp "${STUB_S3:-/nonexistent}/${src#s3://}" "${*: -1}" 2> /dev/null || {
        echo "fatal error: An error occurred (404) when calling the HeadObject operation: Not Found" >&2; exit 1; }
    fi ;;
esac
exit 0
'''
SH_STUBS = ("modprobe", "modinfo", "uname", "ip", "systemctl", "dnf", "sleep", "curl", "timeout")
"""Bash stubs; ``aws`` is added by :func:`install_stubs` unless the caller has its own."""

UBUNTU_22 = 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\n'
UBUNTU_24 = 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="24.04"\nVERSION_CODENAME=noble\n'
AL2023 = 'NAME="Amazon Linux"\nID="amzn"\nVERSION_ID="2023"\n'
EFA_DEVICES = tuple(f"rdmap{n}s0" for n in (16, 32, 48, 64, 80, 96, 112, 128))
"""The eight EFA devices of a trn1.32xlarge (names as /sys/class/infiniband gives them)."""


def write_stub(path: Path, text: str) -> None:
    """Write an executable stub: ``#!PYTHON`` becomes this interpreter without ``site`` (the
    stubs use only the standard library; a start without it is 3 times quicker), and
    ``@STATE_FILE@`` :data:`STATE_FILE`."""
    path.write_text(text.replace("#!PYTHON", f"#!{sys.executable} -S")
                    .replace("@STATE_FILE@", STATE_FILE))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def write_python3(bin_dir: Path) -> None:
    """The node's ``python3`` in ``bin_dir``: ``tests.conftest.SYSTEM_PYTHON3`` without the
    ``site`` module (``-S``). The node scripts' Python helpers (lcs.py, pool_env.py,
    slurm_teams.py, neuron_metrics.py) import only the standard library, which this proves,
    and a start without ``site`` is several times quicker here (16 ms, against 43 ms for the
    venv's and 80 ms for the machine's, whose site-packages has a ``.pth`` importing certifi):
    a lifecycle run calls it about thirty times."""
    from tests.conftest import SYSTEM_PYTHON3

    bin_dir.mkdir(parents=True, exist_ok=True)
    write_stub(bin_dir / "python3", f'#!/bin/sh\nexec {SYSTEM_PYTHON3} -S "$@"\n')


def install_stubs(bin_dir: Path, *, aws: bool = True) -> None:
    """Put the stubs in ``bin_dir`` (``aws`` too unless ``aws=False``), and the node's
    ``python3`` (:func:`write_python3`)."""
    write_python3(bin_dir)
    write_stub(bin_dir / "lnetctl", LNETCTL)
    write_stub(bin_dir / "dd", DD)
    for name in SH_STUBS + (("aws",) if aws else ()):
        write_stub(bin_dir / name, SH)


def fake_node(root: Path, *, os_release: str = UBUNTU_22,
              devices: tuple[str, ...] = EFA_DEVICES) -> None:
    """The OS release and the InfiniBand devices of a node under ``root``."""
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc/os-release").write_text(os_release)
    drivers = root / "sys/bus/pci/drivers"
    for driver in ("efa", "mlx5_core"):
        (drivers / driver).mkdir(parents=True, exist_ok=True)
    ib = root / "sys/class/infiniband"
    ib.mkdir(parents=True, exist_ok=True)
    for name, driver in [*((d, "efa") for d in devices), ("mlx5_0", "mlx5_core")]:
        (ib / name / "device").mkdir(parents=True)
        (ib / name / "device/driver").symlink_to(drivers / driver)


def stub_env(bin_dir: Path, lnet_dir: Path, log: Path, **extra: str) -> dict[str, str]:
    """The environment variables of the stubs (PATH first)."""
    import os

    lnet_dir.mkdir(parents=True, exist_ok=True)
    log.touch()
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log),
            "STUB_LNET": str(lnet_dir), "TRN_NI_WAIT_S": "0", "TRN_INSTANCE_ID":
            "i-0123456789abcdef0", "TRN_NODE_NAME": "node-1", **extra}


def traffic_command(lnet_dir: Path, net: str, messages: int) -> str:
    """A shell command that adds ``messages`` sent and ``messages`` received on the first NI
    of ``net`` in the stub's LNet state: traffic that is not the check's (other jobs,
    metadata), e.g. in a ``sleep`` stub while the check waits for another node's probe."""
    code = ("import marshal, sys; p = sys.argv[1]; s = marshal.load(open(p, 'rb')); "
            f"ni = s['nets']['{net}'][0]; ni['send'] += {messages}; ni['recv'] += {messages}; "
            "marshal.dump(s, open(p, 'wb'))")
    return f'{sys.executable} -S -c "{code}" {lnet_dir / STATE_FILE}'


def lnet_state(lnet_dir: Path) -> dict:
    """The stub's LNet state."""
    path = lnet_dir / STATE_FILE
    return marshal.loads(path.read_bytes()) if path.exists() else {}


def calls(log: Path, name: str) -> list[str]:
    """The recorded calls of one command."""
    return [ln for ln in log.read_text().splitlines() if ln.split(" ", 1)[0] == name]
