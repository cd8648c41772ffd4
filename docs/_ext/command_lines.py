"""An mkdocs hook: a line `<!-- options: keras_luong.<command> -->` on a page becomes the table of
that command line's options, read from its parser (`build_parser()`) when the site is built, so
that the page says what `--help` says."""

import argparse
import importlib
import re

MARKER = re.compile(r"^<!-- options: (keras_luong\.\w+) -->$", re.MULTILINE)


def options_table(module_name):
    """The markdown table of the options of `python -m <module_name>`: each option with its
    value's name or choices, whether it is required, its default and its help."""
    parser = importlib.import_module(module_name).build_parser()
    rows = ["| option | default | what it does |", "| --- | --- | --- |"]
    for action in parser._actions:  # argparse's list of the arguments, help first
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(f"`{name}`" for name in action.option_strings)
        if action.nargs != 0:  # an option that takes a value
            count = action.nargs if isinstance(action.nargs, int) else 1
            if action.choices is not None:
                values = ["{" + ",".join(str(choice) for choice in action.choices) + "}"]
            elif isinstance(action.metavar, tuple):
                values = list(action.metavar)
            else:
                values = [action.metavar or action.dest.upper()] * count
            names += " " + " ".join(f"`{value}`" for value in values)
            if action.nargs in ("+", "*"):
                names += " ..."
        default = "required" if action.required else ""
        if not action.required and action.nargs != 0 and action.default is not None:
            value = action.default
            if isinstance(value, (list, tuple)):
                value = " ".join(str(v) for v in value)
            default = f"`{value}`"
        rows.append(f"| {names} | {default} | {cell(action.help or '')} |")
    return "\n".join(rows)


def cell(text):
    """`text` in a table cell: its pipes escaped, so that `a|b` stays one cell, and its angle
    brackets, so that `score<TAB>translation` is not read as a tag."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def on_page_markdown(markdown, **kwargs):
    return MARKER.sub(lambda match: options_table(match.group(1)), markdown)
