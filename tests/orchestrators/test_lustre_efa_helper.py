"""``node_scripts/lustre_efa.py``, what ``lustre_efa.sh`` decides, function by function: the
client OS rule, the EFA devices and the ones LNet binds, the parsing of ``lnetctl`` and
``/proc/mounts``, the LNet steps (and the refusal under a mount), the check's verdict, the
two units, what a failure means in each mode, and the command line the script calls (also
under Python 3.9, Amazon Linux 2023's ``python3``). The script's own tests
(``test_lustre_efa.py``) run it end to end."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.helpers import python39
from tests.orchestrators.lustre_efa_stubs import AL2023, EFA_DEVICES, UBUNTU_22, fake_node
from trn_ultracluster.orchestrators.nodes import LUSTRE_EFA_HELPER, NODE_SCRIPTS

sys.path.insert(0, str(NODE_SCRIPTS))
import lustre_efa as helper  # noqa: E402

HELPER = NODE_SCRIPTS / LUSTRE_EFA_HELPER
ROUTE = "default via 10.0.0.1 dev ens5 proto dhcp src 10.0.0.20 metric 512\n"
EFA_SHOW = """net:
    - net type: efa
      local NI(s):
        - nid: 10.0.0.20@efa
          status: up
          interfaces:
              0: rdmap16s0
          statistics:
              send_count: 7
              recv_count: 70
              drop_count: 2
        - nid: 10.0.1.20@efa
          status: down
          interfaces:
              0: rdmap128s0
          statistics:
              send_count: 3
              recv_count: 30
              drop_count: 0
"""
"""``lnetctl net show -v --net efa`` with two NIs (the stubs' layout, the EKS guide's example)."""


# --- the client OS --------------------------------------------------------------------------

@pytest.mark.parametrize("release, kernel, problem", [
    (AL2023, "6.1.155-176.282.amzn2023.x86_64", ""),
    (UBUNTU_22, "6.8.0-1017-aws", ""),
    ('ID=ubuntu\nVERSION_ID="24.04"\n', "7.0.0-1014-aws", ""),
    ('ID=rhel\nVERSION_ID="9.5"\n', "5.14.0", ""),
    ('ID=rhel\nVERSION_ID="9.10"\n', "5.14.0", ""),  # 9.10 is newer than 9.5
    ('ID=rhel\nVERSION_ID="9.4"\n', "5.14.0", "RHEL 9.4: "),
    (UBUNTU_22, "5.15.0-1051-aws", "Ubuntu 22.04 with kernel 5.15.0-1051-aws: "),
    ('ID=ubuntu\nVERSION_ID="20.04"\n', "6.8.0", "Ubuntu 20.04 with kernel 6.8.0: "),
    ("ID='amzn'\nVERSION_ID='2'\n", "5.10.0", "Amazon Linux 2: "),
    ("ID=debian\nVERSION_ID=12\n", "6.1.0", "debian 12: "),
    ("NAME=x\n", "6.1.0", "an unknown OS : "),
])
def test_the_client_os_rule_of_the_fsx_guide(release, kernel, problem):
    found = helper.os_problem(release, kernel)
    if not problem:
        assert found == ""
    else:
        assert found == problem + helper.CLIENT_OS_RULE


def test_versions_compare_their_numbers():
    assert helper.version_ge("6.8.0", "6.8") and helper.version_ge("22.04", "22.04")
    assert not helper.version_ge("", "9.5") and not helper.version_ge("6.7.12", "6.8")
    assert helper.numbers("6.8.0-1017-aws") == [6, 8, 0, 1017]


def test_only_amazon_linux_2023_gets_its_client_installed():
    assert helper.is_al2023(AL2023)
    assert not helper.is_al2023(UBUNTU_22) and not helper.is_al2023('ID=amzn\nVERSION_ID="2"\n')


# --- the EFA devices --------------------------------------------------------------------------

def test_efa_devices_are_those_whose_driver_is_efa_in_version_order(tmp_path):
    fake_node(tmp_path, devices=tuple(reversed(EFA_DEVICES)))
    assert helper.efa_devices(str(tmp_path / "sys/class/infiniband")) == list(EFA_DEVICES)
    assert helper.efa_devices(str(tmp_path / "nowhere")) == []


@pytest.mark.parametrize("n, chosen", [
    (1, ["rdmap16s0"]),
    (2, ["rdmap16s0", "rdmap128s0"]),  # the first and the last, as the EKS guide's example
    (3, ["rdmap16s0", "rdmap64s0", "rdmap128s0"]),
    (8, list(EFA_DEVICES)),
    (9, list(EFA_DEVICES)),
])
def test_pick_keeps_the_first_and_the_last_and_spreads_between(n, chosen):
    assert helper.pick(n, list(EFA_DEVICES)) == chosen
    assert len(set(helper.pick(n, list(EFA_DEVICES)))) == len(chosen)


def test_the_tcp_interface_is_the_default_routes():
    assert helper.route_interface(ROUTE) == "ens5"
    assert helper.route_interface("") == "" and helper.route_interface("default dev") == ""


def test_configure_plan_gives_the_tcp_interface_and_the_devices(tmp_path):
    fake_node(tmp_path)
    assert helper.configure_plan(str(tmp_path), 2, "6.8.0-1017-aws", True, ROUTE) == (
        "ens5", [EFA_DEVICES[0], EFA_DEVICES[-1]])


@pytest.mark.parametrize("node, n, kefalnd, route, cause, says", [
    ({"os_release": 'ID=rhel\nVERSION_ID="9.4"\n'}, 2, False, "", "os", "RHEL 9.4"),
    ({"devices": ()}, 2, False, "", "no-efa-device", "no EFA device under /sys/class/infiniband"),
    ({}, 9, True, ROUTE, "no-efa-device", "8 EFA device(s) (rdmap16s0 "),
    ({}, 2, False, "", "no-kefalnd", "no kefalnd kernel module (modinfo kefalnd) for kernel 6.8"),
    ({}, 2, True, "", "network", "no default route (ip route show default)"),
])
def test_configure_plan_refuses_with_the_first_cause(tmp_path, node, n, kefalnd, route, cause,
                                                     says):
    """In the script's order: the OS, the devices, kefalnd, the default route."""
    fake_node(tmp_path, **node)
    with pytest.raises(helper.Refused) as refused:
        helper.configure_plan(str(tmp_path), n, "6.8.0-1017-aws", kefalnd, route)
    assert refused.value.cause == cause and refused.value.message.startswith(says)


