"""One module per subcommand: ``HELP``, ``EXAMPLES``, ``add_arguments(parser)`` and
``execute(args)``, which unpacks the arguments into ``wsod.stages.<stage>.run``.

Options default to ``None`` so that ``--pipeline`` can fill them; the real defaults are the
keyword defaults of ``run``.
"""


def kwargs_of(args, *names: str) -> dict:
    """The named options that were given (not None), as keyword arguments for ``run``."""
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
