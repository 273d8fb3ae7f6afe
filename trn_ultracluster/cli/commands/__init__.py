"""The job CLI's commands, one function per command (``args`` in, exit status out).

:mod:`trn_ultracluster.cli.main` parses the command line and calls them; they raise
:class:`~trn_ultracluster.cli.errors.CliError` for every failure they know about. Anything
that depends on the orchestrator goes through the stack's job backend
(:mod:`trn_ultracluster.cli.backends`).
"""