def test_an_unreadable_os_release_is_an_os_cause(tmp_path):
    with pytest.raises(helper.Refused, match="os cannot read /etc/os-release"):
        helper.configure_plan(str(tmp_path), 1, "6.8.0", True, ROUTE)


# --- lnetctl and /proc/mounts -----------------------------------------------------------------

def test_lnetctl_net_show_is_parsed_per_ni():
    assert helper.net_interfaces(EFA_SHOW) == ["rdmap16s0", "rdmap128s0"]
    assert helper.nis_up(EFA_SHOW) == 1
    assert helper.received(EFA_SHOW) == 70 - 2 + 30  # summed over both NIs, drops not counted
    assert helper.net_interfaces("") == [] and helper.received("") == 0


def test_lustre_mounts_in_proc_mounts_order():
    mounts = ("proc /proc proc rw 0 0\nfs@tcp:/a /fsx lustre rw 0 0\n"
              "fs@tcp:/b /var/lib/kubelet/x/globalmount lustre rw 0 0\n")
    assert helper.lustre_mounts(mounts) == ["/fsx", "/var/lib/kubelet/x/globalmount"]
    assert helper.lustre_mounts("proc /proc proc rw 0 0\n") == []


def show(net: str, *interfaces: str) -> str:
    """``lnetctl net show --net NET`` with one NI per interface."""
    return "net:\n    - net type: " + net + "\n      local NI(s):\n" + "".join(
        f"        - nid: 10.0.{n}.20@{net}\n          status: up\n          interfaces:\n"
        f"              0: {i}\n" for n, i in enumerate(interfaces))


CHOSEN = [EFA_DEVICES[0], EFA_DEVICES[-1]]


def test_ni_plan_of_a_fresh_node_follows_the_eks_guide():
    assert helper.ni_plan(2, "ens5", CHOSEN, "", "", "", "") == [
        "try net del --net tcp", "run net add --net tcp --if ens5",
        f"run net add --net efa --if {CHOSEN[0]} --peer-credits 32",
        f"run net add --net efa --if {CHOSEN[1]} --peer-credits 32",
        "run set discovery 1", "run udsp add --src efa --priority 0"]


def test_ni_plan_keeps_what_is_there():
    assert helper.ni_plan(2, "ens5", CHOSEN, "/fsx", show("tcp", "ens5"), show("efa", *CHOSEN),
                          "udsp:\n    - idx: 0\n      src: efa\n") == ["run set discovery 1"]


