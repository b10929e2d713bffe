"""A stage option, declared once: :class:`Option` holds its flag, dest, type, choices, range,
metavar and help. A command module's ``OPTIONS`` table of them generates its argparse arguments
and ``--help`` (:func:`add_options`), and the pipeline's up-front check reads the same table to
check a pipeline file's values (:meth:`Option.check`): type and choices as the parser has them,
and the range, which argparse does not know.

The argparse default is None unless said otherwise, so that ``--pipeline`` can fill an option
not given on the command line; the real default is the stage's (its ``run``'s keyword default,
or its options dataclass's field), and the help text says it.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from wsod.utils.names import near_match

# argparse actions that take no value (a pipeline gives them True or False)
FLAG_ACTIONS = ("store_true", "store_false", "store_const")
NUMBER_TYPES = (int, float)


@dataclasses.dataclass(frozen=True)
class Option:
    """One ``--flag`` of a stage: argparse's keywords, plus ``low``/``high`` (an inclusive
    range of a number, None = open on that side) and ``group`` (the title of the argument
    group it is listed under in ``--help``; None: the parser's options).

    ``dest`` defaults to the flag without its dashes, dashes as underscores (argparse's rule):
    it is the option's name, its ``run`` keyword and its key in a pipeline's stage section.
    """

    flag: str
    help: str
    dest: str = ""
    type: Callable | None = None
    choices: Sequence | None = None
    low: float | None = None
    high: float | None = None
    metavar: str | None = None
    nargs: str | int | None = None
    action: str | None = None
    const: Any = None
    default: Any = None
    group: str | None = None

    def __post_init__(self) -> None:
        if not self.flag.startswith("--"):
            raise ValueError(f"Option {self.flag!r}: a long flag (--name) is wanted")
        if not self.dest:
            object.__setattr__(self, "dest", self.flag[2:].replace("-", "_"))
        ranged = self.low is not None or self.high is not None
        if ranged and self.type not in NUMBER_TYPES:
            raise ValueError(f"Option {self.flag}: a range wants type int or float")

    @property
    def is_flag(self) -> bool:
        """Whether the option takes no value (``store_true``, ``store_const``, ...)."""
        return self.action in FLAG_ACTIONS

    @property
    def is_many(self) -> bool:
        """Whether the option holds a list (``nargs='+'``/``'*'``, or ``action='append'``)."""
        return self.nargs in ("+", "*") or self.action == "append"

    def argparse_kwargs(self) -> dict:
        """The keywords of ``parser.add_argument(self.flag, ...)`` (those argparse's action
        accepts: the ones given, and always ``dest``, ``default`` and ``help``)."""
        given = {
            "action": self.action,
            "type": self.type,
            "choices": self.choices,
            "metavar": self.metavar,
            "nargs": self.nargs,
            "const": self.const,
        }
        kwargs = {k: v for k, v in given.items() if v is not None}
        return {**kwargs, "dest": self.dest, "default": self.default, "help": self.help}

    def range_text(self) -> str:
        """The range in words (``>= 1``, ``from 0 to 1``, ``<= 5``); empty when open."""
        if self.low is not None and self.high is not None:
            return f"from {self.low} to {self.high}"
        if self.low is not None:
            return f">= {self.low}"
        return f"<= {self.high}" if self.high is not None else ""

    def check(self, value: Any, where: str) -> None:
        """A pipeline's value of this option, as the parser would take it from the command
        line (its ``choices`` and ``type``, each item of a list option), and its range; a flag
        wants True or False (or 1 or 0), a value outside ``choices`` gets the nearest one as a
        hint (:func:`wsod.utils.names.near_match`). None passes (the option is not given).

        Args:
            value: the value.
            where: the start of the error message (the file, the stage, the key, the value).

        Raises:
            ValueError: ``where``, then what the option wants.
        """
        if value is None:
            return
        if self.is_flag:
            if not (isinstance(value, bool) or value in (0, 1)):
                raise ValueError(f"{where}: want True or False")
            return
        many = self.is_many and isinstance(value, list | tuple)
        for item in value if many else [value]:
            self._check_item(item, where)

    def _check_item(self, item: Any, where: str) -> None:
        if self.choices is not None and item not in self.choices:
            hint = near_match(str(item), [str(c) for c in self.choices])
            raise ValueError(f"{where}: not one of {', '.join(map(str, self.choices))}{hint}")
        if self.type not in NUMBER_TYPES:
            return
        want = (int,) if self.type is int else (int, float)
        if isinstance(item, bool) or not isinstance(item, want):
            raise ValueError(
                f"{where}: want {'a whole number' if self.type is int else 'a number'}"
            )
        below = self.low is not None and item < self.low
        if below or (self.high is not None and item > self.high):
            raise ValueError(f"{where}: want a value {self.range_text()}")


def add_options(parser: argparse.ArgumentParser, options: Iterable[Option]) -> None:
    """Add ``options`` to ``parser`` in their order; an option with a ``group`` goes into the
    argument group of that title (made at its first option)."""
    groups: dict[str, Any] = {}
    for option in options:
        target: Any = parser
        if option.group is not None:
            if option.group not in groups:
                groups[option.group] = parser.add_argument_group(option.group)
            target = groups[option.group]
        target.add_argument(option.flag, **option.argparse_kwargs())


def by_dest(options: Iterable[Option]) -> dict[str, Option]:
    """``{dest: option}`` in declaration order; of two flags with one dest (``--rescore`` and
    ``--no-rescore``) the first is the one that takes a value, and is kept."""
    table: dict[str, Option] = {}
    for option in options:
        table.setdefault(option.dest, option)
    return table
