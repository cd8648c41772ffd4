"""Teaches mkdocstrings (through griffe) the Keras docstring style.

Keras writes its docstrings in a Google-like style with two differences the Google parser
does not know: a `Call arguments:` section (the arguments of `__call__`, listed like
`Args:`), and an `Example:` section whose `>>>` lines are not indented under the title.
Read as Google style, the first renders as one paragraph of run-together arguments and the
second as nested blockquotes of plain text. This extension rewrites those two sections into
their Google spelling as each object is loaded, before its docstring is parsed, so that they
render as a parameter list titled "Call arguments" and as highlighted code. The docstrings
themselves stay in Keras' style (and `tests/docstring_test.py` runs their examples).
"""

import re

import griffe

# A `Call arguments:` title on a line of its own (at the docstring's own indentation).
CALL_ARGUMENTS = re.compile(r"^Call arguments:$", re.M)
# An `Example:` / `Examples:` title, a blank line, then lines flush with the title (prose
# and `>>>` code): the section runs until the next title (`Word words:` alone on a line) or
# the end.
EXAMPLE = re.compile(
    r"^Examples?:\n\n(?P<body>(?:(?![A-Z][\w ]*:\n).*\n?)*)",
    re.M,
)


def keras_to_google(text):
    """The docstring `text` (dedented) with Keras' two sections spelled the Google way."""
    text = CALL_ARGUMENTS.sub("Other Parameters: Call arguments:", text)

    def indent(match):
        body = match.group("body")
        if ">>>" not in body or body.startswith(" "):
            return match.group(0)  # already indented, or no code: leave it to the parser
        trailing = body[len(body.rstrip("\n")) :]
        lines = body.rstrip("\n").split("\n")
        return (
            "Examples:\n" + "\n".join("    " + line if line else line for line in lines) + trailing
        )

    return EXAMPLE.sub(indent, text)


class KerasDocstrings(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = keras_to_google(obj.docstring.value)