def test_ni_plan_removes_an_ni_only_without_a_mount():
    current = show("efa", *CHOSEN)
    assert helper.ni_plan(1, "ens5", CHOSEN[:1], "", show("tcp", "ens5"), current, "")[0] == (
        f"run net del --net efa --if {CHOSEN[1]}")
    plan = helper.ni_plan(1, "ens5", CHOSEN[:1], "/fsx", show("tcp", "ens5"), current, "")
    assert plan == [f"die mounted LNet would have to remove the EFA NI on {CHOSEN[1]} (1 wanted: "
                    f"{CHOSEN[0]}) while Lustre is mounted at /fsx (/proc/mounts): removing a NI "
                    "under a mounted file system cuts its traffic; unmount it (or reboot) and "
                    "rerun", f"run net del --net efa --if {CHOSEN[1]}",
                    "run set discovery 1", "run udsp add --src efa --priority 0"]


def test_ni_plan_moves_the_tcp_ni_to_the_default_route_unless_mounted():
    plan = helper.ni_plan(2, "ens5", CHOSEN, "/fsx", show("tcp", "eth0"), show("efa", *CHOSEN),
                          "")
    assert plan[0].startswith("die mounted LNet would have to remove the tcp NI on eth0 (the "
                              "default route is on ens5) while Lustre is mounted at /fsx")
    plan = helper.ni_plan(2, "ens5", CHOSEN, "", show("tcp", "eth0"), show("efa", *CHOSEN), "")
    assert plan[:2] == ["try net del --net tcp", "run net add --net tcp --if ens5"]


# --- the check ----------------------------------------------------------------------------------

@pytest.mark.parametrize("efa, tcp, over_efa", [
    (64, 1, True), (32, 1, True),  # at least MiB/2 messages on EFA, more than on tcp
    (31, 1, False),  # fewer than MiB/2
    (32, 32, False), (0, 65, False),  # not more than tcp
])
def test_the_verdict_needs_half_the_mib_on_efa_and_more_than_tcp(efa, tcp, over_efa):
    ok, line = helper.check_verdict(64, efa, tcp, 2, "/fsx")
    assert ok is over_efa
    assert line == (f"lustre-efa check: {'efa' if over_efa else 'tcp'} (efa +{efa}, tcp +{tcp} "
                    "LNet messages received while reading 64 MiB with direct I/O from /fsx, "
                    "2 EFA NI(s))")


# --- the units ----------------------------------------------------------------------------------

