"""Argument types shared by every subcommand: numbers in plain ASCII digits only.

Python's int() and float() also take '٤', '４', '1_000', 'nan' and 'inf', which a user never means
on a command line; these refuse them with a message saying what to write instead.
"""

from __future__ import annotations

import argparse
import re

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
# what the parsers read as a negative value rather than an option: exponents too, and -inf / -nan so
# that the number types say what to write instead
NEGATIVE_NUMBER = re.compile(r"^-([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


def ascii_int(text: str) -> int:
    if not _INT.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number written in ASCII digits, such as 8")
    if len(text.strip()) > 30:  # Python refuses past 4,300 digits, with a message about its own limit
        raise argparse.ArgumentTypeError(f"{text.strip()[:12]}… has {len(text.strip()):,} digits: far past every bound")
    return int(text)


def ascii_float(text: str) -> float:
    if not _FLOAT.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number written in ASCII digits, such as 1.5")
    return float(text)


def ascii_ints(text: str, what: str = "whole numbers separated by commas, e.g. 4,8", flag: str = "") -> list[int]:
    """A comma-separated list of ASCII whole numbers (empty items skipped)."""
    try:
        return [ascii_int(x) for x in text.split(",") if x.strip()]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{flag + ' ' if flag else ''}wants {what} (got {text!r})") from None


NUMBER_TYPES = {int: ascii_int, float: ascii_float}