def settings(unit: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in unit.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


def test_the_boot_unit_ends_active_or_failed_within_the_bound():
    unit = settings(helper.boot_unit("/usr/local/sbin/trn-lustre-efa", 2))
    assert unit["ExecStart"] == ["/usr/local/sbin/trn-lustre-efa configure --interfaces 2"]
    assert unit["Before"] == ["remote-fs-pre.target", "kubelet.service nodeadm-run.service"]
    attempt = helper.UNIT_ATTEMPT_S + helper.UNIT_RESTART_S
    assert unit["StartLimitBurst"] == [str(helper.UNIT_BURST)]
    assert helper.UNIT_BURST * attempt < helper.UNIT_INTERVAL_S  # the next start is refused
    assert helper.UNIT_BURST * attempt == 550


def test_the_watcher_runs_watch_after_the_boot_unit():
    unit = settings(helper.watch_unit("/x", "trn-lustre-efa.service", ["--mode", "required"]))
    assert unit["ExecStart"] == ["/x watch --mode required"]
    assert unit["After"] == ["network-online.target trn-lustre-efa.service"]
    assert unit["Type"] == ["exec"]


# --- what a failure means -------------------------------------------------------------------------

UNIT = "trn-lustre-efa.service"


@pytest.mark.parametrize("mode, event, status, output, value, exit_status, says", [
    ("required", "check", 0, "", 1, 0, ""),
    ("preferred", "check", 3, "", 0, 0, "WARNING: this node's Lustre traffic does not go over"),
    ("required", "check", 3, "", 0, 1, "ERROR: FSx for Lustre over EFA is required (fsx.efa: "
                                       "true) and this node's Lustre traffic does not go over"),
    ("required", "check", 1, "x ERROR (check): no probe", None, 1,
     "ERROR: the check of FSx for Lustre over EFA failed ((check): no probe); nothing reported"),
    ("preferred", "unit-failed", 0, "", 0, 0, f"WARNING: {UNIT} failed"),
    ("required", "unit-failed", 0, "", 0, 1, f"ERROR: FSx for Lustre over EFA is required "
                                             f"(fsx.efa: true) and {UNIT} failed"),
    ("required", "configure-failed", 1, "a\nb ERROR (no-efa-device): none", 0, 1,
     "ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and LNet could not be "
     "configured for EFA: (no-efa-device): none"),
    ("preferred", "configure-failed", 2, "no cause", 0, 4, "WARNING: LNet could not be "
     "configured for EFA ((configure): exit 2 without a named cause (above)); Lustre is not"),
    ("preferred", "install-failed", 1, "ERROR (install): x", 0, 4,
     "WARNING: LNet is configured for EFA, but its boot unit or the watcher could not be "
     "installed, so the next boot and the check are not covered ((install): x)"),
])
def test_each_outcome_in_each_mode(mode, event, status, output, value, exit_status, says):
    found = helper.outcome(mode, event, status, output, UNIT)
    assert found[:2] == (value, exit_status)
    assert found[2].startswith(says) if says else found[2] == ""
    if event in ("check", "unit-failed") and value == 0:
        assert found[2].endswith(helper.TCP_CAUSES) == (event == "check" or mode == "required")


# --- the command line ------------------------------------------------------------------------------

def run(*args: str, stdin: str = "", python: str = sys.executable) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-I", "-S", str(HELPER), *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_the_command_line_prints_and_exits_as_the_script_reads_it(tmp_path):
    fake_node(tmp_path)
    plan = run("configure-plan", str(tmp_path), "2", "6.8.0-1017-aws", "yes", stdin=ROUTE)
    assert (plan.returncode, plan.stdout) == (0, f"ens5\n{EFA_DEVICES[0]} {EFA_DEVICES[-1]}\n")
    refused = run("configure-plan", str(tmp_path), "2", "6.8.0-1017-aws", "no", stdin=ROUTE)
    assert refused.returncode == 1 and refused.stdout.startswith("no-kefalnd no kefalnd ")
    assert run("verdict", "64", "/fsx", "2", "0", "0", "64", "1").returncode == 0
    assert run("verdict", "64", "/fsx", "2", "0", "0", "0", "65").returncode == 3
    outcome = run("outcome", "preferred", "check", "3", UNIT, stdin="out\n")
    assert outcome.stdout.startswith("0 0\nWARNING: ")
    assert run("outcome", "required", "check", "0", UNIT).stdout == "1 0\n"
    assert run("up", stdin=EFA_SHOW).stdout == "1\n"


@pytest.mark.parametrize("args", [[], ["nope"], ["verdict", "x"], ["boot-unit", "/x"]])
def test_a_command_line_it_does_not_take_is_a_usage_error(args):
    done = run(*args)
    assert done.returncode == 2 and done.stdout.startswith("usage lustre_efa.py")


def test_every_command_runs_on_python_3_9(tmp_path):
    python = python39()
    if python is None:
        pytest.skip("no Python 3.9 interpreter here")
    fake_node(tmp_path)
    (tmp_path / "mounts").write_text("fs@tcp:/a /fsx lustre rw 0 0\n")
    for args, stdin, status in (
            (["configure-plan", str(tmp_path), "2", "6.8.0-1017-aws", "yes"], ROUTE, 0),
            (["ni-plan", "2", "ens5", "a b", "", "", "", ""], "", 0),
            (["up"], EFA_SHOW, 0), (["interfaces"], EFA_SHOW, 0), (["received"], EFA_SHOW, 0),
            (["lustre-mount", str(tmp_path / "mounts")], "", 0),
            (["is-lustre-mount", str(tmp_path / "mounts"), "/fsx"], "", 0),
            (["is-al2023", str(tmp_path / "etc/os-release")], "", 1),
            (["verdict", "64", "/fsx", "2", "0", "0", "64", "1"], "", 0),
            (["boot-unit", "/x", "2"], "", 0), (["watch-unit", "/x", UNIT, "--mode", "m"], "", 0),
            (["outcome", "required", "install-failed", "1", UNIT], "ERROR (install): x", 0)):
        done = run(*args, stdin=stdin, python=python)
        assert done.returncode == status, (args, done.stdout, done.stderr)
        assert done.stdout == run(*args, stdin=stdin).stdout, args
